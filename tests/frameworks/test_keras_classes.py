"""Custom Keras layer classes: their modules imported for a trusted `.keras` file (installed first, else from the
model's own folder, nowhere else), nothing imported without --trust-code, and the missing class named.

The import rules are checked in this process on `.keras` zips written by hand (config.json only) whose modules
do not import Keras; TensorFlow/Keras do not share the tests' process, so the tests with a real Keras layer run
a script in a process of their own."""

from __future__ import annotations

import json
import subprocess
import sys
import zipfile
from pathlib import Path

import pytest

from rosetta.errors import RosettaError, UntrustedModel
from rosetta.frameworks import keras_classes
from rosetta.frameworks.keras_classes import import_layer_modules, layer_classes, missing_class_error, model_folder

ROOT = Path(__file__).resolve().parents[2]


def layer(module: str, name: str, **config) -> dict:
    return {"module": module, "class_name": name, "config": {"name": name.lower(), **config},
            "registered_name": f"rosetta_tests>{name}"}


def functional(*layers: dict) -> dict:
    return {"module": "keras.src.models.functional", "class_name": "Functional", "registered_name": "Functional",
            "config": {"name": "f", "layers": [{"module": "keras.layers", "class_name": "InputLayer",
                                                "config": {}, "registered_name": None}, *layers]}}


def keras_file(folder: Path, config: dict, name: str = "model.keras") -> Path:
    folder.mkdir(parents=True, exist_ok=True)
    path = folder / name
    with zipfile.ZipFile(path, "w") as archive:
        archive.writestr("config.json", json.dumps(config))
        archive.writestr("metadata.json", json.dumps({"keras_version": "3.15.0"}))
    return path


def marking_module(folder: Path, module: str, marker: Path) -> None:
    """A module that leaves `marker` when it is imported (it runs the model's code)."""
    (folder / f"{module}.py").write_text(f"from pathlib import Path\nPath({str(marker)!r}).write_text(__file__)\n")


@pytest.fixture
def module_name(request):
    """A module name of this test's own, out of sys.modules and rosetta's record afterwards."""
    name = f"rosetta_kc_{request.node.name.replace('[', '_').replace(']', '_').replace('-', '_')}"
    yield name
    for loaded in [loaded for loaded in sys.modules if loaded == name or loaded.startswith(name + ".")]:
        del sys.modules[loaded]
    for loaded in [loaded for loaded in keras_classes._FROM_FOLDER if loaded.split(".")[0] == name]:
        del keras_classes._FROM_FOLDER[loaded]


def test_every_custom_class_is_collected_nested_layers_sublayers_and_functional_in_functional(tmp_path):
    inner = functional(layer("inner_layers", "PositionEmbedding"))
    block = layer("blocks", "EncoderBlock", sublayer=layer("blocks.parts", "Attention"),
                  activation={"module": "activations_of_mine", "class_name": "function", "config": "gelu2",
                              "registered_name": "mine>gelu2"})
    path = keras_file(tmp_path, functional(block, inner, layer("keras.layers", "Dense"), layer("keras_hub.x", "Y")))
    assert [(entry.module, entry.class_name) for entry in layer_classes(path)] == [
        ("blocks", "EncoderBlock"), ("blocks.parts", "Attention"), ("activations_of_mine", "function"),
        ("inner_layers", "PositionEmbedding")]


def test_without_trust_code_nothing_is_imported(tmp_path, module_name):
    marker = tmp_path / "imported"
    marking_module(tmp_path, module_name, marker)
    path = keras_file(tmp_path, functional(layer(module_name, "EncoderBlock")))
    assert import_layer_modules(path, trust_code=False) == []
    assert not marker.exists() and module_name not in sys.modules


def test_with_trust_code_the_module_beside_the_file_is_imported_and_the_folder_left_off_sys_path(tmp_path,
                                                                                                 module_name):
    marker = tmp_path / "imported"
    marking_module(tmp_path, module_name, marker)
    path = keras_file(tmp_path, functional(functional(layer(module_name, "EncoderBlock"))))
    before = list(sys.path)
    assert import_layer_modules(path, trust_code=True) == [module_name]
    assert marker.read_text() == str(tmp_path / f"{module_name}.py") and module_name in sys.modules
    assert sys.path == before
    marker.unlink()
    assert import_layer_modules(path, trust_code=True) == [module_name] and not marker.exists()  # once


def test_a_package_folder_beside_the_file_is_imported(tmp_path, module_name):
    marker = tmp_path / "imported"
    (tmp_path / module_name).mkdir()
    (tmp_path / module_name / "__init__.py").write_text("")
    marking_module(tmp_path / module_name, "layers", marker)
    path = keras_file(tmp_path, functional(layer(f"{module_name}.layers", "EncoderBlock")))
    assert import_layer_modules(path, trust_code=True) == [f"{module_name}.layers"]
    assert marker.read_text() == str(tmp_path / module_name / "layers.py")


def test_an_installed_module_comes_before_a_file_of_that_name_in_the_folder(tmp_path):
    marker = tmp_path / "imported"
    marking_module(tmp_path, "colorsys", marker)  # a standard-library module: installed
    path = keras_file(tmp_path, functional(layer("colorsys", "EncoderBlock")))
    assert import_layer_modules(path, trust_code=True) == ["colorsys"]
    assert not marker.exists() and not sys.modules["colorsys"].__file__.startswith(str(tmp_path))


def test_a_module_nowhere_is_left_for_the_load_to_report(tmp_path, module_name):
    path = keras_file(tmp_path, functional(layer(module_name, "EncoderBlock"), layer("__main__", "Local")))
    assert import_layer_modules(path, trust_code=True) == []


@pytest.mark.parametrize("name", ["../evil", "..evil", "evil/../../evil", "/ABSOLUTE/evil", "~/evil", "import"])
def test_a_module_name_that_would_resolve_outside_the_folder_is_refused(tmp_path, name):
    marker = tmp_path / "imported"
    marking_module(tmp_path, "evil", marker)  # outside the model's folder
    name = name.replace("/ABSOLUTE", str(tmp_path))
    path = keras_file(tmp_path / "model", functional(layer(name, "EncoderBlock")))
    with pytest.raises(RosettaError, match="not a Python module name: refused"):
        import_layer_modules(path, trust_code=True)
    assert not marker.exists()
    assert import_layer_modules(path, trust_code=False) == []


def test_a_link_out_of_the_folder_is_refused(tmp_path, module_name):
    marker = tmp_path / "imported"
    marking_module(tmp_path, "outside", marker)
    (tmp_path / "model").mkdir()
    (tmp_path / "model" / f"{module_name}.py").symlink_to(tmp_path / "outside.py")
    path = keras_file(tmp_path / "model", functional(layer(module_name, "EncoderBlock")))
    with pytest.raises(RosettaError, match="outside the model's folder: refused"):
        import_layer_modules(path, trust_code=True)
    assert not marker.exists() and module_name not in sys.modules


def test_a_module_that_raises_is_one_line(tmp_path, module_name):
    (tmp_path / f"{module_name}.py").write_text("import a_package_nobody_installed\n")
    path = keras_file(tmp_path, functional(layer(module_name, "EncoderBlock")))
    with pytest.raises(RosettaError, match=f"importing module {module_name}, which defines layer classes of "
                                           "model.keras, failed .ModuleNotFoundError: No module named "
                                           "'a_package_nobody_installed'"):
        import_layer_modules(path, trust_code=True)


def test_the_copy_rosetta_staged_looks_in_the_users_folder(tmp_path):
    path = keras_file(tmp_path / "user", functional())
    staged = keras_file(tmp_path / "staging", functional())
    (tmp_path / "staging" / "manifest.json").write_text(json.dumps(
        {"artifact": "model.keras", "format": "keras", "source": {"path": str(path), "sha256": ""}}))
    assert model_folder(staged) == tmp_path / "user" and model_folder(path) == tmp_path / "user"


KERAS_ERROR = ("<class 'keras.src.models.functional.Functional'> could not be deserialized properly. Please ensure "
               "that components ...\n\nException encountered: Could not locate class 'EncoderBlock'. Make sure "
               "custom classes and functions are decorated with ...")


def test_the_missing_class_and_what_trust_code_would_import_are_named(tmp_path, module_name):
    (tmp_path / f"{module_name}.py").write_text("")
    path = keras_file(tmp_path, functional(layer(module_name, "EncoderBlock")))
    error = missing_class_error(path, TypeError(KERAS_ERROR), trust_code=False)
    assert isinstance(error, UntrustedModel)
    assert str(error) == (f"model.keras: Keras could not locate class 'EncoderBlock' (registered as "
                          f"'rosetta_tests>EncoderBlock') of module {module_name}; trust_code=True would import module "
                          f"{module_name} from {tmp_path / module_name}.py: pass it if you trust the model")
    assert str(missing_class_error(path, TypeError(KERAS_ERROR), trust_code=True)).endswith(
        f"module {module_name} was imported but does not register it; decorate the class with "
        "@keras.saving.register_keras_serializable()")
    (tmp_path / f"{module_name}.py").unlink()
    assert str(missing_class_error(path, TypeError(KERAS_ERROR), trust_code=True)).endswith(
        f"of module {module_name}, which is neither installed nor a file in the model's folder {tmp_path}: put "
        f"{module_name}.py beside the model or install it")


def test_a_class_of_the_saving_script_is_named_so(tmp_path):
    path = keras_file(tmp_path, functional(layer("__main__", "EncoderBlock")))
    assert "defined in the script that saved the model" in str(missing_class_error(path, TypeError(KERAS_ERROR),
                                                                                   trust_code=True))


LAYERS = '''
import keras

@keras.saving.register_keras_serializable(package="rosetta_tests")
class PositionEmbedding(keras.layers.Layer):
    def __init__(self, scale=0.5, **kwargs):
        super().__init__(**kwargs)
        self.scale = scale
    def call(self, x):
        return x * self.scale + 1.0
    def get_config(self):
        return {**super().get_config(), "scale": self.scale}

@keras.saving.register_keras_serializable(package="rosetta_tests")
class EncoderBlock(keras.layers.Layer):
    def __init__(self, units=4, **kwargs):
        super().__init__(**kwargs)
        self.units = units
        self.dense = keras.layers.Dense(units, name="proj")
        self.position = PositionEmbedding(name="pos")
    def call(self, x):
        return self.position(self.dense(x))
    def get_config(self):
        return {**super().get_config(), "units": self.units}
'''

SAVE = '''
import os, sys
os.environ["TF_CPP_MIN_LOG_LEVEL"] = "3"
sys.path.insert(0, sys.argv[1])
import keras
from unaligned_layers import EncoderBlock, PositionEmbedding
inner_in = keras.Input((4,), name="i")
inner = keras.Model(inner_in, PositionEmbedding(name="pe")(inner_in), name="inner")
x = keras.Input((3,), name="x")
keras.Model(x, keras.layers.Dense(2, name="out")(inner(EncoderBlock(units=4, name="block")(x)))).save(
    os.path.join(sys.argv[1], "model.keras"))
'''

LOAD = '''
import json, os, sys
from pathlib import Path
os.environ["TF_CPP_MIN_LOG_LEVEL"] = "3"
import keras
from rosetta.frameworks.keras_classes import import_layer_modules, missing_class_error
path = Path(sys.argv[1]) / "model.keras"
found = {"untrusted": import_layer_modules(path, False), "imported_untrusted": "unaligned_layers" in sys.modules}
try:
    keras.saving.load_model(str(path), compile=False, safe_mode=True)
except Exception as error:
    found["error"] = str(missing_class_error(path, error, False))
found["trusted"] = import_layer_modules(path, True)
model = keras.saving.load_model(str(path), compile=False, safe_mode=False)
found["layers"] = [type(layer).__name__ for layer in model.layers]
print(json.dumps(found))
'''


@pytest.fixture(scope="module")
def saved_model(tmp_path_factory) -> Path:
    """model.keras with a registered EncoderBlock and a Functional holding a PositionEmbedding, both of
    unaligned_layers.py beside it."""
    folder = tmp_path_factory.mktemp("custom_layers")
    (folder / "unaligned_layers.py").write_text(LAYERS)
    (folder / "save.py").write_text(SAVE)
    done = subprocess.run([sys.executable, "-P", str(folder / "save.py"), str(folder)], capture_output=True,
                          text=True, timeout=600)
    assert done.returncode == 0, done.stderr[-3000:]
    return folder / "model.keras"


def test_a_registered_layer_beside_the_file_loads_once_its_module_is_imported(saved_model, tmp_path):
    """`python -P` from the repository, as rosetta's workers run: the model's folder is not on sys.path."""
    (tmp_path / "load.py").write_text(LOAD)
    done = subprocess.run([sys.executable, "-P", str(tmp_path / "load.py"), str(saved_model.parent)],
                          capture_output=True, text=True, timeout=600, cwd=ROOT)
    assert done.returncode == 0, done.stderr[-3000:]
    found = json.loads(done.stdout.strip().splitlines()[-1])
    assert (found["untrusted"], found["imported_untrusted"], found["trusted"]) == ([], False, ["unaligned_layers"])
    assert found["error"] == (
        "model.keras: Keras could not locate class 'EncoderBlock' (registered as 'rosetta_tests>EncoderBlock') of "
        f"module unaligned_layers; trust_code=True would import module unaligned_layers from "
        f"{saved_model.parent / 'unaligned_layers.py'}: pass it if you trust the model")
    assert found["layers"] == ["InputLayer", "EncoderBlock", "Functional", "Dense"]


def _cli(*argv: str) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-P", "-m", "rosetta.cli", *argv, "--no-progress"], capture_output=True,
                          text=True, timeout=600, cwd=ROOT)


def test_verify_reads_a_keras_file_with_custom_layers_with_trust_code(saved_model):
    """Needs rosetta.frameworks.keras.load_keras_model to call import_layer_modules and missing_class_error."""
    done = _cli("verify", str(saved_model), str(saved_model), "--trust-code", "--input", "x:Nx3:float32")
    assert done.returncode == 0 and "PASS" in done.stdout, (done.stdout + done.stderr)[-3000:]
    refused = _cli("verify", str(saved_model), str(saved_model), "--input", "x:Nx3:float32")
    said = refused.stdout + refused.stderr
    assert refused.returncode != 0 and "Traceback" not in said, said[-3000:]
    assert ("Keras could not locate class 'EncoderBlock' (registered as 'rosetta_tests>EncoderBlock') of module "
            "unaligned_layers; --trust-code would import module unaligned_layers from "
            f"{saved_model.parent / 'unaligned_layers.py'}") in " ".join(said.split()), said[-3000:]

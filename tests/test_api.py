"""rosetta as a library (rosetta.api): the same results as the command line, models in memory, result objects,
errors a caller can catch, and rosetta.testing's assertion; the README's Python examples run here too."""

from __future__ import annotations

import io
import json
import re
import subprocess
import sys
from pathlib import Path

import numpy as np
import onnx
import pytest
import torch

import rosetta
import rosetta.testing
from tests.sources.test_user_models import files  # noqa: F401 - the users' model files, built once per run
from tests.test_cli import run_here

README = Path(__file__).resolve().parents[1] / "README.md"


def small_net(seed: int = 0) -> torch.nn.Module:
    torch.manual_seed(seed)
    return torch.nn.Sequential(torch.nn.Conv2d(3, 8, 3, padding=1), torch.nn.ReLU(), torch.nn.Flatten(),
                               torch.nn.Linear(8 * 8 * 8, 10)).eval()


def exported(module: torch.nn.Module) -> onnx.ModelProto:
    buffer = io.BytesIO()
    torch.onnx.export(module, torch.rand(2, 3, 8, 8), buffer, input_names=["image"], output_names=["logits"],
                      dynamic_axes={"image": {0: "N"}, "logits": {0: "N"}}, dynamo=False)
    return onnx.load_from_string(buffer.getvalue())


def off_by(model: onnx.ModelProto, factor: float) -> onnx.ModelProto:
    """A copy with its first weight tensor scaled: a port that got one layer slightly wrong."""
    from onnx import numpy_helper

    copy = onnx.ModelProto()
    copy.CopyFrom(model)
    weight = copy.graph.initializer[0]
    weight.CopyFrom(numpy_helper.from_array(numpy_helper.to_array(weight) * np.float32(factor), weight.name))
    return copy


@pytest.fixture(scope="module")
def onnx_files(tmp_path_factory) -> Path:
    folder = tmp_path_factory.mktemp("api")
    model = exported(small_net())
    onnx.save(model, str(folder / "model.onnx"))
    onnx.save(off_by(model, 1.01), str(folder / "wrong.onnx"))
    return folder


def comparable(payload: dict) -> dict:
    """A --json payload without what differs run to run: timings, temporary paths, tracebacks."""
    def clean(row: dict) -> dict:
        return {k: v for k, v in row.items() if k not in ("seconds", "artifact", "detail")}
    return {**payload, "results": [clean(row) for row in payload["results"]]}


@pytest.mark.parametrize("case", ["reference-model", "files", "fail", "cannot"])
def test_the_api_and_the_command_line_give_the_same_json(case, onnx_files, tmp_path):
    if case == "reference-model":
        argv, report = ["--model", "cnn", "--targets", "onnxruntime", "--batch", "2"], \
            rosetta.verify("cnn", targets="onnxruntime", batch=2)
    elif case == "cannot":
        from tests.sources.test_user_models import _single_op_model

        det = _single_op_model(tmp_path / "det.onnx", "Det")
        out = run_here("convert", det, "--to", "torch", "-o", tmp_path / "cli", "--json", tmp_path / "cli.json")
        conversion = rosetta.convert(str(det), "torch", output_dir=tmp_path / "api")
        assert conversion.report.verdict == "CANNOT" and not conversion.artifacts and out.returncode == 0
        cli = json.loads((tmp_path / "cli.json").read_text())
        assert comparable(cli)["results"] == comparable(conversion.report.to_json())["results"]
        return
    else:
        candidate = "model.onnx" if case == "files" else "wrong.onnx"
        argv = [onnx_files / "model.onnx", onnx_files / candidate]
        report = rosetta.verify(str(onnx_files / "model.onnx"), str(onnx_files / candidate))
    out = run_here("verify", *argv, "--no-progress", "--json", tmp_path / "cli.json")
    assert out.returncode == report.exit_status() == (1 if case == "fail" else 0)
    assert comparable(json.loads((tmp_path / "cli.json").read_text())) == comparable(report.to_json())


def test_in_memory_torch_and_onnx_models_verify_and_report():
    net = small_net()
    report = rosetta.verify(net, exported(net), inputs=["image:Nx3x8x8:float32"])
    assert report.passed and report.verdict == "PASS" and len(report) == 1
    row = next(iter(report))
    assert row.outputs[0].error_ratio < 10 and "(in memory)" in row.model
    assert "PASS" in str(report) and "<table>" in report._repr_html_()
    report.raise_for_verdict()


def test_arrays_as_inputs_and_several_candidates():
    net, arrays = small_net(), {"image": np.random.default_rng(0).random((3, 3, 8, 8), np.float32)}
    report = rosetta.verify(net, [exported(net), off_by(exported(net), 1.01)], inputs=arrays)
    assert [row.verdict for row in report] == ["PASS", "FAIL"] and report.verdict == "FAIL" and not report.passed
    assert report.rows[0].batch == 3
    with pytest.raises(rosetta.VerificationFailed) as failed:
        report.raise_for_verdict()
    assert failed.value.report is report and failed.value.args[0].startswith("FAIL: ")


def test_a_torch_module_can_be_the_candidate_too():
    """A port to PyTorch is compared as itself: exported by torch.export and run as a .pt2."""
    net = small_net()
    report = rosetta.verify(exported(net), net)
    assert report.passed, report.message()
    wrong = small_net(seed=1)
    assert rosetta.verify(exported(net), wrong).verdict == "FAIL"


class DictOutputs(torch.nn.Module):
    """Returns a mapping, as Hugging Face's ModelOutput and torchvision's segmentation models do, with a value
    that is not a tensor (a cache object's place)."""

    def __init__(self) -> None:
        super().__init__()
        self.net = small_net()

    def forward(self, image):
        logits = self.net(image)
        return {"logits": logits, "cache": None, "probabilities": logits.softmax(-1)}


def test_a_module_returning_a_mapping_converts_with_its_tensors_named_by_key(tmp_path):
    conversion = rosetta.convert(DictOutputs().eval(), "onnx,torch", inputs=["image:Nx3x8x8:float32"],
                                 output_dir=tmp_path / "out")
    assert conversion.passed, conversion.report.message()
    for row in conversion.report:
        assert [output.name for output in row.outputs] == ["logits", "probabilities"]
    graph = onnx.load(str(next((tmp_path / "out" / "onnx").glob("*.onnx"))))
    assert [output.name for output in graph.graph.output] == ["logits", "probabilities"]


def test_assert_same_function_passes_and_fails_with_the_layer_it_diverges_at():
    model = exported(small_net())
    rosetta.testing.assert_same_function(model, off_by(model, 1.0))
    with pytest.raises(AssertionError) as failed:
        rosetta.testing.assert_same_function(model, off_by(model, 1.01))
    message = str(failed.value)
    assert re.match(r"FAIL: .*output logits: max \|err\| \S+ > tolerance \S+ \(10.5 x noise floor\); diverges first at "
                    r"\S+ \(introduced\)", message), message


@pytest.mark.parametrize("call, error", [
    (lambda: rosetta.verify(small_net(), small_net()), rosetta.BadInput),  # a module says not its inputs
    (lambda: rosetta.verify(object(), object()), rosetta.BadInput),
    (lambda: rosetta.verify("model.pt", "model.onnx"), rosetta.RosettaError),
    (lambda: rosetta.verify(small_net(), exported(small_net()), inputs=["image:Nx3x8x8:float7"]), rosetta.BadInput),
    (lambda: rosetta.verify(exported(small_net()), exported(small_net()), tolerance=-1), rosetta.BadInput),
    (lambda: rosetta.verify(exported(small_net()), exported(small_net()), nosuch=1), rosetta.BadInput),
])
def test_bad_input_raises_a_kind_of_rosetta_error_in_one_line(call, error, tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    with pytest.raises(error) as raised:
        call()
    assert "\n" not in str(raised.value)
    assert list(tmp_path.iterdir()) == []  # nothing half-written


def test_an_untrusted_factory_is_untrusted_model(tmp_path):
    (tmp_path / "net.py").write_text("import torch\ndef build():\n    return torch.nn.Linear(4, 2)\n")
    onnx.save(exported(small_net()), str(tmp_path / "other.onnx"))
    with pytest.raises(rosetta.UntrustedModel):
        rosetta.verify(f"{tmp_path / 'net.py'}:build", str(tmp_path / "other.onnx"), inputs=["x:Nx4:float32"])


def test_the_api_never_prints(capsys, onnx_files):
    rosetta.verify(str(onnx_files / "model.onnx"), str(onnx_files / "wrong.onnx"), locate=True)
    out = capsys.readouterr()
    assert out.out == "" and out.err == ""


def test_help_documents_the_calls():
    for name in ("verify", "convert", "bench"):
        doc = getattr(rosetta, name).__doc__
        assert doc and len(doc.splitlines()) > 5
    assert set(rosetta.__all__) <= set(dir(rosetta))
    import rosetta.verify.results as results  # the subpackage is there, under the function's name

    assert callable(rosetta.verify) and results.PASS == "PASS"


KERAS_AND_GLUON = r'''
import sys
import numpy as np
kind = sys.argv[1]
import torch
import rosetta, rosetta.testing
torch.manual_seed(0)
reference = torch.nn.Sequential(torch.nn.Linear(6, 5), torch.nn.Tanh(), torch.nn.Linear(5, 3)).eval()
weights = [p.detach().numpy() for p in reference.parameters()]
if kind == "keras":
    import keras
    x = keras.Input((6,), name="x")
    h = keras.layers.Dense(5, activation="tanh", name="hidden")(x)
    port = keras.Model(x, keras.layers.Dense(3, name="out")(h))
    port.set_weights([weights[0].T, weights[1], weights[2].T, weights[3]])
    wrong = keras.models.clone_model(port)
    wrong.set_weights([weights[0].T, weights[1] * 1.01, weights[2].T, weights[3]])
else:
    from rosetta.frameworks.mxnet import import_mxnet
    mx = import_mxnet()  # MXNet 1.9 beside numpy 1.26 needs numpy's old aliases back (rosetta puts them back)
    def gluon(bias_factor):
        net = mx.gluon.nn.HybridSequential()
        net.add(mx.gluon.nn.Dense(5, activation="tanh", in_units=6), mx.gluon.nn.Dense(3, in_units=5))
        net.initialize()
        for parameter, value in zip(net.collect_params().values(), [weights[0], weights[1] * bias_factor, weights[2], weights[3]]):
            parameter.set_data(mx.nd.array(value))
        return net
    port, wrong = gluon(1.0), gluon(1.01)
rosetta.testing.assert_same_function(reference, port, inputs=["x:Nx6:float32"])
try:
    rosetta.testing.assert_same_function(reference, wrong, inputs=["x:Nx6:float32"])
except AssertionError as error:
    print("FAILED AS IT SHOULD:", error)
'''


@pytest.mark.parametrize("kind", ["keras", "gluon"])
def test_in_memory_keras_and_gluon_models_verify(kind, tmp_path):
    """In a process of their own: TensorFlow and MXNet do not share a process with the tests."""
    script = tmp_path / "port.py"
    script.write_text(KERAS_AND_GLUON)
    done = subprocess.run([sys.executable, str(script), kind], capture_output=True, text=True, timeout=600,
                          cwd=Path(__file__).resolve().parents[1])
    assert done.returncode == 0, done.stderr[-3000:]
    assert "FAILED AS IT SHOULD: FAIL:" in done.stdout, done.stdout
    # the first Linear, whose bias is off, and the port's layer beside it where its name is another
    assert "diverges first at 0 (introduced" in done.stdout, done.stdout
    if kind == "keras":
        assert "diverges first at 0 (introduced; the port's hidden)" in done.stdout, done.stdout


def readme_python_examples() -> list[str]:
    return re.findall(r"```python\n(.*?)```", README.read_text(), flags=re.S)


@pytest.mark.parametrize("number", range(len(readme_python_examples())))
def test_the_readmes_python_examples_run(number, tmp_path):
    """Each in a process of its own, in an empty folder, as a reader would paste it: they cannot rot."""
    script = tmp_path / f"example{number + 1}.py"
    script.write_text(readme_python_examples()[number])
    done = subprocess.run([sys.executable, str(script)], capture_output=True, text=True, timeout=600, cwd=tmp_path)
    assert done.returncode == 0, done.stdout[-2000:] + done.stderr[-3000:]


def test_docs_api_md_is_the_codes():
    """docs/api.md is written from the code (scripts/write_api_docs.py): a changed signature changes it."""
    sys.path.insert(0, str(README.parent / "scripts"))
    from write_api_docs import api_page

    assert (README.parent / "docs" / "api.md").read_text() == api_page()
    assert all(f"`rosetta.{name}" in api_page() for name in ("verify", "convert", "bench", "Report", "RosettaError"))


def test_a_hang_is_worker_timed_out_and_a_refusal_cannot_convert(tmp_path):
    from tests.sources.test_user_models import _single_op_model

    det = _single_op_model(tmp_path / "det.onnx", "Det")
    conversion = rosetta.convert(str(det), "torch", output_dir=tmp_path / "out")
    with pytest.raises(rosetta.CannotConvert) as refused:
        conversion.report.raise_for_verdict()
    assert "onnx2torch has no converter" in str(refused.value)

def test_a_model_that_hangs_is_worker_timed_out(files):  # noqa: F811
    with pytest.raises(rosetta.WorkerTimedOut):
        rosetta.verify(str(files / "hang.keras"), str(files / "hang.keras"), trust_code=True, timeout=5)


# ---- the API as documented --------------------------------------------------------------------------------------
def documented_names() -> list[str]:
    """Every `rosetta.NAME[.MORE]` the README and docs/api.md mention (not rosetta/paths/ nor file names)."""
    text = README.read_text() + (README.parent / "docs" / "api.md").read_text()
    found = re.findall(r"(?<![\w/.-])rosetta((?:\.[A-Za-z_]\w*)+)(?![\w/])", text)
    return sorted({"rosetta" + name for name in found})


def test_every_name_the_readme_and_docs_api_md_mention_exists():
    import pkgutil

    names = documented_names()
    assert {"rosetta.conformance", "rosetta.models", "rosetta.environment", "rosetta.list_workloads",
            "rosetta.parse_input", "rosetta.Listing", "rosetta.ConformanceRun"} <= set(names)
    import rosetta.models.registry  # noqa: F401 - the subpackage of the same name, imported: the function stays
    missing = [name for name in names if not hasattr(rosetta, name.split(".")[1])]
    assert not missing, f"documented but not attributes of rosetta: {missing}"
    for name in names:
        pkgutil.resolve_name(name)  # AttributeError or ImportError where a dotted name names nothing
    assert set(rosetta.__all__) <= set(dir(rosetta))
    assert callable(rosetta.models) and callable(rosetta.conformance) and callable(rosetta.environment)


def test_the_documented_listing_functions_work():
    listing = rosetta.models()
    assert isinstance(listing, rosetta.Listing)
    assert [model["name"] for model in listing.to_json()["models"]] == rosetta.list_models()
    assert rosetta.list_workloads() == ["cnn-train", "gru-train", "resnet50-features"]
    spec = rosetta.parse_input("image:Nx3x32x32:float32")
    assert (spec.name, spec.shape, spec.dtype) == ("image", (None, 3, 32, 32), "float32")
    assert "onnxruntime" in rosetta.list_targets()
    assert rosetta.ConformanceRun.__name__ == "ConformanceRun" and issubclass(rosetta.Unsupported, rosetta.RosettaError)


def test_import_rosetta_stays_light():
    """The public names are found lazily: `import rosetta` loads neither the API nor numpy."""
    done = subprocess.run([sys.executable, "-c", "import sys, rosetta; rosetta.BadInput; "
                           "print(sorted(m for m in sys.modules if m in ('rosetta.api', 'numpy', 'torch')))"],
                          capture_output=True, text=True, timeout=60, cwd=README.parent)
    assert done.stdout.strip() == "[]", done.stdout + done.stderr


SPEC = ["image:Nx3x8x8:float32"]


@pytest.mark.parametrize("call, names, takes", [
    (lambda m: rosetta.verify(m, m, inputs=42), "inputs", "arrays"),
    (lambda m: rosetta.verify(m, m, inputs=SPEC, batch="8"), "batch", "whole number"),
    (lambda m: rosetta.verify(m, m, inputs=SPEC, batch=-1), "batch", "1 or more"),
    (lambda m: rosetta.verify(m, m, inputs=SPEC, batch=2.5), "batch", "whole number"),
    (lambda m: rosetta.verify(m, m, inputs=SPEC, seed="0,1"), "seed", "whole number"),
    (lambda m: rosetta.verify(m, m, inputs=SPEC, seed=-3), "seed", "0 or more"),
    (lambda m: rosetta.convert(m, to=["onnx", 5], inputs=SPEC), "to", "target names"),
    (lambda m: rosetta.convert(m, to=[], inputs=SPEC), "to", "target names"),
    (lambda m: rosetta.convert(m, to="onnx", inputs=SPEC, force="yes"), "force", "True or False"),
    (lambda m: rosetta.convert(m, to="onnx", inputs=SPEC, output_dir=3), "output_dir", "a path"),
    (lambda m: rosetta.verify(m, m, inputs=SPEC, atol="tiny"), "atol", "a number"),
    (lambda m: rosetta.verify(m, m, inputs=SPEC, rtol={"logits": -1}), "rtol", "a number"),
    (lambda m: rosetta.verify(m, m, inputs=SPEC, tolerance={"multiplier": 3}), "tolerance", "multiple"),
    (lambda m: rosetta.verify(m, m, inputs=SPEC, timeout="5"), "timeout", "seconds"),
    (lambda m: rosetta.verify(m, m, inputs=SPEC, threads=None), "threads", "whole number"),
    (lambda m: rosetta.verify(m, m, inputs=SPEC, jobs=0), "jobs", "1 or more"),
    (lambda m: rosetta.verify(m, m, inputs=SPEC, locate="no"), "locate", "True or False"),
    (lambda m: rosetta.verify(m, m, inputs=SPEC, pair=5), "pair", "REF=OTHER"),
    (lambda m: rosetta.verify(m, m, inputs=SPEC, pair={"image": ("image", "0,1")}), "pair", "permutation"),
    (lambda m: rosetta.verify(m, m, inputs=SPEC, max_memory="2"), "max_memory", "GiB"),
    (lambda m: rosetta.verify(m, m, inputs={"image": ["a", "b"]}), "inputs: image", "numbers"),
    (lambda m: rosetta.verify(m, m, inputs={3: np.zeros((2, 3, 8, 8), np.float32)}), "inputs", "by input name"),
    (lambda m: rosetta.verify(m, [m, 42], inputs=SPEC), "builtins.int", "a torch.nn.Module"),
    (lambda m: rosetta.verify("cnn", targets=["keras", None]), "targets", "target names"),
    (lambda m: rosetta.verify("cnn", seeds=[0, "1"]), "seeds", "whole numbers"),
    (lambda m: rosetta.verify("cnn", pair={"x": "y"}), "pair", "not for a verify of reference models"),
    (lambda m: rosetta.verify(m, m, inputs=SPEC, seeds=[1]), "seeds", "not for a verify of two or more"),
    (lambda m: rosetta.convert(m, to="onnx", inputs=SPEC, training=True), "training", "'eval', 'preserve'"),
    (lambda m: rosetta.convert(m, to="onnx", inputs=SPEC, opset="17"), "opset", "whole number"),
    (lambda m: rosetta.verify("cnn", device="tpu"), "device", "'cpu' or 'cuda'"),
    (lambda m: rosetta.bench("cnn-train", workers=0), "workers", "1 or more"),
    (lambda m: rosetta.bench(["cnn-train", 3]), "workloads", "workload names"),
    (lambda m: rosetta.bench("cnn-train", steps="10"), "steps", "whole number"),
    (lambda m: rosetta.conformance(suite=3), "suite", "string"),
    (lambda m: rosetta.conformance(ops=[1]), "ops", "operator names"),
    (lambda m: rosetta.conformance(resume=1.5), "resume", "True or False"),
    (lambda m: rosetta.parse_input(3), "text", "string"),
    (lambda m: rosetta.list_targets(None), "route", "string"),
])
def test_every_parameter_is_checked_with_bad_input_naming_it(call, names, takes, tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    with pytest.raises(rosetta.BadInput) as raised:
        call(small_net())
    message = str(raised.value)
    assert "\n" not in message and (message.startswith(names) or f" {names}" in message), message
    assert takes in message, message
    assert list(tmp_path.iterdir()) == []  # refused before any work


def test_a_model_on_the_meta_device_is_bad_input():
    with torch.device("meta"):
        empty = small_net()
    for call in (lambda: rosetta.verify(empty, small_net(), inputs=SPEC),
                 lambda: rosetta.verify(small_net(), empty, inputs=SPEC),
                 lambda: rosetta.convert(empty, "onnx", inputs=SPEC)):
        with pytest.raises(rosetta.BadInput, match=r"on the meta device \(no values\): load its weights first"):
            call()


def test_a_factory_that_builds_on_the_meta_device_is_one_line(tmp_path):
    (tmp_path / "meta.py").write_text("import torch\n\ndef build():\n    return torch.nn.Linear(6, 4, device='meta')\n")
    out = run_here("verify", f"{tmp_path / 'meta.py'}:build", f"{tmp_path / 'meta.py'}:build", "--trust-code",
                   "--input", "x:Nx6:float32")
    assert out.returncode == 2 and "on the meta device (no values)" in out.stderr, out.stderr


def test_arrays_given_in_memory_are_checked_against_max_memory(monkeypatch):
    """As generated inputs are (models.inputs.check_memory): refused before any model is opened or run."""
    import rosetta.sources.memory as memory

    def opened(*args, **kwargs):
        raise AssertionError("a model was opened before the memory check")

    monkeypatch.setattr(memory, "open_object", opened)
    arrays = {"image": np.zeros((64, 3, 8, 8), np.float32)}  # 48 KiB
    with pytest.raises(rosetta.BadInput, match=r"^inputs: the arrays given \(image 64x3x8x8 float32\) take 48.0 KiB, "
                                               r"more than the 4.0 KiB allowed; .*raise max_memory="):
        rosetta.verify(small_net(), small_net(), inputs=arrays, max_memory=4 / 2**20)
    with pytest.raises(rosetta.BadInput, match="more than the"):
        rosetta.verify(small_net(), small_net(), inputs=list(arrays.values()), max_memory=4 / 2**20)


def test_arrays_given_are_checked_with_the_outputs_they_make_against_max_memory():
    """The arrays alone fit (48 bytes); the reference's outputs on them and their float64 copies do not."""
    torch.manual_seed(0)
    net = torch.nn.Linear(6, 200_000)
    with pytest.raises(rosetta.RosettaError, match="reference outputs at batch 2"):
        rosetta.verify(net, net, inputs={"x": np.ones((2, 6), np.float32)}, max_memory=1e-3)


class NamedForward(torch.nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.net = small_net()

    def forward(self, pixels):
        return self.net(pixels)


class PositionalForward(NamedForward):
    def forward(self, *args):
        return self.net(args[0])


def test_an_array_named_after_no_input_of_either_model_is_bad_input():
    """Where each model's input names can be known (a forward's parameters, a model file's inputs), an array
    named after none of them is refused, not paired by position; a forward that takes *args keeps position."""
    arrays = {"nope": np.random.default_rng(0).random((2, 3, 8, 8), np.float32)}
    with pytest.raises(rosetta.BadInput) as refused:
        rosetta.verify(NamedForward(), exported(small_net()), inputs=arrays)
    message = str(refused.value)
    assert "'nope' names no input of either model" in message and "takes pixels" in message, message
    assert "takes image" in message and "\n" not in message, message
    with pytest.raises(rosetta.BadInput, match="'nope' names no input of either model .*takes input; .*takes input"):
        rosetta.verify(small_net(), small_net(), inputs=arrays)
    assert rosetta.verify(NamedForward(), exported(small_net()), inputs={"image": arrays["nope"]}).passed
    assert rosetta.verify(PositionalForward(), exported(small_net()), inputs=arrays).passed


def test_the_settings_objects_and_their_fields_as_keywords_are_one_run(tmp_path):
    """settings=RunSettings(...) and tolerance=Tolerance(...) carry what the keywords do; a keyword wins over the
    object's field; each is checked where it is built, naming the field, and an unknown keyword lists the ones
    the function takes."""
    model = exported(small_net())
    settings = rosetta.RunSettings(batch=3, seed=2)
    rosetta.verify(model, model, settings=settings, save_inputs=tmp_path / "objects.npz")
    rosetta.verify(model, model, batch=3, seed=2, save_inputs=tmp_path / "keywords.npz")
    rosetta.verify(model, model, settings=settings, batch=5, save_inputs=tmp_path / "over.npz")
    objects, keywords, over = (np.load(tmp_path / f"{name}.npz") for name in ("objects", "keywords", "over"))
    assert objects["image"].shape[0] == 3 and np.array_equal(objects["image"], keywords["image"])
    assert over["image"].shape[0] == 5
    report = rosetta.verify(model, model, tolerance=rosetta.Tolerance(atol=1e-6))
    assert report.passed and report.to_json()["tolerance"]["atol"] == 1e-6
    with pytest.raises(rosetta.BadInput, match=r"^unknown option\(s\) bach; verify takes .*\bbatch\b"):
        rosetta.verify(model, model, bach=3)
    with pytest.raises(rosetta.BadInput, match=r"^settings: a rosetta.RunSettings"):
        rosetta.verify(model, model, settings={"batch": 3})
    with pytest.raises(rosetta.BadInput, match=r"^batch: a whole number, 1 or more; got 0"):
        rosetta.RunSettings(batch=0)
    with pytest.raises(rosetta.BadInput, match=r"^atol: a number"):
        rosetta.Tolerance(atol={"logits": -1})

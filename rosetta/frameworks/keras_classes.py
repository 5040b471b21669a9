"""The modules that define a Keras file's custom layer classes, imported before the file is loaded (trusted
files only), and a one-line message naming the class Keras could not locate.

A `.keras` file's config.json names, for every object it holds (layers, nested layers, sublayers in a layer's
config, a Functional inside a Functional, initializers, activations), the Python module of its class
(`"module": "unaligned_layers"`) and the name it was registered under (`"registered_name":
"rosetta_tests>EncoderBlock"`). Keras 3 imports a class's module by itself only for keras, keras_hub, keras_cv and
keras_nlp; a class registered with `keras.saving.register_keras_serializable` anywhere else is found only if its
module was imported first. Rosetta's workers start with `python -P`, so the model's folder is not on the import
path either.

`import_layer_modules` imports those modules when the user passes --trust-code, and only then: each one first as
an installed package, else as a `.py` file (or package folder) in the model file's own folder, and nowhere else.
A name that is not a dotted Python module name (`../evil`, `/tmp/evil`) or whose file resolves outside the
folder (a symlink) is refused. Without --trust-code nothing is imported; the load then fails, and
`missing_class_error` says which class and module are missing and what --trust-code would import.
"""

from __future__ import annotations

import importlib
import importlib.util
import json
import keyword
import re
import sys
import zipfile
from dataclasses import dataclass
from pathlib import Path

from rosetta.errors import RosettaError, UntrustedModel, one_line

# Packages Keras imports a class's module from by itself (serialization_lib._retrieve_class_or_fn), and the
# names of a class that no import can bring back: "builtins" (Keras's own functions by name), "__main__" (a
# class defined in the script that saved the model).
KERAS_OWN = {"keras", "keras_hub", "keras_cv", "keras_nlp"}
NOT_IMPORTABLE = {"builtins", "__main__"}

_FROM_FOLDER: dict[str, Path] = {}  # module name -> the file this process imported it from (a model's folder)


@dataclass(frozen=True)
class LayerClass:
    module: str
    class_name: str
    registered_name: str | None


def saved_config(path: Path) -> dict | None:
    """The model config a `.keras` file (a zip) holds in config.json; None for any other file or an unreadable
    one (its load then says what is wrong)."""
    path = Path(path)
    if path.suffix.lower() != ".keras" or not zipfile.is_zipfile(path):
        return None
    try:
        with zipfile.ZipFile(path) as archive:
            config = json.loads(archive.read("config.json"))
    except (KeyError, ValueError, OSError, zipfile.BadZipFile):
        return None
    return config if isinstance(config, dict) else None


def layer_classes(path: Path) -> list[LayerClass]:
    """Every class the file's config names with a module outside Keras, in the config's order, once each."""
    found: dict[tuple, LayerClass] = {}

    def walk(value) -> None:
        if isinstance(value, dict):
            module, name = value.get("module"), value.get("class_name")
            if isinstance(module, str) and isinstance(name, str) and _top(module) not in KERAS_OWN:
                registered = value.get("registered_name")
                entry = LayerClass(module, name, registered if isinstance(registered, str) else None)
                found.setdefault((entry.module, entry.class_name, entry.registered_name), entry)
            for item in value.values():
                walk(item)
        elif isinstance(value, list):
            for item in value:
                walk(item)

    walk(saved_config(path))
    return list(found.values())


def model_folder(path: Path) -> Path:
    """The folder a model's own modules are looked for in: the file's folder, or, for the copy rosetta staged
    (model.keras beside rosetta's manifest.json), the folder of the user's file it was copied from."""
    path = Path(path)
    manifest = path.parent / "manifest.json"
    if manifest.is_file():
        try:
            data = json.loads(manifest.read_text())
        except (ValueError, OSError):
            data = None
        source = data.get("source") if isinstance(data, dict) else None
        original = source.get("path") if isinstance(source, dict) else None
        if isinstance(original, str) and data.get("artifact") == path.name and data.get("format") == "keras":
            return Path(original).parent
    return path.parent


def import_layer_modules(path: Path, trust_code: bool) -> list[str]:
    """Import the modules that define the custom classes of the Keras file at `path`, where trust_code; the
    modules imported (already imported ones included), in the config's order. Without trust_code: nothing,
    []. A module that is neither installed nor in the model's folder is left for the load to report
    (`missing_class_error`); a refused name, or a module whose import raises, is a RosettaError."""
    if not trust_code:
        return []
    path = Path(path)
    folder = model_folder(path)
    imported: list[str] = []
    for module in dict.fromkeys(entry.module for entry in layer_classes(path)):
        if module in NOT_IMPORTABLE:
            continue
        _check_name(path, module)
        if _installed(module):
            _import(path, module, lambda: importlib.import_module(module))
        else:
            file = module_file(folder, module)
            if file is None:
                continue
            _import(path, module, lambda: _import_from_folder(module, folder, file))
        imported.append(module)
    return imported


def _top(module: str) -> str:
    return module.split(".", 1)[0]


def _valid_name(module: str) -> bool:
    return bool(module) and all(part.isidentifier() and not keyword.iskeyword(part) for part in module.split("."))


def _check_name(path: Path, module: str) -> None:
    if not _valid_name(module):
        raise RosettaError(f"{path.name} names the module {module!r} for a layer class, which is not a Python "
                           "module name: refused (a model's modules are imported only from its own folder)")


def _installed(module: str) -> bool:
    """Whether `module`'s top-level package is importable from sys.path (the model's folder is not on it): found
    without running any of its code."""
    if any(_top(name) == _top(module) for name in _FROM_FOLDER):  # this process imported it from a model's folder
        return False
    if module in sys.modules:
        return True
    try:
        return importlib.util.find_spec(_top(module)) is not None
    except (ImportError, ValueError):
        return False


def module_file(folder: Path, module: str) -> Path | None:
    """The file in `folder` that `module` would be imported from (a.b -> a/b.py or a/b/__init__.py); None if
    there is none. A name that is not a module name, or a file that resolves outside `folder` (a symlink out),
    is refused."""
    if not _valid_name(module):
        raise RosettaError(f"{module!r} is not a Python module name: refused")
    root = Path(folder).resolve()
    parts = module.split(".")
    for candidate in (root.joinpath(*parts[:-1], parts[-1] + ".py"), root.joinpath(*parts, "__init__.py")):
        if candidate.is_file():
            resolved = candidate.resolve()
            if not resolved.is_relative_to(root):
                raise RosettaError(f"module {module} in {folder} is a link to {resolved}, outside the model's "
                                   "folder: refused")
            return resolved
    return None


def _import_from_folder(module: str, folder: Path, file: Path):
    """`module` imported from the model's folder: the folder is on sys.path only while it is imported, after every
    installed package (a file there never shadows an installed module); a module of the same name imported from
    another model's folder before is imported anew."""
    if _FROM_FOLDER.get(module) == file and module in sys.modules:
        return sys.modules[module]
    for name in [name for name in sys.modules if name == module or name.startswith(module + ".")]:
        if name in _FROM_FOLDER or name == module:
            del sys.modules[name]
    entry = str(Path(folder).resolve())
    sys.path.append(entry)
    try:
        importlib.invalidate_caches()
        loaded = importlib.import_module(module)
    finally:
        if entry in sys.path:
            sys.path.remove(entry)
    where = Path(getattr(loaded, "__file__", "") or "").resolve()
    if where != file:
        raise RosettaError(f"module {module} was imported from {where}, not from {file}: refused")
    _FROM_FOLDER[module] = file
    return loaded


def _import(path: Path, module: str, load) -> None:
    try:
        load()
    except RosettaError:
        raise
    except BaseException as error:  # the model's own code: a SystemExit or KeyboardInterrupt it raises too
        if isinstance(error, KeyboardInterrupt):
            raise
        raise RosettaError(f"importing module {module}, which defines layer classes of {path.name}, failed "
                           f"({one_line(error)})") from None


_LOCATE = (re.compile(r"Could not locate (?:class|function) '([^']+)'"), re.compile(r"Unknown layer: '([^']+)'"))


def missing_class_error(path: Path, error: BaseException, trust_code: bool) -> RosettaError:
    """The error for a load that failed because Keras could not locate a class: the class, its module and what
    to do (UntrustedModel where --trust-code would import the module), in place of Keras's generic
    'Functional could not be deserialized properly...'."""
    path = Path(path)
    text = str(error)
    name = next((match.group(1) for pattern in _LOCATE for match in [pattern.search(text)] if match), None)
    if name is None:
        return RosettaError(f"{path.name} uses a custom layer Keras cannot find ({one_line(error)[:300]})")
    short = name.split(">")[-1]
    entry = next((entry for entry in layer_classes(path)
                  if short in (entry.class_name, (entry.registered_name or "").split(">")[-1])), None)
    if entry is None:
        return RosettaError(f"{path.name}: Keras could not locate class '{short}', and the file names no module "
                            "for it; only built-in layers and classes of importable modules can be read")
    said = f"{path.name}: Keras could not locate class '{entry.class_name}'" + (
        f" (registered as '{entry.registered_name}')" if entry.registered_name else "") + f" of module {entry.module}"
    if entry.module == "__main__":
        return RosettaError(f"{said}: it was defined in the script that saved the model, which cannot be "
                            "imported; move the class into a module beside the model file and save it again")
    if not _valid_name(entry.module):
        return RosettaError(f"{said}, which is not a Python module name: it is never imported")
    folder = model_folder(path)
    try:
        file = module_file(folder, entry.module)
    except RosettaError as refused:
        return RosettaError(f"{said}: {refused}")
    if not trust_code:
        where = f"from {file}" if file is not None else (
            "(installed)" if _installed(entry.module) else f"from {folder} (not there: no {entry.module}.py)")
        return UntrustedModel(f"{said}; trust_code=True would import module {entry.module} {where}: pass it if you "
                              "trust the model")
    if file is None and not _installed(entry.module):
        return RosettaError(f"{said}, which is neither installed nor a file in the model's folder {folder}: put "
                            f"{entry.module.replace('.', '/')}.py beside the model or install it")
    return RosettaError(f"{said}: module {entry.module} was imported but does not register it; decorate the class "
                        "with @keras.saving.register_keras_serializable()")

"""Training setups from files, for `rosetta verify REF PORT --train-steps N` between two models (issue 44): a PyTorch
factory file (`setup.py:fn`) returning (module, optimizer, loss_fn), run only with trust_code=True; a saved .keras
file that keeps its compile config (its optimiser and loss from model.compile; read by rosetta.train.port_keras in
the Keras worker); or a Gluon factory file returning (block, trainer, loss), told apart from a PyTorch one by its
import statements (an AST scan for `mxnet`, never by running it) and run only in the MXNet worker
(rosetta.train.port_mxnet). Nothing here imports a framework but torch, and torch only to call a trusted factory."""

from __future__ import annotations

import json
import zipfile
from pathlib import Path

from rosetta.errors import BadInput, RosettaError, one_line
from rosetta.sources.torch import is_training_setup  # noqa: F401 - where training setups are told apart

SETUP_HELP = "a PyTorch factory file returning (module, optimizer, loss_fn), e.g. setup.py:fn"
GLUON_HELP = "a Gluon factory file returning (block, trainer, loss), e.g. gluon_setup.py:fn"


def imports_mxnet(path) -> bool:
    """Whether the Python file at `path` imports mxnet (import mxnet, from mxnet import gluon, ...): read from its
    import statements, the file never run here (MXNet is never imported in the main process)."""
    import ast

    try:
        tree = ast.parse(Path(path).read_text(), str(path))
    except (OSError, SyntaxError, ValueError):
        return False
    for node in ast.walk(tree):
        names = [alias.name for alias in node.names] if isinstance(node, ast.Import) else \
            [node.module or ""] if isinstance(node, ast.ImportFrom) and not node.level else []
        if any(name == "mxnet" or name.startswith("mxnet.") for name in names):
            return True
    return False


def _factory_file(text):
    """The file of a factory text (path/file.py:fn, or package.module:fn found without importing it), or None."""
    import importlib.util

    from rosetta.sources.files import identify

    model_file = identify(str(text))
    if model_file.path is not None:
        return model_file.path
    try:
        spec = importlib.util.find_spec(model_file.module) if "." not in model_file.module else None
    except (ImportError, ValueError):
        return None
    return Path(spec.origin) if spec is not None and spec.origin else None


def _is_factory(text) -> bool:
    from rosetta.sources.files import identify

    try:
        return isinstance(text, (str, Path)) and identify(str(text)).format == "torch-factory"
    except RosettaError:
        return False


def is_gluon_setup_text(text) -> bool:
    """Whether a command-line model names a Gluon factory: a factory file (file.py:fn) that imports mxnet."""
    if not _is_factory(text):
        return False
    path = _factory_file(text)
    return path is not None and imports_mxnet(path)


def is_setup_text(text) -> bool:
    """Whether a command-line model names a PyTorch factory (path/file.py:fn or package.module:fn), not a Gluon one."""
    return _is_factory(text) and not is_gluon_setup_text(text)


def check_gluon_setup(text, trust_code: bool) -> str:
    """The Gluon factory text, refused in one line where its code may not run (it runs in the MXNet worker)."""
    if not is_gluon_setup_text(text):
        raise BadInput(f"{text}: train_steps= between two models takes {GLUON_HELP} (a file that imports mxnet)")
    if not trust_code:
        raise BadInput(f"{text} is Python code: building the Gluon training setup runs it; it needs trust_code=True")
    from rosetta.sources.files import identify

    model_file = identify(str(text))
    if model_file.path is None:
        raise BadInput(f"{text}: give the Gluon factory as a file, path/gluon_setup.py:fn")
    return f"{Path(model_file.path).absolute()}:{model_file.function}"


def exported_gluon_setup(text, trust_code: bool, specs: list, scratch) -> tuple[Path, list[str]]:
    """The block of a Gluon setup file built and exported (HybridBlock.export) in the MXNet worker into `scratch`,
    for the pair's inference rows: (its model-symbol.json, the symbol's input names, in the order of `specs`)."""
    import hashlib

    from rosetta.execution import Job, execute
    from rosetta.frameworks import isolation
    from rosetta.models.inputs import generate_inputs

    checked = check_gluon_setup(text, trust_code)
    if not specs:
        raise BadInput(f"{text}: a Gluon block does not say its inputs; give inputs= specs, e.g. "
                       "inputs=['x:Nx6:float32']")
    folder = Path(scratch) / f"gluon-setup-{hashlib.sha256(checked.encode()).hexdigest()[:10]}"
    folder.mkdir(parents=True, exist_ok=True)
    feeds = generate_inputs(tuple(specs), 2, 0)
    result = execute(Job("rosetta.train.port_mxnet:export_setup_job",
                         {"setup": checked, "feeds": [feeds[spec.name] for spec in specs], "folder": str(folder)},
                         isolation("mxnet"), "gluon setup export")).result
    return Path(result["path"]), list(result["names"])


def load_torch_setup(text: str, trust_code: bool) -> tuple:
    """(module, optimizer, loss_fn) that the factory `text` returns; its code runs only with trust_code."""
    from rosetta.execution import timeout_seconds
    from rosetta.execution.deadline import deadline
    from rosetta.sources.files import identify
    from rosetta.sources.torch import _built, check_not_on_meta

    model_file = identify(str(text))
    if model_file.format != "torch-factory":
        raise BadInput(f"{text}: train_steps= between two models takes {SETUP_HELP}, not a {model_file.format} file")
    if not trust_code:
        raise BadInput(f"{text} is Python code: building the training setup runs it; it needs trust_code=True")
    with deadline(timeout_seconds(), f"building {text}"):
        built = _built(model_file)
    if not is_training_setup(built):
        shown = type(built).__name__ if not isinstance(built, tuple) else \
            f"a tuple of {', '.join(type(v).__name__ for v in built)}"
        raise BadInput(f"{text} returned {shown}; train_steps= between two models needs (torch.nn.Module, "
                       "torch.optim.Optimizer, loss callable), the optimizer built on the module's parameters")
    check_not_on_meta(built[0], str(text))
    return built


def check_compiled_keras(path) -> Path:
    """The .keras file at `path`, refused in one line where it is not one or holds no compile config (saved from an
    uncompiled model, or compile=False): its optimiser and loss are how it trains."""
    path = Path(path).expanduser().absolute()
    if path.suffix != ".keras" or not path.is_file():
        raise BadInput(f"{path}: train_steps= between two models takes a saved .keras file (model.save("
                       "'port.keras') after model.compile(optimizer, loss))")
    try:
        with zipfile.ZipFile(path) as archive:
            config = json.loads(archive.read("config.json"))
    except (OSError, KeyError, ValueError, zipfile.BadZipFile) as error:
        raise BadInput(f"{path}: not a readable .keras file ({one_line(error)})") from None
    compiled = config.get("compile_config") if isinstance(config, dict) else None
    if not compiled or not compiled.get("optimizer") or not compiled.get("loss"):
        raise BadInput(f"{path.name}: saved without a compile config (optimizer and loss); model.compile("
                       "optimizer, loss) before model.save says how it trains, rosetta would have to guess")
    return path

"""Training setups from files, for `rosetta verify REF PORT --train-steps N` between two models (issue 44): a PyTorch
factory file (`setup.py:fn`) returning (module, optimizer, loss_fn), run only with --trust-code, and a saved .keras
file that keeps its compile config (its optimiser and loss from model.compile; read by rosetta.train.port_keras in
the Keras worker). Nothing here imports a framework but torch, and torch only to call a trusted factory."""

from __future__ import annotations

import json
import zipfile
from pathlib import Path

from rosetta.errors import BadInput, RosettaError, one_line
from rosetta.sources.torch import is_training_setup  # noqa: F401 - where training setups are told apart

SETUP_HELP = "a PyTorch factory file returning (module, optimizer, loss_fn), e.g. setup.py:fn"


def is_setup_text(text) -> bool:
    """Whether a command-line model names a PyTorch factory (path/file.py:fn or package.module:fn)."""
    from rosetta.sources.files import identify

    try:
        return isinstance(text, (str, Path)) and identify(str(text)).format == "torch-factory"
    except RosettaError:
        return False


def load_torch_setup(text: str, trust_code: bool) -> tuple:
    """(module, optimizer, loss_fn) that the factory `text` returns; its code runs only with trust_code."""
    from rosetta.execution import timeout_seconds
    from rosetta.execution.deadline import deadline
    from rosetta.sources.files import identify
    from rosetta.sources.torch import _built, check_not_on_meta

    model_file = identify(str(text))
    if model_file.format != "torch-factory":
        raise BadInput(f"{text}: --train-steps between two models takes {SETUP_HELP}, not a {model_file.format} file")
    if not trust_code:
        raise BadInput(f"{text} is Python code: building the training setup runs it; it needs --trust-code")
    with deadline(timeout_seconds(), f"building {text}"):
        built = _built(model_file)
    if not is_training_setup(built):
        shown = type(built).__name__ if not isinstance(built, tuple) else \
            f"a tuple of {', '.join(type(v).__name__ for v in built)}"
        raise BadInput(f"{text} returned {shown}; --train-steps between two models needs (torch.nn.Module, "
                       "torch.optim.Optimizer, loss callable), the optimizer built on the module's parameters")
    check_not_on_meta(built[0], str(text))
    return built


def check_compiled_keras(path) -> Path:
    """The .keras file at `path`, refused in one line where it is not one or holds no compile config (saved from an
    uncompiled model, or compile=False): its optimiser and loss are how it trains."""
    path = Path(path).expanduser().absolute()
    if path.suffix != ".keras" or not path.is_file():
        raise BadInput(f"{path}: --train-steps between two models takes a saved .keras file (model.save("
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

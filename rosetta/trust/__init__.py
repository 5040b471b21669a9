"""The trust boundary: what reading a model file may do without --trust-code, decided in this package and
checked before any framework sees the file. Every reader of a user's file and every runner or conversion
of a rosetta folder goes through it.

Per format, without --trust-code:
- any rosetta folder: its manifest's paths stay inside the folder (no absolute paths, no `..`, no symlink
  that leads out), checked before anything is read (`contained`).
- ONNX: plain data; tensors stored as external data must lie inside the model's folder.
- torch.export (.pt2): no pickle is unpickled, and every symbolic-shape expression the archive carries must
  fit a small arithmetic grammar before torch parses it (`pt2.check_expressions`): torch hands them to
  sympy, which evaluates them as Python.
- TensorFlow SavedModel: a program; every op it can run (graph, initializers, every function reached from
  them) must be a pure tensor op from an allow-list (`savedmodel`): no file, process or Python ops.
  Checkpoint ops only in the saver that saver_def names, on the checkpoint path the loader gives it.
- Keras: loaded with safe_mode (no Lambda layers or custom objects); the file must be a Keras archive.
- MXNet: symbol JSON and the .params NDArray format, plain data.
- PyTorch factories (file.py:function) and generated code (MMdnn's PyTorch emitter) are Python: refused.
"""

from __future__ import annotations

from pathlib import Path

from rosetta.errors import RosettaError

TRUST_HINT = "pass trust_code=True if you trust it"


def contained(folder: Path, relative: str, what: str) -> Path:
    """`folder/relative`, refused with one line unless it stays inside `folder`: `relative` must be a relative
    path without `..`, and neither it nor anything under it may be a symlink that resolves outside."""
    folder = Path(folder)
    text = str(relative)
    parts = Path(text).parts
    if not text or Path(text).is_absolute() or ".." in parts or text.startswith("~"):
        raise RosettaError(f"{what} {text!r} in {folder} is not a plain relative path inside its folder; "
                           "a rosetta folder names only files inside itself: convert the model again")
    root = folder.resolve()
    path = folder / text
    escapes = [p for p in _self_and_below(path) if not _inside(p.resolve(), root)]
    if escapes:
        raise RosettaError(f"{what} {text!r} in {folder} leads outside its folder ({escapes[0]} -> "
                           f"{escapes[0].resolve()}); refusing to read it")
    return path


def _inside(path: Path, root: Path) -> bool:
    return path == root or root in path.parents


def _self_and_below(path: Path):
    yield path
    if path.is_dir() and not path.is_symlink():
        for below in path.rglob("*"):
            if below.is_symlink():
                yield below

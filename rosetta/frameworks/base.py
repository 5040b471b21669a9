"""The interface every framework runner implements, in the manner of Polygraphy's runners:
load an artifact once, then predict on a dict of numpy arrays and return a dict of numpy arrays."""

from __future__ import annotations

import contextlib
import importlib.util
import io
from abc import ABC, abstractmethod
from pathlib import Path
from typing import ClassVar

import numpy as np

from rosetta.errors import BadInput, RosettaError


class Runner(ABC):
    framework: ClassVar[str]
    # the device the framework actually runs this artifact on (ONNX Runtime's providers, TensorFlow's
    # placement, MXNet's context, torch's device), recorded beside every timing
    device_used: str = "not reported"
    # a float64 run's frameworks.reference_check.ReferenceCheck as JSON, set by predict where the runner checks it
    reference_check: dict | None = None
    # the arithmetic in force, read back from the framework where it has a setting for it (TF32, JAX's matmul
    # precision, autocast), recorded beside every timing
    precision_in_force: dict | None = None

    @classmethod
    @abstractmethod
    def version(cls) -> str:
        """The version of the framework this runner drives."""

    @abstractmethod
    def predict(self, feeds: dict[str, np.ndarray]) -> dict[str, np.ndarray]:
        """Run inference: input name -> array, to output name -> array."""

    @classmethod
    def environment(cls) -> dict:
        """What `rosetta env` shows of this framework, read where it runs: {"version", "devices" it sees,
        "cuda" and "cudnn" versions of its build (None: a CPU build), "settings" rosetta's runs use}."""
        return {"version": cls.version(), "devices": ["cpu"], "cuda": None, "cudnn": None, "settings": {}}

    def running_version(self) -> str:
        """The version that actually runs this artifact (a worker proxy reports its worker's)."""
        return self.version()

    def peak_device_mb(self) -> float | None:
        """Peak device (GPU) memory in MiB since the runner was made, where the framework reports it."""
        return None

    def settings(self) -> dict:
        """What a timed run records of how it ran, read back from the framework: the device and the precision in
        force (and, in a subclass, how its steps are compiled)."""
        return {"device used": self.device_used,
                **({"precision in force": self.precision_in_force} if self.precision_in_force else {})}

    def timed_call(self, feeds: dict[str, np.ndarray]):
        """The call a benchmark times for `feeds`: predict, host arrays in and out (a runner with device-resident
        inputs or CUDA graphs returns its own)."""
        return lambda: self.predict(feeds)

    def synchronize(self) -> None:
        """Wait for the device, where timed_call may leave work queued on it."""

    def clock(self):
        """The clock of a window of calls (rosetta.timing.time_window): the host's, unless the device has one."""
        from rosetta.timing import HostClock

        return HostClock()


def copied(feeds: dict[str, np.ndarray]) -> dict[str, np.ndarray]:
    """Each input array copied: what a run that may change its inputs in place is given."""
    return {name: np.array(value, copy=True) for name, value in feeds.items()}


def run_on_copies(predict, feeds: dict[str, np.ndarray]) -> tuple[dict[str, np.ndarray], list[str]]:
    """`predict` run on a copy of each input, and the names of the inputs it changed in place. A model that
    writes to its inputs (`x.mul_(2)` in a forward, which torch.from_numpy lets reach the caller's array) must
    not change what the next run sees: every run gets its own copy, and the change is reported, not hidden."""
    copies = copied(feeds)
    outputs = predict(copies)
    changed = [name for name, value in feeds.items()
               if not np.array_equal(copies[name], value, equal_nan=value.dtype.kind in "fc")]
    return outputs, changed


def check_feeds(feeds: dict[str, np.ndarray], signature: list[dict]) -> None:
    """Input names, dtypes and ranks/fixed sizes must match the model's signature: one clear line if not."""
    expected = {entry["name"]: entry for entry in signature}
    missing = sorted(set(expected) - set(feeds))
    unknown = sorted(set(feeds) - set(expected))
    if missing or unknown:
        raise BadInput(f"inputs do not match the model: missing {missing or 'none'}, unexpected {unknown or 'none'}; "
                           f"the model takes {sorted(expected)}")
    for name, array in feeds.items():
        entry = expected[name]
        text = entry["dtype"] == "str"  # numpy's str of any length, bytes or objects: ONNX's string tensor
        if (array.dtype.kind not in "USO") if text else np.dtype(array.dtype) != np.dtype(entry["dtype"]):
            raise BadInput(f"input {name!r} has dtype {array.dtype}; the model expects {entry['dtype']}")
        shape = entry["shape"]
        fixed_ok = all(not isinstance(d, int) or d in (0, a) for d, a in zip(shape, array.shape))
        if len(shape) != array.ndim or not fixed_ok:
            wanted = "(" + ", ".join(str(d) if isinstance(d, int) and d else str(d or "?") for d in shape) + ")"
            raise BadInput(f"input {name!r} has shape {tuple(array.shape)}; the model expects {wanted}")


def artifact_file(folder: Path, manifest) -> Path:
    path = manifest.artifact_path(folder)
    if not path.exists():
        raise RosettaError(f"artifact {path} named by the manifest is missing; convert the model again")
    return path


def to_channels_last(array: np.ndarray) -> np.ndarray:
    return np.transpose(array, (0, *range(2, array.ndim), 1))


def to_channels_first(array: np.ndarray) -> np.ndarray:
    return np.transpose(array, (0, array.ndim - 1, *range(1, array.ndim - 1)))


# layout the artifact takes -> (how a reference-layout array becomes it, how it comes back)
_LAYOUT_CHANGES = {"channels_last": (to_channels_last, to_channels_first),
                   "channels_first": (to_channels_first, to_channels_last)}


def to_layouts(feeds: dict[str, np.ndarray], layouts: dict) -> dict[str, np.ndarray]:
    """Where a converter changed a tensor's layout (manifest converter "layouts": {name: "channels_last"} for
    onnx2tf and MMdnn's NHWC emitters from a channels-first model; "channels_first" for MMdnn's NCHW emitters
    from a Keras model), the runner transposes at the boundary, so callers feed and receive the same arrays
    as the reference model."""
    return {name: np.ascontiguousarray(_LAYOUT_CHANGES[layouts[name]][0](array))
            if layouts.get(name) in _LAYOUT_CHANGES else array for name, array in feeds.items()}


def from_layouts(outputs: dict[str, np.ndarray], layouts: dict) -> dict[str, np.ndarray]:
    return {name: _LAYOUT_CHANGES[layouts[name]][1](value) if layouts.get(name) in _LAYOUT_CHANGES else value
            for name, value in outputs.items()}


def import_generated(code: Path, name: str = "mmdnn_generated"):
    """Import code a converter generated (MMdnn's emitters) from its file in the artifact folder: running it
    runs that code, so only with trust_code or for rosetta's own conversions."""
    spec = importlib.util.spec_from_file_location(name, str(code))
    module = importlib.util.module_from_spec(spec)
    with contextlib.redirect_stdout(io.StringIO()):
        spec.loader.exec_module(module)
    return module


def weights_dict(folder: Path, name: str) -> dict:
    """Weights as MMdnn's nested {layer: {parameter: array}} dict, read from the "layer/parameter" arrays of
    an .npz without pickle."""
    nested: dict = {}
    with np.load(Path(folder) / name, allow_pickle=False) as archive:
        for key in archive.files:
            layer, name = key.rsplit("/", 1)
            nested.setdefault(layer, {})[name] = archive[key]
    return nested


def in_float(array: np.ndarray, precision: str) -> np.ndarray:
    """A float input in the runner's `precision` (a float64 run of a model); other dtypes as they are."""
    return array.astype(precision, copy=False) if array.dtype.kind == "f" else array

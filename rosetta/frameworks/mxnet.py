"""MXNet 1.9.1: runs a symbol + params artifact through Gluon's SymbolBlock.

MXNet's shims live here, applied only in the worker processes that import MXNet. MXNet 1.9.1 still uses numpy aliases removed in numpy 1.24 (np.bool, np.int, ...); numpy 1.26 is the only
version it shares with TensorFlow 2.21. `import_mxnet` restores those aliases, here and only here, right
before MXNet is imported (in a worker process: mxnet is an isolated framework).
"""

from __future__ import annotations

import sys
import types
from pathlib import Path

import numpy as np

from rosetta.frameworks.base import Runner, artifact_file, check_feeds, from_layouts, in_float, to_layouts
from rosetta.frameworks.speed import Speed

_REMOVED_NUMPY_ALIASES = {"bool": bool, "int": int, "float": float, "complex": complex, "object": object, "str": str}

SYMBOL_FILE = "model-symbol.json"
PARAMS_FILE = "model-0000.params"


def import_mxnet(threads: int = 0):
    """MXNet with the numpy aliases it needs; `threads` sets its OpenMP pool (only before MXNet is imported)."""
    import os

    if threads:
        os.environ.setdefault("OMP_NUM_THREADS", str(threads))
    for name, value in _REMOVED_NUMPY_ALIASES.items():
        if name not in np.__dict__:
            setattr(np, name, value)
    import mxnet

    return mxnet


def mxnet_context(device: str):
    """mx.cpu(), or mx.gpu() where MXNet has a GPU: MXNet would otherwise fail at the first op, or a CPU build
    at import of the context, with a message about CUDA rather than what to do."""
    from rosetta.errors import Unsupported

    mx = import_mxnet()
    if device != "cuda":
        return mx.cpu()
    if not mx.runtime.Features().is_enabled("CUDA") or mx.context.num_gpus() == 0:
        raise Unsupported("device='cuda': MXNet sees no GPU: rosetta installs its CPU build, since no MXNet CUDA "
                          "build works with this stack (the newest, mxnet-cu117 1.9.1, needs CUDA 11 and cuDNN 8)")
    return mx.gpu()


def install_onnx_mapping() -> None:
    """MXNet's ONNX importer and exporter import `onnx.mapping` (dtype tables), which onnx 1.15 removed (they
    moved to onnx.helper functions). Rebuild that module from onnx.helper; for the conversion workers only."""
    import onnx
    from onnx import TensorProto, helper

    if "onnx.mapping" in sys.modules:
        return
    to_numpy = {}
    for value in TensorProto.DataType.values():
        try:
            to_numpy[value] = helper.tensor_dtype_to_np_dtype(value)
        except Exception:  # UNDEFINED, STRING and types numpy cannot hold
            continue
    to_onnx = {}
    for value, dtype in to_numpy.items():
        to_onnx.setdefault(dtype, value)  # the first (canonical) ONNX type of each numpy dtype
    mapping = types.ModuleType("onnx.mapping")
    mapping.TENSOR_TYPE_TO_NP_TYPE, mapping.NP_TYPE_TO_TENSOR_TYPE = to_numpy, to_onnx
    sys.modules["onnx.mapping"] = onnx.mapping = mapping



HYBRIDIZE = "hybridize(static_alloc=True, static_shape=True)"


def context_of(block) -> str:
    """Where a Gluon block's weights are, read back from its first parameter."""
    parameter = next(iter(block.collect_params().values()), None)
    return str(parameter.data().context) if parameter is not None else "no weights"


SPEED_WAYS = {"compile": HYBRIDIZE, "eager": "imperative Gluon (no hybridize)"}


def check_speed(speed: Speed, device: str) -> None:
    speed.require("MXNet", device, **SPEED_WAYS,
                  precision_why="rosetta does not drive MXNet 1.9's contrib AMP (its float16/bfloat16 graph pass)")


class MXNetRunner(Runner):
    framework = "mxnet"

    def __init__(self, folder: Path, manifest, threads: int = 0, device: str = "cpu", precision: str = "float32",
                 speed: dict | None = None) -> None:
        speed = Speed.from_json(speed)
        check_speed(speed, device)
        mx = import_mxnet(threads)
        self.manifest, self.layouts = manifest, manifest.converter.get("layouts", {})
        artifact = artifact_file(folder, manifest)
        self.context = mxnet_context(device)
        # the symbol's own input names where a converter recorded them (MMdnn names its input "input")
        names = manifest.converter.get("input_names") or [entry["name"] for entry in manifest.inputs]
        self.input_names, self.artifact = names, artifact
        self.block = mx.gluon.SymbolBlock.imports(str(artifact / SYMBOL_FILE), names, str(artifact / PARAMS_FILE),
                                                  ctx=self.context)
        if precision != "float32":  # a float64 run of the model: the calibrated tolerance's reference
            self.block.cast(precision)
        self.device_used = context_of(self.block)
        if speed.compile:
            self.block.hybridize(static_alloc=True, static_shape=True)
        self.precision = precision
        self.output_names = [entry["name"] for entry in manifest.outputs]

    @classmethod
    def version(cls) -> str:
        return import_mxnet().__version__

    @classmethod
    def environment(cls) -> dict:
        import os

        mx = import_mxnet()
        features = mx.runtime.Features()
        gpus = mx.context.num_gpus() if features.is_enabled("CUDA") else 0
        return {"version": mx.__version__, "devices": ["cpu"] + [f"gpu({i})" for i in range(gpus)],
                "cuda": "in the build" if features.is_enabled("CUDA") else None,
                "cudnn": "in the build" if features.is_enabled("CUDNN") else None,
                "settings": {"OpenMP threads": os.environ.get("OMP_NUM_THREADS", "default"),
                             "oneDNN (MKLDNN)": features.is_enabled("MKLDNN"),
                             "cuDNN autotune": "on where a run's device is cuda (MXNET_CUDNN_AUTOTUNE_DEFAULT=1)"}}

    def predict(self, feeds: dict[str, np.ndarray]) -> dict[str, np.ndarray]:
        outputs = self._forward(self.block, self.output_names, feeds)
        if self.precision == "float64":  # a float64 reference, checked against the float32 run (mxnet_reference)
            from rosetta.frameworks.mxnet_reference import check_float64_symbol

            mx = import_mxnet()
            laid_out = to_layouts(feeds, self.layouts)
            arrays = [mx.nd.array(laid_out[e["name"]], ctx=self.context, dtype="float32") for e in self.manifest.inputs]
            self.reference_check = check_float64_symbol(mx, self.artifact / SYMBOL_FILE, self.artifact / PARAMS_FILE,
                                                        self.input_names, arrays, self.context).to_json()
        return outputs

    def _forward(self, block, names: list[str], feeds: dict[str, np.ndarray]) -> dict[str, np.ndarray]:
        """`block`'s outputs, named `names`, on `feeds` in this runner's context and precision."""
        mx = import_mxnet()
        check_feeds(feeds, self.manifest.inputs)
        feeds = to_layouts(feeds, self.layouts)
        # MXNet's legacy operators read indices (Gather -> take) as float32; token ids < 2**24 stay exact.
        arrays = [mx.nd.array(feeds[e["name"]], ctx=self.context,
                              dtype=self.precision if np.issubdtype(feeds[e["name"]].dtype, np.integer)
                              else in_float(feeds[e["name"]], self.precision).dtype)
                  for e in self.manifest.inputs]
        result = block(*arrays)
        result = result if isinstance(result, (list, tuple)) else [result]
        # MXNet 1.x has no 0-d arrays: a scalar output (Size, a full reduction) comes as shape (1,)
        scalars = {e["name"] for e in self.manifest.outputs if e.get("shape") == []}
        return from_layouts({name: value.asnumpy().reshape(()) if name in scalars and value.size == 1 else
                             value.asnumpy() for name, value in zip(names, result)}, self.layouts)

    def layer_values(self, feeds: dict[str, np.ndarray], names: list[str]) -> dict[str, np.ndarray]:
        """The outputs of the symbol's nodes called `names` (get_internals(); a name it lacks is left out), in
        this runner's precision: a source model's values of MMdnn's IR nodes (`--locate`)."""
        mx = import_mxnet()
        internals = mx.sym.load(str(self.artifact / SYMBOL_FILE)).get_internals()
        known = set(internals.list_outputs())
        wanted = [name for name in names if f"{name}_output" in known]
        if not wanted:
            return {}
        block = mx.gluon.SymbolBlock(mx.sym.Group([internals[f"{name}_output"] for name in wanted]),
                                     [mx.sym.var(name) for name in self.input_names])
        block.collect_params().load(str(self.artifact / PARAMS_FILE), ctx=self.context, allow_missing=True,
                                    ignore_extra=True)
        if self.precision != "float32":
            block.cast(self.precision)
        return self._forward(block, wanted, feeds)

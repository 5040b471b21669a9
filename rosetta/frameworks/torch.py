"""PyTorch: runs the reference models, converted PyTorch artifacts (onnx2torch's, MMdnn's generated code) and
torch.export archives. The float64 copy of a reference model gives verification its ground truth and its
noise floor.

torch.export.load unpickles weights it stored as pickles (torch.load with weights_only=False) and opaque
constants (pickle.loads). `load_exported` runs it with torch.load forced to weights_only=True and the other
unpickling calls refused, so a .pt2 of plain tensors loads safely and one that needs more asks for
--trust-code.
"""

from __future__ import annotations

import contextlib
import copy
from pathlib import Path

import numpy as np

from rosetta.errors import RosettaError, Unsupported, one_line
from rosetta.frameworks import onnx2torch
from rosetta.frameworks.base import (Runner, artifact_file, check_feeds, from_layouts, import_generated, to_layouts,
                                     weights_dict)
from rosetta.frameworks.speed import PRECISIONS as SPEED_PRECISIONS
from rosetta.frameworks.speed import Speed
from rosetta.trust import TRUST_HINT
from rosetta.trust.pt2 import check_archive

PRECISIONS = ("float32", "float64")


CHANNELS_LAST = "memory_format=torch.channels_last"  # how PyTorch applies each speed setting (settings())
COMPILE = "torch.compile"


def check_speed(speed: dict | None, device: str) -> Speed:
    """The speed variant PyTorch runs: every precision, channels-last and compile (CUDA-only ones on CUDA)."""
    speed = Speed.from_json(speed)
    speed.require("PyTorch", device, SPEED_PRECISIONS, CHANNELS_LAST, COMPILE)
    return speed


def speed_contexts(torch, speed: Speed, device):
    """(autocast context factory, GradScaler or None, TF32 on) for a speed variant; on CUDA, fp32 turns TF32 off
    (PyTorch's cuDNN convolutions use it by default) so that an fp32 row is float32."""
    if device.type == "cuda":  # device-only lines: TF32 is a CUDA setting
        torch.backends.cuda.matmul.allow_tf32 = torch.backends.cudnn.allow_tf32 = speed.precision == "tf32"
    dtype = {"amp-bf16": torch.bfloat16, "amp-fp16": torch.float16}.get(speed.precision)
    autocast = (lambda: torch.autocast(device.type, dtype=dtype)) if dtype else contextlib.nullcontext
    scaler = torch.amp.GradScaler(device.type) if speed.precision == "amp-fp16" else None
    return autocast, scaler, speed.precision == "tf32"


@contextlib.contextmanager
def compile_errors(compiled: bool):
    """torch.compile compiles at the first call, and its errors say only 'Set TORCHDYNAMO_VERBOSE=1': one line
    with the cause instead (e.g. onnx2torch's ConstantOfShape of a run-time shape, which Dynamo cannot trace)."""
    try:
        yield
    except Exception as error:
        if not compiled or not type(error).__module__.startswith("torch._"):
            raise
        cause = error.__cause__ or error
        text = str(cause).strip().splitlines()[0] if str(cause).strip() else ""
        raise RosettaError(f"torch.compile cannot compile this model: {type(cause).__name__}: {text[:200]}; "
                           "run it without --compile") from None


class TorchModuleRunner(Runner):
    """Runs an in-memory torch.nn.Module in eval mode, at float32 or float64 (same weights, cast)."""

    framework = "torch"

    def __init__(self, module, output_names: list[str], precision: str = "float32", threads: int = 0,
                 device: str = "cpu", speed: dict | None = None) -> None:
        import torch

        if precision not in PRECISIONS:
            raise ValueError(f"precision must be one of {PRECISIONS}")
        if threads:
            torch.set_num_threads(threads)
        self.dtype, self.device = getattr(torch, precision), torch_device(device)
        self.module = self.with_speed(copy.deepcopy(module).to(self.dtype).to(self.device).eval(), speed)
        self.output_names = list(output_names)
        # a float64 reference is checked against the module's float32 run (frameworks.torch_reference)
        self.float32_twin = module if precision == "float64" and not speed else None

    def with_speed(self, module, speed: dict | None):
        """The module as the speed variant runs it (channels-last memory, torch.compile), and the autocast."""
        import torch

        self.speed = check_speed(speed, self.device.type)
        self.autocast, _, _ = speed_contexts(torch, self.speed, self.device)
        self.device_used = str(self.device)
        if self.speed.channels_last:
            module = module.to(memory_format=torch.channels_last)
        return torch.compile(module) if self.speed.compile else module

    @classmethod
    def version(cls) -> str:
        import torch

        return torch.__version__

    def predict(self, feeds: dict[str, np.ndarray]) -> dict[str, np.ndarray]:
        outputs = self._forward(list(feeds.values()))
        if self.float32_twin is not None:
            import torch

            from rosetta.frameworks.torch_reference import check_float64_module

            twin = copy.deepcopy(self.float32_twin).float().to(self.device).eval()
            tensors = [torch.from_numpy(np.ascontiguousarray(a)).to(self.device) for a in feeds.values()]
            self.reference_check = check_float64_module(twin, self.module, tensors).to_json()
        return outputs

    @classmethod
    def environment(cls) -> dict:
        import torch

        cuda = torch.cuda.is_available()
        gpus = [f"cuda:{i} ({torch.cuda.get_device_name(i)})" for i in range(torch.cuda.device_count())] if cuda else []
        return {"version": torch.__version__, "devices": ["cpu"] + gpus, "cuda": torch.version.cuda,
                "cudnn": str(torch.backends.cudnn.version()) if torch.backends.cudnn.is_available() else None,
                "settings": {"threads": torch.get_num_threads(), "cudnn.benchmark": "on with --device cuda",
                             "tf32 matmul": torch.backends.cuda.matmul.allow_tf32,
                             "tf32 cudnn": torch.backends.cudnn.allow_tf32,
                             "oneDNN (mkldnn)": torch.backends.mkldnn.is_available()}}

    def _forward(self, arrays: list[np.ndarray]) -> dict[str, np.ndarray]:
        """Floating inputs cast to the runner's precision, integer inputs as they are; outputs by name."""
        import torch

        tensors = []
        for array in arrays:
            tensor = torch.from_numpy(np.ascontiguousarray(array)).to(self.device)
            if self.speed.channels_last and tensor.dim() == 4:
                tensor = tensor.contiguous(memory_format=torch.channels_last)
            tensors.append(tensor.to(self.dtype) if tensor.is_floating_point() else tensor)
        with torch.inference_mode(), self.autocast(), compile_errors(self.speed.compile):
            result = self.module(*tensors)
        result = result if isinstance(result, (tuple, list)) else (result,)
        # an autocast output may be bfloat16 or float16, which numpy lacks or keeps at half precision
        return {name: (value.float() if value.dtype in (torch.bfloat16, torch.float16) else value).detach().cpu().numpy()
                for name, value in zip(self.output_names, result)}


def torch_device(name: str):
    """torch.device for 'cpu' or 'cuda', with cuDNN autotune on (DLF lesson 1) and a clear error without CUDA."""
    import torch

    if name == "cuda":
        if not torch.cuda.is_available():
            raise Unsupported("--device cuda: PyTorch sees no CUDA device (install a CUDA build of torch on a machine "
                              "with a GPU)")
        torch.backends.cudnn.benchmark = True
    return torch.device(name)


@contextlib.contextmanager
def _no_unpickling(label: str):
    import torch
    from torch.export.pt2_archive import _package

    def refuse(*args, **kwargs):
        raise RosettaError(f"{label} holds pickled objects, which run code when loaded; {TRUST_HINT}")

    original_load, original_pickle_obj, original_pickle = torch.load, torch._C._pickle_load_obj, _package.pickle

    def weights_only_load(*args, **kwargs):
        kwargs["weights_only"] = True
        try:
            return original_load(*args, **kwargs)
        except Exception as error:
            if "weights_only" in str(error) or "Unpickl" in str(error):
                refuse()
            raise

    class RefusingPickle:
        loads = staticmethod(refuse)

    torch.load, torch._C._pickle_load_obj, _package.pickle = weights_only_load, refuse, RefusingPickle
    try:
        yield
    finally:
        torch.load, torch._C._pickle_load_obj, _package.pickle = original_load, original_pickle_obj, original_pickle


def load_exported(path: Path, trust_code: bool = False):
    """The ExportedProgram in a .pt2 file."""
    import torch

    guard = contextlib.nullcontext() if trust_code else _no_unpickling(Path(path).name)
    if not trust_code:  # before torch sees the file: its deserializer evaluates text from it as Python
        check_archive(Path(path), Path(path).name)
    try:
        with guard:
            return torch.export.load(str(path))
    except RosettaError:
        raise
    except Exception as error:
        raise RosettaError(f"{Path(path).name} is not a readable torch.export file ({one_line(error)[:200]})") from None


def edit_state_dict(artifact: Path, edit) -> None:
    """Rewrite the weights of a converted PyTorch artifact: edit(name, tensor) -> new tensor or None."""
    import torch

    path = Path(artifact) / onnx2torch.WEIGHTS
    state = torch.load(path, weights_only=True)
    for name, tensor in list(state.items()):
        new = edit(name, tensor)
        if new is not None:
            state[name] = new
    torch.save(state, path)


class TorchArtifactRunner(TorchModuleRunner):
    """Runs a converted PyTorch artifact (onnx2torch: ONNX graph + state_dict, see frameworks.onnx2torch),
    fed in its manifest's input order and layouts."""

    def __init__(self, folder, manifest, threads: int = 0, device: str = "cpu",
                 speed: dict | None = None) -> None:  # no deep copy: ours
        import torch

        if threads:
            torch.set_num_threads(threads)
        # a model whose graph takes float64 computes in float64 (its weights are float64 too): float32 feeds would
        # round its inputs, and overflow where they exceed float32's range
        double = any(entry["dtype"] == "float64" for entry in manifest.inputs)
        self.manifest, self.dtype, self.device = manifest, torch.float64 if double else torch.float32, torch_device(device)
        self.module = self.with_speed(self.load_module(folder, manifest).to(self.device), speed)
        self.output_names = [o["name"] for o in manifest.outputs]

    @staticmethod
    def load_module(folder, manifest):
        return onnx2torch.load_module(folder, manifest)

    def predict(self, feeds: dict[str, np.ndarray]) -> dict[str, np.ndarray]:
        check_feeds(feeds, self.manifest.inputs)
        layouts = self.manifest.converter.get("layouts", {})
        feeds = to_layouts(feeds, layouts)
        return from_layouts(self._forward([feeds[entry["name"]] for entry in self.manifest.inputs]), layouts)


class TorchExportRunner(TorchArtifactRunner):
    """Runs a torch.export archive (.pt2) read from a user's file, without unpickling (load_exported);
    fed like a converted artifact, in its manifest's input order."""

    def __init__(self, folder, manifest, threads: int = 0, device: str = "cpu", precision: str = "float32",
                 trust_code: bool = False) -> None:
        program = load_exported(artifact_file(folder, manifest), trust_code)
        TorchModuleRunner.__init__(self, program.module(), [o["name"] for o in manifest.outputs], precision, threads,
                                   device)
        self.manifest = manifest


class TorchCodeRunner(TorchArtifactRunner):
    """Runs a PyTorch artifact that is generated Python code (MMdnn's PyTorch emitter, see
    convert.mmdnn.emit_torch): importing it runs it, so it needs trust_code (rosetta's own conversions pass
    it; a folder given on the command line needs --trust-code)."""

    def __init__(self, folder, manifest, threads: int = 0, device: str = "cpu", trust_code: bool = False) -> None:
        if not trust_code:
            raise RosettaError(f"{folder} holds generated Python code ({manifest.converter.get('code', 'code')}) that "
                               "running it would execute; pass --trust-code if you trust it")
        super().__init__(folder, manifest, threads, device)

    @staticmethod
    def load_module(folder, manifest):
        return build_kit_module(manifest.artifact_path(folder))


# The artifact of MMdnn's PyTorch emitter (convert.mmdnn.emit_torch): generated `KitModel` code and its weights.
KIT_CODE, KIT_WEIGHTS = "kit_pytorch.py", "weights.npz"


def build_kit_module(folder: Path):
    """The generated KitModel from an artifact folder, with its weights from the .npz (no pickle): MMdnn's code
    loads a pickled .npy through its module-level `load_weights`, which is set to return the .npz's arrays."""
    module = import_generated(Path(folder) / KIT_CODE, "mmdnn_kit_pytorch")
    weights = weights_dict(folder, KIT_WEIGHTS)
    module.load_weights = lambda weight_file=None: weights
    return module.KitModel(None).eval()

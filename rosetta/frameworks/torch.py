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

from rosetta.errors import RosettaError, Unsupported, UntrustedModel, one_line
from rosetta.frameworks import onnx2torch
from rosetta.frameworks.base import (Runner, artifact_file, check_feeds, from_layouts, import_generated, to_layouts,
                                     weights_dict)
from rosetta.frameworks.speed import PRECISIONS as SPEED_PRECISIONS
from rosetta.frameworks.speed import CAPTURE_AFTER, Speed
from rosetta.trust import TRUST_HINT
from rosetta.trust.pt2 import check_archive

PRECISIONS = ("float32", "float64")


# how PyTorch applies each speed setting (Speed.require, Speed.settings)
SPEED_WAYS = {"channels_last": "memory_format=torch.channels_last", "compile": "torch.compile",
              "eager": "eager (PyTorch's default)", "cuda_graphs": "torch.cuda.CUDAGraph of the whole step",
              "resident_data": "staged once on the device (or pinned, copied one step ahead); loss read at the end"}
REDUCE_OVERHEAD = "torch.compile(mode='reduce-overhead'): its CUDA graphs"  # --cuda-graphs with --compile


def check_speed(speed: dict | None, device: str) -> Speed:
    """The speed variant PyTorch runs: every precision and switch (CUDA-only ones on CUDA)."""
    speed = Speed.from_json(speed)
    speed.require("PyTorch", device, SPEED_PRECISIONS, **SPEED_WAYS)
    return speed


# The same names in rosetta.frameworks.jax and .tensorflow: what a run asks of the framework under it (Keras's
# backend) to apply a precision and to say what it did: set_precision, precision_in_force, check_device,
# device_of, devices, reset_peak_memory, peak_memory_mb.


def set_precision(precision: str) -> None:
    """TF32 on for tf32 and off otherwise, for CUDA matmuls and for cuDNN (convolutions and RNNs; PyTorch leaves
    cuDNN's on by default, so without this an fp32 row on a GPU is TF32). Set on every device, a CPU ignoring
    it, so that the rows of either read back the same settings."""
    import torch

    torch.backends.cuda.matmul.allow_tf32 = torch.backends.cudnn.allow_tf32 = precision == "tf32"


def precision_in_force(autocast_dtype=None) -> dict:
    """The arithmetic float32 work gets, read back from torch's settings, and the autocast dtype if any."""
    import torch

    return {"cuda matmul": "tf32" if torch.backends.cuda.matmul.allow_tf32 else "float32",
            "cudnn": "tf32" if torch.backends.cudnn.allow_tf32 else "float32",
            **({"autocast": str(autocast_dtype).removeprefix("torch.")} if autocast_dtype is not None else {})}


def check_device(device: str) -> None:
    torch_device(device)


def device_of(tensor) -> str:
    return str(tensor.device)


def module_device(module, default) -> str:
    """Where a module's weights are, read back from them (`default` for a module without any)."""
    import itertools

    tensor = next(itertools.chain(module.parameters(), module.buffers()), None)
    return device_of(tensor) if tensor is not None else str(default)


def _on(flag: bool) -> str:
    return "on" if flag else "off"


def devices() -> list[str]:
    """The CPU and every CUDA device PyTorch sees."""
    import torch

    count = torch.cuda.device_count() if torch.cuda.is_available() else 0
    return ["cpu"] + [f"cuda:{i} ({torch.cuda.get_device_name(i)})" for i in range(count)]


def reset_peak_memory(device: str) -> None:
    import torch

    if device == "cuda":  # device-only: the CUDA caching allocator's statistic
        torch.cuda.reset_peak_memory_stats()


def peak_memory_mb(device: str) -> float | None:
    """Peak CUDA memory allocated since the last reset_peak_memory (torch_device resets it); None on the CPU."""
    import torch

    return torch.cuda.max_memory_allocated() / 2**20 if device == "cuda" else None


def speed_contexts(torch, speed: Speed, device):
    """(autocast context factory, GradScaler or None, the precision in force) for a speed variant: TF32 only
    for tf32, so that an fp32 row is float32. Under CUDA graphs autocast keeps no cast cache (its cached copies
    would be the capture's)."""
    set_precision(speed.precision)
    dtype = {"amp-bf16": torch.bfloat16, "amp-fp16": torch.float16}.get(speed.precision)
    autocast = ((lambda: torch.autocast(device.type, dtype=dtype, cache_enabled=not speed.cuda_graphs)) if dtype
                else contextlib.nullcontext)
    scaler = torch.amp.GradScaler(device.type) if speed.precision == "amp-fp16" else None
    return autocast, scaler, precision_in_force(dtype)


def compiled(torch, module, speed: Speed):
    """The module as --compile runs it: torch.compile, in mode reduce-overhead (CUDA graphs of its own) with
    --cuda-graphs; else the module itself. Dynamo starts afresh (its cache of compiled frames and its counters),
    so that compiled_frames reads what this module compiled, not what an earlier one in this process left."""
    if not speed.compile:
        return module
    from torch._dynamo.utils import counters

    torch._dynamo.reset()
    counters.clear()
    return torch.compile(module, mode="reduce-overhead") if speed.cuda_graphs else torch.compile(module)


def compiled_frames() -> dict:
    """What torch.compile did compile, read back from Dynamo's counters: a frame it cannot trace runs eagerly
    whole (Dynamo does not trace torch.nn.GRU: the reference GRU's forward is such a frame) or in pieces, and a
    row that says "compiled" should say how much was."""
    from torch._dynamo.utils import counters

    reasons = sorted({reason.strip().splitlines()[0] for kind in ("unimplemented", "graph_break")
                      for reason in counters[kind]})
    frames = counters["frames"]
    return {"frames compiled": f"{frames.get('ok', 0)} of {frames.get('total', 0)}",
            **({"eager because": reasons} if reasons else {})}


def to_tensor(torch, array: np.ndarray, device, dtype, channels_last: bool = False):
    """A numpy array as the model takes it: on `device`, floating point in `dtype`, 4-D in channels-last memory
    where asked; integers (token ids) as they are."""
    tensor = torch.from_numpy(np.ascontiguousarray(array)).to(device)
    if channels_last and tensor.dim() == 4:
        tensor = tensor.contiguous(memory_format=torch.channels_last)
    return tensor.to(dtype) if tensor.is_floating_point() else tensor


class CapturedStep:
    """`step(*tensors)` as one CUDA graph (--cuda-graphs): its first CAPTURE_AFTER calls run eagerly on a side
    stream (cuDNN's autotuning and an optimiser's lazy state happen there), the next captures it on copies of
    its arguments and replays it, and every later call copies its arguments into those copies and replays. The
    result is the graph's own tensors, overwritten by the next call. CUDA only (device-only class)."""

    def __init__(self, step) -> None:
        self.step, self.calls, self.graph, self.inputs, self.outputs = step, 0, None, [], None

    def __call__(self, *tensors):
        import torch

        if self.graph is None and self.calls < CAPTURE_AFTER:
            self.calls += 1
            side = torch.cuda.Stream()
            side.wait_stream(torch.cuda.current_stream())
            with torch.cuda.stream(side):
                result = self.step(*tensors)
            torch.cuda.current_stream().wait_stream(side)
            return result
        if self.graph is None:
            self.inputs, self.graph = [tensor.clone() for tensor in tensors], torch.cuda.CUDAGraph()
            with torch.cuda.graph(self.graph):
                self.outputs = self.step(*self.inputs)
        else:
            for static, tensor in zip(self.inputs, tensors):
                static.copy_(tensor, non_blocking=True)
        self.graph.replay()
        return self.outputs


class CudaEventClock:
    """Stamps recorded on the GPU's stream (CUDA events): each step's time as the device spent it, read after
    the window's closing synchronisation (rosetta.timing.time_window)."""

    def stamp(self):
        import torch

        event = torch.cuda.Event(enable_timing=True)
        event.record()
        return event

    def seconds(self, start, end) -> float:
        return start.elapsed_time(end) / 1000


def clock_for(device):
    """The clock of a window of steps on `device`: CUDA events on a GPU, the host's clock on a CPU."""
    from rosetta.timing import HostClock

    return CudaEventClock() if device.type == "cuda" else HostClock()


def synchronizer(device):
    import torch

    return torch.cuda.synchronize if device.type == "cuda" else (lambda: None)


class ResidentBatches:
    """A run's batches (lists of tensors) held for --resident-data: on the device where they fit in a quarter of
    its free memory, else in pinned host memory with each batch's copy to the device issued on a side stream
    one batch ahead, overlapping the step before it; on a CPU the tensors as made. `where` says which."""

    def __init__(self, batches: list[list], device, budget_bytes: int | None = None) -> None:
        import torch

        self.device, self.stream, self.ahead = device, None, {}
        self.batches, self.where = batches, "tensors made once"
        if device.type != "cuda":
            return
        size = sum(tensor.numel() * tensor.element_size() for batch in batches for tensor in batch)
        budget = torch.cuda.mem_get_info(device)[0] // 4 if budget_bytes is None else budget_bytes
        if size <= budget:
            self.batches, self.where = [[tensor.to(device) for tensor in batch] for batch in batches], "on the device"
        else:
            self.batches = [[tensor.pin_memory() for tensor in batch] for batch in batches]
            self.stream, self.where = torch.cuda.Stream(device), "pinned host memory, copied one batch ahead"

    def __len__(self) -> int:
        return len(self.batches)

    def __getitem__(self, index: int) -> list:
        if self.stream is None:
            return self.batches[index]
        import torch

        batch = self.ahead.pop(index, None) or self._copy(index)
        current = torch.cuda.current_stream(self.device)
        current.wait_stream(self.stream)  # this batch's copy, issued a step ago, is done
        for tensor in batch:
            tensor.record_stream(current)
        if index + 1 < len(self.batches):
            self.ahead[index + 1] = self._copy(index + 1)
        return batch

    def _copy(self, index: int) -> list:
        import torch

        with torch.cuda.stream(self.stream):
            return [tensor.to(self.device, non_blocking=True) for tensor in self.batches[index]]


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
        raise RosettaError(f"torch.compile cannot compile this model: {one_line(cause)[:300]}; "
                           "run it without compile=") from None


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
        self.autocast, _, self.precision_in_force = speed_contexts(torch, self.speed, self.device)
        self.device_used = module_device(module, self.device)
        if self.speed.channels_last:
            module = module.to(memory_format=torch.channels_last)
        return compiled(torch, module, self.speed)

    def peak_device_mb(self) -> float | None:
        return peak_memory_mb(self.device.type)

    def synchronize(self) -> None:
        synchronizer(self.device)()

    def clock(self):
        return clock_for(self.device)

    def settings(self) -> dict:
        graphs = REDUCE_OVERHEAD if self.speed.compile else SPEED_WAYS["cuda_graphs"].replace("step", "forward")
        return {**super().settings(), **self.speed.settings(**{**SPEED_WAYS, "cuda_graphs": graphs}),
                **({"torch.compile": compiled_frames()} if self.speed.compile else {})}

    def timed_call(self, feeds: dict[str, np.ndarray]):
        """What a benchmark times: predict(feeds), host arrays in and out; with --resident-data the forward on
        inputs staged on the device once, its outputs left there; with --cuda-graphs the forward replayed as one
        CUDA graph (CapturedStep; torch.compile's own with --compile)."""
        graphed = self.speed.cuda_graphs and not self.speed.compile
        forward = CapturedStep(lambda *tensors: self._run(tensors)) if graphed else (lambda *tensors: self._run(tensors))
        if self.speed.resident_data:
            staged = self._tensors(self.input_arrays(feeds))
            return lambda: forward(*staged)
        if not graphed:
            return lambda: self.predict(feeds)
        return lambda: self._to_host(forward(*self._tensors(self.input_arrays(feeds))))

    @classmethod
    def version(cls) -> str:
        import torch

        return torch.__version__

    def input_arrays(self, feeds: dict[str, np.ndarray]) -> list[np.ndarray]:
        """The model's inputs, in the order its forward takes them."""
        return list(feeds.values())

    def predict(self, feeds: dict[str, np.ndarray]) -> dict[str, np.ndarray]:
        outputs = self._forward(self.input_arrays(feeds))
        if self.float32_twin is not None:
            import torch

            from rosetta.frameworks.torch_reference import check_float64_module

            twin = copy.deepcopy(self.float32_twin).float().to(self.device).eval()
            tensors = [torch.from_numpy(np.ascontiguousarray(a)).to(self.device) for a in self.input_arrays(feeds)]
            self.reference_check = check_float64_module(twin, self.module, tensors).to_json()
        return outputs

    @classmethod
    def environment(cls) -> dict:
        import torch

        return {"version": torch.__version__, "devices": devices(), "cuda": torch.version.cuda,
                "cudnn": str(torch.backends.cudnn.version()) if torch.backends.cudnn.is_available() else None,
                "settings": {"threads": torch.get_num_threads(), "cudnn.benchmark": "on where a run's device is cuda",
                             "tf32": "off unless a run's precision is tf32 (PyTorch's defaults: matmul "
                                     f"{_on(torch.backends.cuda.matmul.allow_tf32)}, cuDNN "
                                     f"{_on(torch.backends.cudnn.allow_tf32)})",
                             "oneDNN (mkldnn)": torch.backends.mkldnn.is_available()}}

    def _forward(self, arrays: list[np.ndarray]) -> dict[str, np.ndarray]:
        """Floating inputs cast to the runner's precision, integer inputs as they are; outputs by name."""
        return self._to_host(self._run(self._tensors(arrays)))

    def _tensors(self, arrays: list[np.ndarray]) -> list:
        import torch

        return [to_tensor(torch, array, self.device, self.dtype, self.speed.channels_last) for array in arrays]

    def _run(self, tensors) -> tuple:
        import torch

        with torch.inference_mode(), self.autocast(), compile_errors(self.speed.compile):
            result = self.module(*tensors)
        return tuple(result) if isinstance(result, (tuple, list)) else (result,)

    def _to_host(self, result: tuple) -> dict[str, np.ndarray]:
        import torch

        # an autocast output may be bfloat16 or float16, which numpy lacks or keeps at half precision
        return {name: (value.float() if value.dtype in (torch.bfloat16, torch.float16) else value).detach().cpu().numpy()
                for name, value in zip(self.output_names, result)}


def torch_device(name: str):
    """torch.device for 'cpu' or 'cuda', with cuDNN autotune on (DLF lesson 1), the peak memory statistic reset,
    and a clear error without CUDA."""
    import torch

    if name == "cuda":  # device-only lines
        if not torch.cuda.is_available():
            raise Unsupported("device='cuda': PyTorch sees no CUDA device (install a CUDA build of torch on a machine "
                              "with a GPU)")
        torch.backends.cudnn.benchmark = True
    reset_peak_memory(name)  # the peak of what is built from here on
    return torch.device(name)


@contextlib.contextmanager
def _no_unpickling(label: str):
    import torch
    from torch.export.pt2_archive import _package

    def refuse(*args, **kwargs):
        raise UntrustedModel(f"{label} holds pickled objects, which run code when loaded; {TRUST_HINT}")

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

    def input_arrays(self, feeds: dict[str, np.ndarray]) -> list[np.ndarray]:
        check_feeds(feeds, self.manifest.inputs)
        feeds = to_layouts(feeds, self.manifest.converter.get("layouts", {}))
        return [feeds[entry["name"]] for entry in self.manifest.inputs]

    def predict(self, feeds: dict[str, np.ndarray]) -> dict[str, np.ndarray]:
        return from_layouts(self._forward(self.input_arrays(feeds)), self.manifest.converter.get("layouts", {}))


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
            raise UntrustedModel(f"{folder} holds generated Python code ({manifest.converter.get('code', 'code')}) that "
                               "running it would execute; pass trust_code=True if you trust it")
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

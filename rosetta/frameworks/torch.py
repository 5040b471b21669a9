"""PyTorch: runs the reference models (and, later, converted PyTorch artifacts). The float64 copy of a
reference model gives verification its ground truth and its noise floor."""

from __future__ import annotations

import copy
from pathlib import Path

import numpy as np

from rosetta.frameworks.base import Runner

PRECISIONS = ("float32", "float64")


class TorchModuleRunner(Runner):
    """Runs an in-memory torch.nn.Module in eval mode, at float32 or float64 (same weights, cast)."""

    framework = "torch"

    def __init__(self, module, output_names: list[str], precision: str = "float32", threads: int = 0,
                 device: str = "cpu") -> None:
        import torch

        if precision not in PRECISIONS:
            raise ValueError(f"precision must be one of {PRECISIONS}")
        if threads:
            torch.set_num_threads(threads)
        self.dtype, self.device = getattr(torch, precision), torch_device(device)
        self.module = copy.deepcopy(module).to(self.dtype).to(self.device).eval()
        self.output_names = list(output_names)

    @classmethod
    def version(cls) -> str:
        import torch

        return torch.__version__

    def predict(self, feeds: dict[str, np.ndarray]) -> dict[str, np.ndarray]:
        return self._forward(list(feeds.values()))

    def _forward(self, arrays: list[np.ndarray]) -> dict[str, np.ndarray]:
        """Floating inputs cast to the runner's precision, integer inputs as they are; outputs by name."""
        import torch

        tensors = []
        for array in arrays:
            tensor = torch.from_numpy(np.ascontiguousarray(array)).to(self.device)
            tensors.append(tensor.to(self.dtype) if tensor.is_floating_point() else tensor)
        with torch.inference_mode():
            result = self.module(*tensors)
        result = result if isinstance(result, (tuple, list)) else (result,)
        return {name: value.detach().cpu().numpy() for name, value in zip(self.output_names, result)}


def torch_device(name: str):
    """torch.device for 'cpu' or 'cuda', with cuDNN autotune on (DLF lesson 1) and a clear error without CUDA."""
    import torch

    if name == "cuda":
        if not torch.cuda.is_available():
            from rosetta.errors import RosettaError

            raise RosettaError("--device cuda: PyTorch sees no CUDA device (install a CUDA build of torch)")
        torch.backends.cudnn.benchmark = True
    return torch.device(name)


def edit_state_dict(artifact: Path, edit) -> None:
    """Rewrite the weights of a converted PyTorch artifact: edit(name, tensor) -> new tensor or None."""
    import torch

    from rosetta.convert.onnx_to_torch import WEIGHTS

    path = Path(artifact) / WEIGHTS
    state = torch.load(path, weights_only=True)
    for name, tensor in list(state.items()):
        new = edit(name, tensor)
        if new is not None:
            state[name] = new
    torch.save(state, path)


class TorchArtifactRunner(TorchModuleRunner):
    """Runs a converted PyTorch artifact (onnx2torch: ONNX graph + state_dict, see convert.onnx_to_torch),
    fed in its manifest's input order and layouts."""

    def __init__(self, folder, manifest, threads: int = 0, device: str = "cpu") -> None:  # no deep copy: ours
        import torch

        if threads:
            torch.set_num_threads(threads)
        self.manifest, self.dtype, self.device = manifest, torch.float32, torch_device(device)
        self.module = self.load_module(folder, manifest).to(self.device)
        self.output_names = [o["name"] for o in manifest.outputs]

    @staticmethod
    def load_module(folder, manifest):
        from rosetta.convert.onnx_to_torch import load_module

        return load_module(folder, manifest)

    def predict(self, feeds: dict[str, np.ndarray]) -> dict[str, np.ndarray]:
        from rosetta.frameworks.base import check_feeds, from_layouts, to_layouts

        check_feeds(feeds, self.manifest.inputs)
        layouts = self.manifest.converter.get("layouts", {})
        feeds = to_layouts(feeds, layouts)
        return from_layouts(self._forward([feeds[entry["name"]] for entry in self.manifest.inputs]), layouts)


class TorchExportRunner(TorchArtifactRunner):
    """Runs a torch.export archive (.pt2) read from a user's file, without unpickling (rosetta.sources.torch);
    fed like a converted artifact, in its manifest's input order."""

    def __init__(self, folder, manifest, threads: int = 0, device: str = "cpu", precision: str = "float32",
                 trust_code: bool = False) -> None:
        from rosetta.frameworks.base import artifact_file
        from rosetta.sources.torch import load_exported

        program = load_exported(artifact_file(folder, manifest), trust_code)
        TorchModuleRunner.__init__(self, program.module(), [o["name"] for o in manifest.outputs], precision, threads,
                                   device)
        self.manifest = manifest


class TorchCodeRunner(TorchArtifactRunner):
    """Runs a PyTorch artifact that is generated Python code (MMdnn's PyTorch emitter, see
    convert.mmdnn.emit_torch): importing it runs it, so it needs trust_code (rosetta's own conversions pass
    it; a folder given on the command line needs --trust-code)."""

    def __init__(self, folder, manifest, threads: int = 0, device: str = "cpu", trust_code: bool = False) -> None:
        from rosetta.errors import RosettaError

        if not trust_code:
            raise RosettaError(f"{folder} holds generated Python code ({manifest.converter.get('code', 'code')}) that "
                               "running it would execute; pass --trust-code if you trust it")
        super().__init__(folder, manifest, threads, device)

    @staticmethod
    def load_module(folder, manifest):
        from rosetta.convert.mmdnn.emit_torch import build_module

        return build_module(manifest.artifact_path(folder))

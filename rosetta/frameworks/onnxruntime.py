"""ONNX Runtime: runs an ONNX artifact on the CPU execution provider (CUDA EP where installed and asked for).

`optimization="disabled"` runs the graph exactly as written. Verification uses it because ORT's optimiser
rewrites graphs in ways that can hide a wrong artifact: it deletes Dropout nodes even when their
training_mode input is true, so a model exported in training mode would look correct.
"""

from __future__ import annotations

from pathlib import Path

import numpy as np

from rosetta.errors import Unsupported
from rosetta.frameworks.base import Runner, artifact_file, check_feeds, from_layouts, to_layouts
from rosetta.frameworks.speed import Speed


OPTIMIZATION_LEVELS = {
    "disabled": lambda ort: ort.GraphOptimizationLevel.ORT_DISABLE_ALL,
    "basic": lambda ort: ort.GraphOptimizationLevel.ORT_ENABLE_BASIC,
    "all": lambda ort: ort.GraphOptimizationLevel.ORT_ENABLE_ALL,
}


class OnnxRuntimeRunner(Runner):
    framework = "onnxruntime"

    def __init__(self, folder: Path, manifest, threads: int = 0, device: str = "cpu",
                 optimization: str = "all", speed: dict | None = None, precision: str = "float32") -> None:
        import onnxruntime as ort

        self.manifest, self.layouts = manifest, manifest.converter.get("layouts", {})
        self.evaluator = None
        if precision == "float64":  # the float64 reference of an ONNX model (ONNX Runtime has no float64 Conv)
            self._float64(folder, manifest)
            return
        speed = Speed.from_json(speed)
        speed.require("ONNX Runtime", device, ("fp32", "tf32"), compile="graph optimisation level all",
                      precision_why="it runs the graph's own dtypes (float16 or bfloat16 is another conversion)")
        if speed.compile:
            optimization = "all"

        options = ort.SessionOptions()
        options.graph_optimization_level = OPTIMIZATION_LEVELS[optimization](ort)
        options.intra_op_num_threads = threads  # 0: ONNX Runtime's default (one per physical core)
        options.log_severity_level = 3
        providers = ["CPUExecutionProvider"]
        if device == "cuda" and hasattr(ort, "preload_dlls"):  # device-only: the CUDA 13 and cuDNN libraries
            ort.preload_dlls()  # of the nvidia-* wheels, which ONNX Runtime does not find on its own
        if device == "cuda":  # TF32 only for tf32: the CUDA provider's default is on, so fp32 turns it off
            providers = [("CUDAExecutionProvider", {"cudnn_conv_algo_search": "EXHAUSTIVE",
                                                    "use_tf32": "1" if speed.precision == "tf32" else "0"})] + providers
        self.session = ort.InferenceSession(str(artifact_file(folder, manifest)), options, providers=providers)
        if device == "cuda" and "CUDAExecutionProvider" not in self.session.get_providers():
            # ONNX Runtime only warns and runs on the CPU: a row labelled cuda would be a CPU timing
            raise Unsupported("--device cuda: ONNX Runtime has no working CUDA execution provider here (available: "
                              f"{', '.join(ort.get_available_providers())}); install onnxruntime-gpu on a machine "
                              "with a GPU")
        self.output_names = [o.name for o in self.session.get_outputs()]
        self.device_used = ", ".join(self.session.get_providers())
        cuda = self.session.get_provider_options().get("CUDAExecutionProvider")  # the options in force
        self.precision_in_force = {"matmul and convolution": ("tf32" if cuda.get("use_tf32") == "1" else "float32")
                                   if cuda else "float32 (CPU provider)"}

    @classmethod
    def version(cls) -> str:
        import onnxruntime as ort

        return ort.__version__

    @classmethod
    def environment(cls) -> dict:
        """A provider a build lists is one it was built with, not a device it found: onnxruntime-gpu lists
        CUDAExecutionProvider on a machine without a GPU."""
        import onnxruntime as ort

        providers = ort.get_available_providers()
        return {"version": ort.__version__, "devices": ["cpu"] + (["cuda"] if ort.get_device() == "GPU" else []),
                "cuda": "in the build" if "CUDAExecutionProvider" in providers else None, "cudnn": None,
                "settings": {"providers": ", ".join(providers), "graph optimisation": "all",
                             "intra-op threads": "one per physical core", "cuda conv algo search": "EXHAUSTIVE"}}

    def _float64(self, folder: Path, manifest) -> None:
        """The graph in float64 (onnx_graph.float64_model), run by ONNX's reference evaluator: the spec's own
        implementation of every op, so the model's float32 noise floor can be measured as a PyTorch model's is."""
        import onnx
        from onnx.reference import ReferenceEvaluator

        from rosetta.frameworks.onnx_graph import float64_model

        self.device_used = "cpu"
        model = onnx.load(str(artifact_file(folder, manifest)))
        self.evaluator = ReferenceEvaluator(float64_model(model))
        self.output_names = [o.name for o in model.graph.output]

    def predict(self, feeds: dict[str, np.ndarray]) -> dict[str, np.ndarray]:
        check_feeds(feeds, self.manifest.inputs)
        feeds = to_layouts(feeds, self.layouts)
        if self.evaluator is not None:
            wide = {name: value.astype(np.float64) if value.dtype == np.float32 else value
                    for name, value in feeds.items()}
            values = [np.asarray(value) for value in self.evaluator.run(self.output_names, wide)]
        else:
            values = self.session.run(self.output_names, feeds)
        return from_layouts(dict(zip(self.output_names, values)), self.layouts)

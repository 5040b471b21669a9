"""ONNX Runtime: runs an ONNX artifact on the CPU execution provider (CUDA EP where installed and asked for)."""

from __future__ import annotations

from pathlib import Path

import numpy as np

from rosetta.frameworks.base import Runner, artifact_file, check_feeds


class OnnxRuntimeRunner(Runner):
    framework = "onnxruntime"

    def __init__(self, folder: Path, manifest, threads: int = 0, device: str = "cpu") -> None:
        import onnxruntime as ort

        self.manifest = manifest
        options = ort.SessionOptions()
        options.intra_op_num_threads = threads  # 0: ONNX Runtime's default (one per physical core)
        options.log_severity_level = 3
        providers = ["CPUExecutionProvider"]
        if device == "cuda":
            providers = [("CUDAExecutionProvider", {"cudnn_conv_algo_search": "EXHAUSTIVE"})] + providers
        self.session = ort.InferenceSession(str(artifact_file(folder, manifest)), options, providers=providers)
        self.output_names = [o.name for o in self.session.get_outputs()]

    @classmethod
    def version(cls) -> str:
        import onnxruntime as ort

        return ort.__version__

    def predict(self, feeds: dict[str, np.ndarray]) -> dict[str, np.ndarray]:
        check_feeds(feeds, self.manifest.inputs)
        values = self.session.run(self.output_names, feeds)
        return dict(zip(self.output_names, values))

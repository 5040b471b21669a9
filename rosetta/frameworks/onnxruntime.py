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
        self.float64_model = None
        if precision == "float64":  # the float64 reference of an ONNX model (ONNX Runtime has no float64 Conv)
            self.float64_model, self.device_used = artifact_file(folder, manifest), "cpu"
            return
        speed = Speed.from_json(speed)
        speed.require("ONNX Runtime", device, ("fp32", "tf32"), compile="graph optimisation level all",
                      precision_why="it runs the graph's own dtypes (float16 or bfloat16 is another conversion)")
        if speed.compile:
            optimization = "all"

        options = ort.SessionOptions()
        options.graph_optimization_level = OPTIMIZATION_LEVELS[optimization](ort)
        options.intra_op_num_threads = threads  # 0: ONNX Runtime's default (one per physical core)
        # fatal only: rosetta reports every error ONNX Runtime raises itself, with its message; ORT's own log line
        # of it (in colour, before rosetta's line) said the same twice
        options.log_severity_level = 4
        providers = ["CPUExecutionProvider"]
        if device == "cuda" and hasattr(ort, "preload_dlls"):  # device-only: the CUDA 13 and cuDNN libraries
            ort.preload_dlls()  # of the nvidia-* wheels, which ONNX Runtime does not find on its own
        if device == "cuda":  # TF32 only for tf32: the CUDA provider's default is on, so fp32 turns it off
            providers = [("CUDAExecutionProvider", {"cudnn_conv_algo_search": "EXHAUSTIVE",
                                                    "use_tf32": "1" if speed.precision == "tf32" else "0"})] + providers
        self.session = ort.InferenceSession(str(artifact_file(folder, manifest)), options, providers=providers)
        if device == "cuda" and "CUDAExecutionProvider" not in self.session.get_providers():
            # ONNX Runtime only warns and runs on the CPU: a row labelled cuda would be a CPU timing
            raise Unsupported("device='cuda': ONNX Runtime has no working CUDA execution provider here (available: "
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

    def predict(self, feeds: dict[str, np.ndarray]) -> dict[str, np.ndarray]:
        check_feeds(feeds, self.manifest.inputs)
        feeds = to_layouts(feeds, self.layouts)
        if self.float64_model is not None:
            from rosetta.frameworks.onnx_reference import float64_outputs

            outputs, self.reference_check = float64_outputs(self.float64_model, feeds)
            return from_layouts(outputs, self.layouts)
        values = bounded_run(self.session, self.output_names, feeds)
        return from_layouts(dict(zip(self.output_names, values)), self.layouts)


def bounded_run(session, names: list[str], feeds: dict) -> list:
    """session.run, stoppable. In rosetta's own process ONNX Runtime would run in-process, where neither
    --timeout nor Ctrl-C reaches it (a Loop of 1e12 iterations ran until SIGKILL): there it runs on a thread whose
    RunOptions.terminate is set when the timeout passes or Ctrl-C/SIGTERM arrives, which ONNX Runtime checks
    between nodes, subgraph iterations included. In a worker process (timings, slots) the pool bounds the job."""
    import threading
    import time

    import onnxruntime as ort

    from rosetta.errors import WorkerTimedOut
    from rosetta.execution import started_by_pool, timeout_seconds

    if started_by_pool():
        return session.run(names, feeds)
    options, outcome, done = ort.RunOptions(), {}, threading.Event()
    options.log_severity_level = 4  # "Exiting due to terminate flag" is ours to say

    def run() -> None:
        try:
            outcome["values"] = session.run(names, feeds, options)
        except Exception as error:  # noqa: BLE001 - raised again in the caller's thread
            outcome["error"] = error
        finally:
            done.set()

    # waited on through an Event, not Thread.join: a join that Ctrl-C interrupts can leave is_alive() False while
    # the thread still runs (CPython gh-90882), and an interpreter that exits under a running ONNX Runtime aborts
    deadline = time.monotonic() + timeout_seconds()
    try:
        threading.Thread(target=run, name="onnxruntime-run", daemon=True).start()
        while not done.wait(0.05):
            if time.monotonic() > deadline:
                raise WorkerTimedOut(f"ONNX Runtime timed out after {timeout_seconds():g} s (timeout=)")
    except BaseException:  # Ctrl-C, SIGTERM (rosetta.processes), the timeout: stop it before going on
        options.terminate = True  # ONNX Runtime checks it between nodes, a Loop's iterations included
        done.wait(10)
        raise
    if "error" in outcome:
        raise outcome["error"]
    return outcome["values"]

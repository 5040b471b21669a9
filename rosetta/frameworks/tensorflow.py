"""TensorFlow: runs a SavedModel through its serving_default signature.

Where the converter changed an input's or output's layout (onnx2tf turns NCHW into NHWC unless told to
keep it), the manifest records it per tensor ("layouts": {name: "channels_last"}), and the runner transposes
at the boundary, so callers feed and receive the same arrays as the PyTorch model.
"""

from __future__ import annotations

from pathlib import Path

import numpy as np

from rosetta.frameworks.base import Runner, artifact_file, check_feeds, from_layouts, to_layouts
from rosetta.frameworks.speed import Speed


def import_tensorflow():
    import os

    os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "3")
    import tensorflow as tf

    return tf


def set_threads(threads: int) -> None:
    """TensorFlow's intra- and inter-op pools; only effective before TensorFlow runs its first op."""
    tf = import_tensorflow()
    try:
        tf.config.threading.set_intra_op_parallelism_threads(threads)
        tf.config.threading.set_inter_op_parallelism_threads(threads)
    except RuntimeError:  # already initialised in this process: keep what it has
        pass


TF_DEVICES = {"cpu": "/CPU:0", "cuda": "/GPU:0"}  # where placement() pins a run


# The same names as rosetta.frameworks.torch and .jax: set_precision, precision_in_force, check_device,
# device_of, devices, reset_peak_memory, peak_memory_mb (what Keras on the TensorFlow backend asks of it too).


def set_precision(precision: str) -> None:
    """TensorFlow computes float32 matmuls and convolutions in TF32 on GPUs by default: on only for tf32, so that
    an fp32 row is float32. Set on every device (a CPU ignores it), so either device's rows read it back."""
    import_tensorflow().config.experimental.enable_tensor_float_32_execution(precision == "tf32")


def precision_in_force() -> dict:
    enabled = import_tensorflow().config.experimental.tensor_float_32_execution_enabled()
    return {"matmul and convolution": "tf32" if enabled else "float32"}


def check_device(device: str) -> None:
    """Refuse (Unsupported) a GPU TensorFlow does not see, instead of running on the CPU under a cuda label."""
    from rosetta.errors import Unsupported

    if device == "cuda" and not import_tensorflow().config.list_physical_devices("GPU"):
        raise Unsupported("device='cuda': TensorFlow sees no GPU (tensorflow-cpu, or no CUDA driver); install "
                          "tensorflow[and-cuda] on a machine with a GPU")


def device_of(tensor) -> str:
    """Where TensorFlow put a tensor or variable, as it says ('/job:localhost/.../device:GPU:0' -> 'GPU:0')."""
    return tensor.device.rpartition("device:")[2] or "not placed"


def devices() -> list[str]:
    """Every device TensorFlow sees ('cpu:0', 'gpu:0')."""
    return [device.name.replace("/physical_device:", "").lower()
            for device in import_tensorflow().config.list_physical_devices()]


def reset_peak_memory(device: str) -> None:
    if device == "cuda":  # device-only: TensorFlow keeps no statistics for the CPU
        import_tensorflow().config.experimental.reset_memory_stats("GPU:0")


def peak_memory_mb(device: str) -> float | None:
    if device != "cuda":
        return None
    return import_tensorflow().config.experimental.get_memory_info("GPU:0")["peak"] / 2**20


def placement(device: str):
    """tf.device for `device` ("cpu" or "cuda"): TensorFlow places ops on a GPU whenever it has one, so a cpu
    row is pinned to the CPU, and a cuda row is refused (check_device) where TensorFlow sees no GPU."""
    check_device(device)
    return import_tensorflow().device(TF_DEVICES[device])


def check_saved_model(path: Path, trust_code: bool, label: str = "") -> None:
    """Before TensorFlow loads the SavedModel folder `path`: refuse it with one line unless every op it can run
    is a pure tensor op (rosetta.trust.savedmodel), or `trust_code`. Reads saved_model.pb (or .pbtxt) with
    TensorFlow's own parser, so the check sees what tf.saved_model.load will run."""
    from rosetta.errors import RosettaError
    from rosetta.trust.savedmodel import check_saved_model_proto

    if trust_code:
        return
    import_tensorflow()
    from tensorflow.python.saved_model.loader_impl import parse_saved_model

    label = label or str(path)
    try:
        proto = parse_saved_model(str(path))
    except Exception as error:
        first = (str(error).strip().splitlines() or [type(error).__name__])[0][:200]
        raise RosettaError(f"{label} is not a readable SavedModel ({first})") from None
    check_saved_model_proto(proto, label, trust_code)


def check_saved_model_job(argument: dict) -> dict:
    """Job (rosetta.execution): check_saved_model on {"path", "trust_code", "label"}."""
    check_saved_model(Path(argument["path"]), bool(argument.get("trust_code")), argument.get("label", ""))
    return {"checked": not argument.get("trust_code")}


def tensorflow_environment(version: str) -> dict:
    """TensorFlow's devices, its build's CUDA and cuDNN, and its threading and math settings (Keras on the
    TensorFlow backend shares them)."""
    import os

    tf = import_tensorflow()
    build = tf.sysconfig.get_build_info()
    return {"version": version, "devices": devices(), "cuda": build.get("cuda_version") if build.get("is_cuda_build") else None,
            "cudnn": build.get("cudnn_version") if build.get("is_cuda_build") else None,
            "settings": {"intra-op threads": tf.config.threading.get_intra_op_parallelism_threads() or "default",
                         "inter-op threads": tf.config.threading.get_inter_op_parallelism_threads() or "default",
                         "oneDNN": os.environ.get("TF_ENABLE_ONEDNN_OPTS", "default (on for x86)"),
                         "tf32": "off unless a run's precision is tf32 (TensorFlow's default: "
                                 f"{'on' if tf.config.experimental.tensor_float_32_execution_enabled() else 'off'})"}}


class SavedModelRunner(Runner):
    framework = "tensorflow"

    def __init__(self, folder: Path, manifest, threads: int = 0, device: str = "cpu",
                 trust_code: bool = False, speed: dict | None = None) -> None:
        speed = Speed.from_json(speed)
        speed.require("TensorFlow", device, ("fp32", "tf32"), compile="XLA: tf.function(jit_compile=True)",
                      precision_why="a SavedModel's graph has fixed dtypes (mixed precision is set when a model is built)")
        tf = import_tensorflow()
        if threads:
            set_threads(threads)
        self.tf, self.manifest = tf, manifest
        self.layouts = manifest.converter.get("layouts", {})
        path = artifact_file(folder, manifest)
        check_saved_model(path, trust_code, f"{folder}/{manifest.artifact}")
        self.placement, self.device = placement(device), device
        reset_peak_memory(device)
        with self.placement:
            self.loaded = tf.saved_model.load(str(path))
        self.signature = self.loaded.signatures["serving_default"]
        set_precision(speed.precision)
        self.precision_in_force = precision_in_force()
        if speed.compile:
            self.signature = tf.function(self.signature, jit_compile=True)

    @classmethod
    def version(cls) -> str:
        return import_tensorflow().__version__

    @classmethod
    def environment(cls) -> dict:
        return tensorflow_environment(import_tensorflow().__version__)

    def predict(self, feeds: dict[str, np.ndarray]) -> dict[str, np.ndarray]:
        check_feeds(feeds, self.manifest.inputs)
        with self.placement:
            arguments = {name: self.tf.constant(array) for name, array in to_layouts(feeds, self.layouts).items()}
            outputs = self.signature(**arguments)
        self.device_used = ", ".join(sorted({device_of(value) for value in outputs.values()}))  # where it computed
        return from_layouts({name: value.numpy() for name, value in outputs.items()}, self.layouts)

    def peak_device_mb(self) -> float | None:
        return peak_memory_mb(self.device)

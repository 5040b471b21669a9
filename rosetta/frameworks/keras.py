"""Keras 3: runs a `.keras` artifact (from rosetta's ONNX -> Keras mapper) with plain Keras, safe_mode on.

The backend is KERAS_BACKEND where the user sets it, else the first of TensorFlow, JAX and PyTorch that is
installed (`default_backend`): a machine with only PyTorch and JAX runs Keras on JAX. The artifact uses only
built-in layers, so it loads on every backend. What a run asks of the backend itself (its precision, device
and peak memory) is in rosetta's module of that framework (`backend_module`). `load_keras_model` is the one
place a Keras file is loaded (runner, user's files, conversions): safe_mode stays on unless trust_code.
"""

from __future__ import annotations

from pathlib import Path

import numpy as np

from rosetta.errors import RosettaError, UntrustedModel, one_line
from rosetta.frameworks.base import Runner, artifact_file, check_feeds, from_layouts, in_float, to_layouts
from rosetta.frameworks.speed import PRECISIONS as SPEED_PRECISIONS
from rosetta.frameworks.speed import Speed


BACKENDS = ("tensorflow", "jax", "torch")  # Keras 3's backends rosetta runs, in the order it picks one


def installed_backends() -> list[str]:
    import importlib.util

    return [name for name in BACKENDS if importlib.util.find_spec(name) is not None]


def default_backend() -> str:
    """Keras's backend where KERAS_BACKEND is not set: the first of BACKENDS installed (TensorFlow, Keras's own
    default, where it is)."""
    return next(iter(installed_backends()), BACKENDS[0])


def import_keras():
    import os

    os.environ.setdefault("KERAS_BACKEND", default_backend())
    os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "3")
    import keras

    from rosetta.execution import after_each_job

    after_each_job(reset_keras_state)
    return keras


def reset_keras_state() -> None:
    """Keras's process-wide state back to its defaults, after each job in a warm worker: a job that set a
    float64 dtype policy or floatx (the trainer does) must not hand it to the next one. Without a full garbage
    collection (clear_session's default): in a worker holding TensorFlow that is 0.27 s after every job, three
    times a conformance case; Python's own collector and the pool's MAX_RSS_MB still bound the memory."""
    import keras

    keras.config.set_dtype_policy("float32")
    keras.config.set_floatx("float32")
    keras.backend.clear_session(free_memory=False)


TRUST_HINT = "pass trust_code=True if you trust the file"


def load_keras_model(path: Path, trust_code: bool):
    """keras.saving.load_model, safe unless trusted, with one-line errors for code and for broken files."""
    _check_container(path)
    keras = import_keras()
    from rosetta.frameworks.keras_classes import import_layer_modules, missing_class_error

    import_layer_modules(path, trust_code)  # the modules of its custom layer classes, where trusted
    try:
        return keras.saving.load_model(str(path), compile=False, safe_mode=not trust_code)
    except Exception as error:
        text = str(error)
        if "safe_mode" in text or "arbitrary code" in text:
            raise UntrustedModel(f"{path.name} contains Python code (e.g. a Lambda layer) that loading it would run; "
                               f"{TRUST_HINT}") from None
        if "Unknown layer" in text or "Could not locate" in text:
            raise missing_class_error(path, error, trust_code) from None
        legacy = load_keras2_h5(path, trust_code) if path.suffix.lower() == ".h5" else None
        if legacy is not None:
            return legacy
        raise RosettaError(f"{path.name} is not a readable Keras model ({one_line(error)[:300]})") from None


# Layers whose config carries Python code (marshalled bytecode, or a TensorFlow function by name).
CODE_LAYERS = {"Lambda", "TFOpLambda", "SlicingOpLambda"}


def load_keras2_h5(path: Path, trust_code: bool):
    """A Keras 2 HDF5 model that Keras 3 rejects (its configs differ: DepthwiseConv2D's `groups`, ...), read
    with tf-keras, Keras 2 itself; None if the file holds no Keras 2 model config. tf-keras has no safe mode
    for HDF5, so the config is checked first: only built-in classes, no Lambda, unless trust_code."""
    import json

    import h5py

    with h5py.File(path, "r") as handle:
        config, version = handle.attrs.get("model_config"), str(handle.attrs.get("keras_version", ""))
    if config is None or version.startswith("3"):
        return None
    config = json.loads(config)
    import tf_keras

    if not trust_code:
        builtin = {"Functional", "Sequential", "Model", "Policy", "DTypePolicy"}
        for module in (tf_keras.layers, tf_keras.initializers, tf_keras.regularizers, tf_keras.constraints):
            builtin.update(name for name in dir(module) if name[:1].isupper())
        found = set(_class_names(config))
        code, custom = sorted(found & CODE_LAYERS), sorted(found - builtin - CODE_LAYERS)
        if code:
            raise UntrustedModel(f"{path.name} contains Python code ({code[0]} layer) that loading it would run; "
                               f"{TRUST_HINT}")
        if custom:
            raise RosettaError(f"{path.name} uses a custom class ({custom[0]}) tf-keras cannot find; only built-in "
                               "layers can be read")
    try:
        return tf_keras.models.load_model(str(path), compile=False)
    except Exception as error:  # noqa: BLE001 - one line for the user
        raise RosettaError(f"{path.name} is not a readable Keras 2 model either (tf-keras {tf_keras.__version__}: "
                           f"{one_line(error)[:300]})") from None


def _class_names(config):
    """Every "class_name" in a nested Keras config."""
    if isinstance(config, dict):
        if isinstance(config.get("class_name"), str):
            yield config["class_name"]
        for value in config.values():
            yield from _class_names(value)
    elif isinstance(config, list):
        for item in config:
            yield from _class_names(item)


def _set_float_dtype(config, dtype: str, inputs: bool = True):
    """Every floating dtype policy (and, with `inputs`, float input) in a (nested) Keras config, set to `dtype`."""
    if isinstance(config, dict):
        out = {}
        for key, value in config.items():
            if inputs and key == "dtype" and isinstance(value, str) and value.startswith("float"):
                out[key] = dtype
            elif key == "dtype" and isinstance(value, dict) and value.get("class_name") == "DTypePolicy":
                out[key] = {**value, "config": {**value["config"], "name": dtype}}
            else:
                out[key] = _set_float_dtype(value, dtype, inputs)
        return out
    if isinstance(config, list):
        return [_set_float_dtype(item, dtype, inputs) for item in config]
    return config


AMP_POLICIES = {"amp-bf16": "mixed_bfloat16", "amp-fp16": "mixed_float16"}
# how Keras applies each speed setting (Speed.require, Speed.settings)
SPEED_WAYS = {"compile": "jit_compile=True", "eager": "run_eagerly=True",
              "cuda_graphs_why": "Keras compiles whole steps already (jax.jit, tf.function + XLA); rosetta captures "
                                 "CUDA graphs in PyTorch only",
              "resident_data_why": "train_on_batch and predict_on_batch take host arrays and read the loss or "
                                   "outputs back to the host at every call"}
# keras.device names, the same on every backend ("cpu:0" on torch makes Keras copy its int variables off their
# Parameter: a Dropout then fails to build)
KERAS_DEVICES = {"cpu": "cpu", "cuda": "gpu:0"}


def backend_module(keras, backend: str = ""):
    """rosetta's module of the framework under Keras (rosetta.frameworks.jax, .tensorflow or .torch), Keras's
    own or `backend`: each has set_precision, precision_in_force, check_device, device_of, devices,
    reset_peak_memory and peak_memory_mb."""
    backend = backend or keras.backend.backend()
    if backend == "jax":
        from rosetta.frameworks import jax as module
    elif backend == "torch":
        from rosetta.frameworks import torch as module
    else:
        from rosetta.frameworks import tensorflow as module
    return module


def placement(keras, device: str):
    """A factory of keras.device scopes for `device` on any backend (a scope is used once: on torch it is a
    generator), refused (Unsupported) where the backend sees no GPU; the peak device memory counted from here.
    Under a keras.distribution (data parallel) the distribution places everything: no scope."""
    import contextlib

    backend = backend_module(keras)
    backend.check_device(device)
    backend.reset_peak_memory(device)
    if keras.distribution.distribution() is not None:
        return contextlib.nullcontext
    return lambda: keras.device(KERAS_DEVICES[device])


def device_used(keras, model) -> str:
    """Where the model's weights are, read back from the backend (a JAX array's devices, a TensorFlow variable's
    device, a torch tensor's), with the backend's name."""
    weights = model.weights
    value = getattr(weights[0], "value", None) if weights else None
    value = weights[0] if callable(value) else value  # a tf-keras (Keras 2) model's variable: .value is a method
    where = backend_module(keras).device_of(value) if weights else "no weights"
    return f"{where} ({keras.backend.backend()})"


def compiled_step(keras, model) -> str:
    """How Keras runs the model's steps, read back from it after compile() (an uncompiled model: Keras's
    defaults, jit_compile "auto"): jax.jit, tf.function with or without XLA, torch.compile, or eager."""
    backend = keras.backend.backend()
    if model.run_eagerly:
        return "eager (run_eagerly)"
    if backend == "tensorflow":
        return "tf.function + XLA (jit_compile)" if model.jit_compile else "tf.function"
    compiler = {"jax": "jax.jit", "torch": "torch.compile"}[backend]
    return compiler if model.jit_compile else "eager (jit_compile=False)"


def precision_in_force(keras, model) -> dict:
    """The backend's float32 arithmetic (TF32, JAX's matmul precision) and the compute dtype of the model's
    layers (bfloat16 or float16 under a mixed policy), read back."""
    policies = {layer.dtype_policy.compute_dtype for layer in model._flatten_layers(include_self=False)
                if layer.weights}
    return {**backend_module(keras).precision_in_force(), "compute dtype": ", ".join(sorted(policies))}


def with_speed(model, speed: Speed, device: str):
    """The model as a speed variant runs it: rebuilt under Keras' mixed-precision policy for amp-* (float32
    variables, computation in bfloat16 or float16); on every backend float32 as float32 (TF32 off, JAX's
    matmul precision highest) but for tf32. Keras cannot change a model's layout (its layers' data_format), so
    channels-last is refused; jit_compile and run_eagerly are the caller's compile()."""
    speed.require("Keras", device, SPEED_PRECISIONS, **SPEED_WAYS)
    keras = import_keras()
    backend_module(keras).set_precision(speed.precision)
    policy = AMP_POLICIES.get(speed.precision)
    if policy is None:
        return model
    rebuilt = model.__class__.from_config(_set_float_dtype(model.get_config(), policy, inputs=False))
    rebuilt.set_weights(model.get_weights())
    return rebuilt


def in_precision(model, precision: str, trust_code: bool = False):
    """The model itself in float32; else rebuilt from its config with every layer's float dtype set to
    `precision` (a saved model pins float32 per layer) and its weights copied across. `trust_code`: as the model
    was loaded (a Lambda layer's code is deserialised again only where it was trusted)."""
    if precision == "float32":
        return model
    from keras.src.saving.serialization_lib import SafeModeScope  # Keras 3's scope for load_model's safe_mode

    with SafeModeScope(not trust_code):
        rebuilt = model.__class__.from_config(_set_float_dtype(model.get_config(), precision))
    rebuilt.set_weights([np.asarray(w, dtype=precision) if np.asarray(w).dtype.kind == "f" else w
                         for w in model.get_weights()])
    return rebuilt


def _structure(model, kind: str):
    """The structure a functional model takes or gives ("inputs", "outputs": a dict, a nested list, one
    tensor), or None for a model that keeps none (a Keras 2 model read with tf-keras, a subclassed one)."""
    return getattr(model, f"_{kind}_struct", None)


def _keyed(structure) -> bool:
    """Whether a structure is addressed by dict keys somewhere (keras-hub's backbones take a dict)."""
    if isinstance(structure, dict):
        return True
    return isinstance(structure, (list, tuple)) and any(_keyed(item) for item in structure)


def unique_names(names) -> list[str]:
    """`names` with each repeat given the first free suffix (`inner`, `inner_1`): two outputs of one nested layer
    are named after that layer, and a dict by name would keep only one of them."""
    names = list(names)
    taken, found = set(names), []
    for name in names:
        unique, n = name, 0
        while unique in found or (unique != name and unique in taken):  # never another output's own name
            n += 1
            unique = f"{name}_{n}"
        found.append(unique)
    return found


def leaf_names(keras, model, kind: str) -> list[str]:
    """The name of each leaf input or output of `model` ("inputs", "outputs"), in its flat order (model.inputs,
    model.outputs): its path of dict keys joined by "." where the model takes or gives a dict or a nested
    structure (`token_ids`, `pooled.x`), else the input tensor's name or the output layer's, made unique."""
    structure = _structure(model, kind)
    if structure is not None and _keyed(structure):
        return unique_names([".".join(str(key) for key in path)
                             for path, _ in keras.tree.flatten_with_path(structure)])
    if kind == "inputs":
        return unique_names([tensor.name for tensor in model.inputs])
    return unique_names(list(model.output_names))


def packed(keras, model, arrays: list):
    """The flat `arrays` in the structure `model` takes (a dict by key for a dict-input model: a flat list is
    refused by Keras with "The structure of inputs doesn't match"); one array alone where it takes one."""
    structure = _structure(model, "inputs")
    if structure is not None and _keyed(structure):
        return keras.tree.pack_sequence_as(structure, list(arrays))
    return arrays if len(arrays) > 1 else arrays[0]


HDF5_SIGNATURE = b"\x89HDF\r\n\x1a\n"


def _check_container(path: Path) -> None:
    """A .keras file is a zip archive and a .h5 file an HDF5 file: say so before Keras gives a stranger error."""
    import zipfile

    if not path.is_file():
        raise RosettaError(f"no such file: {path}")
    if path.suffix.lower() == ".keras":
        if not zipfile.is_zipfile(path):
            raise RosettaError(f"{path.name} is not a Keras file: a .keras file is the zip archive model.save() "
                               "writes; save the model again")
    else:
        with open(path, "rb") as handle:
            if handle.read(len(HDF5_SIGNATURE)) != HDF5_SIGNATURE:
                raise RosettaError(f"{path.name} is not a Keras HDF5 file (no HDF5 signature); save the model "
                                   "again with model.save()")


WEIGHTS_MEMBER = "model.weights.h5"


def edit_keras_weights(path: Path, edit) -> None:
    """Rewrite the weights inside a .keras file in place with h5py, without Keras:
    edit(name, array) -> new array or None, for every weight ('layers/gru/cell/vars/0', ...)."""
    import io
    import zipfile

    import h5py

    with zipfile.ZipFile(path) as archive:
        members = {name: archive.read(name) for name in archive.namelist()}
    buffer = io.BytesIO(members[WEIGHTS_MEMBER])
    with h5py.File(buffer, "r+") as weights:
        names = []
        weights.visititems(lambda name, item: names.append(name) if isinstance(item, h5py.Dataset) else None)
        for name in names:
            new = edit(name, weights[name][()])
            if new is not None:
                weights[name][...] = new
    members[WEIGHTS_MEMBER] = buffer.getvalue()
    with zipfile.ZipFile(path, "w", zipfile.ZIP_STORED) as archive:
        for name, data in members.items():
            archive.writestr(name, data)


class KerasRunner(Runner):
    framework = "keras"

    def __init__(self, folder: Path, manifest, threads: int = 0, device: str = "cpu", trust_code: bool = False,
                 precision: str = "float32", speed: dict | None = None) -> None:
        keras = import_keras()
        if threads and keras.backend.backend() == "tensorflow":
            from rosetta.frameworks.tensorflow import set_threads

            set_threads(threads)
        self.keras, self.manifest, self.layouts = keras, manifest, manifest.converter.get("layouts", {})
        self.placement, self.device = placement(keras, device), device
        self.speed = Speed.from_json(speed)
        with self.placement():
            loaded = load_keras_model(artifact_file(folder, manifest), trust_code)
            self.model = in_precision(loaded, precision, trust_code)
            self.model = with_speed(self.model, self.speed, device)
            if self.speed.compile or self.speed.eager:
                self.model.compile(jit_compile=self.speed.compile, run_eagerly=self.speed.eager)
        # a float64 reference is checked against the model's float32 run (frameworks.keras_reference)
        self.float32_twin = loaded if precision == "float64" and self.model is not loaded else None
        self.device_used = device_used(keras, self.model)
        self.precision_in_force = precision_in_force(keras, self.model)
        self.compiled_step = compiled_step(keras, self.model)
        self.precision = precision
        self.output_names = [entry["name"] for entry in manifest.outputs]

    @classmethod
    def version(cls) -> str:
        keras = import_keras()
        return f"{keras.__version__} ({keras.backend.backend()} backend)"

    @classmethod
    def environment(cls) -> dict:
        """Keras's settings, with the devices, CUDA and cuDNN of its backend as the backend sees them."""
        keras = import_keras()
        backend = keras.backend.backend()
        if backend == "tensorflow":
            from rosetta.frameworks.tensorflow import tensorflow_environment

            found = tensorflow_environment(cls.version())
        elif backend == "jax":
            from rosetta.frameworks.jax import environment

            found = {**environment(), "version": cls.version()}
        else:
            from rosetta.frameworks.torch import TorchModuleRunner

            found = {**TorchModuleRunner.environment(), "version": cls.version()}
        found["settings"].update({"dtype policy": keras.config.dtype_policy().name, "floatx": keras.config.floatx(),
                                  "image data format": keras.config.image_data_format()})
        # the backends Keras could be switched to (KERAS_BACKEND), each with the devices it sees here
        for other in installed_backends():
            if other != backend:
                found["settings"][f"with KERAS_BACKEND={other}"] = ", ".join(backend_module(keras, other).devices())
        return found

    def peak_device_mb(self) -> float | None:
        return backend_module(self.keras).peak_memory_mb(self.device)

    def settings(self) -> dict:
        return {**super().settings(), "compiled step": self.compiled_step}

    def predict(self, feeds: dict[str, np.ndarray]) -> dict[str, np.ndarray]:
        values = self._run(self.model, feeds)
        if len(values) != len(self.output_names):  # a dict by name must never drop an output silently
            raise RosettaError(f"the Keras model gave {len(values)} outputs where its signature lists "
                               f"{len(self.output_names)} ({', '.join(self.output_names)})")
        outputs = from_layouts(dict(zip(self.output_names, values)), self.layouts)
        if self.float32_twin is not None:
            from rosetta.frameworks.keras_reference import check_float64_model

            arrays = [to_layouts(feeds, self.layouts)[entry["name"]] for entry in self.manifest.inputs]
            with self.placement():
                self.reference_check = check_float64_model(self.keras, self.float32_twin, self.model, arrays).to_json()
        return outputs

    def _run(self, model, feeds: dict[str, np.ndarray]) -> list[np.ndarray]:
        check_feeds(feeds, self.manifest.inputs)
        feeds = to_layouts(feeds, self.layouts)
        arrays = [in_float(feeds[entry["name"]], self.precision) for entry in self.manifest.inputs]
        # predict_on_batch runs Keras' compiled predict step (tf.function / jax.jit), as Keras users infer;
        # calling the model eagerly is several times slower (a GRU steps through Python).
        with self.placement():
            result = model.predict_on_batch(packed(self.keras, model, arrays))
        # a dict or nested structure flattens in the order of model.outputs, which the manifest's names follow
        result = self.keras.tree.flatten(result) if isinstance(result, (list, tuple, dict)) else [result]
        values = [np.asarray(self.keras.ops.convert_to_numpy(value)) for value in result]
        # a mixed-precision model's outputs are bfloat16 or float16: float32, as every runner returns
        return [value.astype(np.float32) if value.dtype.kind in "fV" and value.dtype.itemsize == 2 else value
                for value in values]

    def intermediates(self, feeds: dict[str, np.ndarray], names: list[str]) -> dict[str, np.ndarray]:
        """The values of ONNX tensors `names` in a model rosetta's mapper converted (its manifest maps each to a
        layer output and its axis order: to_keras.walker.tensor_map), in ONNX's layout; a tensor
        the map does not name is left out."""
        table = self.manifest.converter.get("tensors", {})
        # layers and the keras.ops calls of a functional model (Model.operations): each may output a tensor
        operations = {operation.name: operation for operation in getattr(self.model, "operations", self.model.layers)}
        wanted = [name for name in names if name in table and table[name]["layer"] in operations]
        if not wanted:
            return {}
        outputs = []
        for name in wanted:
            output = operations[table[name]["layer"]].output
            outputs.append(output[table[name]["output"]] if isinstance(output, (list, tuple)) else output)
        model = self.keras.Model(self.model.inputs, outputs)
        return {name: onnx_layout(value, table[name]) for name, value in zip(wanted, self._run(model, feeds))}

    def layer_values(self, feeds: dict[str, np.ndarray], names: list[str]) -> dict[str, np.ndarray]:
        """The outputs of the layers called `names` (a layer with several outputs, or one the model lacks, is
        left out), in this runner's precision: a source model's values of MMdnn's IR nodes (`--locate`)."""
        layers = {layer.name: layer for layer in self.model.layers}
        wanted = [name for name in names if name in layers and not isinstance(layers[name].output, (list, tuple))]
        if not wanted:
            return {}
        model = self.keras.Model(self.model.inputs, [layers[name].output for name in wanted])
        return dict(zip(wanted, self._run(model, feeds)))


def onnx_layout(value: np.ndarray, entry: dict) -> np.ndarray:
    """A Keras tensor's value in its ONNX tensor's layout: `axes[i]` is the Keras axis of ONNX axis i (None: a
    size-1 axis Keras does not hold); a 2-D tensor's Keras feature j is ONNX feature feature_order[j]."""
    axes = entry["axes"]
    value = np.transpose(value, [axis for axis in axes if axis is not None])
    if "feature_order" in entry:
        ordered = np.empty_like(value)
        ordered[:, np.asarray(entry["feature_order"])] = value
        value = ordered
    for position, axis in enumerate(axes):
        if axis is None:
            value = np.expand_dims(value, position)
    return value


def intermediates_job(argument: dict) -> dict:
    """Job (rosetta.execution, in the TensorFlow worker): KerasRunner.intermediates of the artifact in
    argument["folder"] on argument["feeds"] for argument["tensors"]; {"values": {name: array}}."""
    from rosetta.manifest import Manifest

    folder = Path(argument["folder"])
    runner = KerasRunner(folder, Manifest.read(folder))
    return {"values": runner.intermediates(argument["feeds"], list(argument["tensors"]))}

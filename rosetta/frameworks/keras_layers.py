"""Every layer of a Keras model as it runs (frameworks.layers.Layer), and one layer run alone: jobs of the
TensorFlow worker, where Keras runs."""

from __future__ import annotations

import contextlib
from pathlib import Path

import numpy as np

from rosetta.frameworks.layers import GATES_KERAS_GRU_TO_TORCH, Layer, gate_blocks, same_pads

KINDS = {"Conv1D": "conv", "Conv2D": "conv", "Conv3D": "conv", "DepthwiseConv2D": "conv", "Dense": "dense",
         "BatchNormalization": "batchnorm", "LayerNormalization": "layernorm", "GRU": "gru", "LSTM": "lstm",
         "MaxPooling1D": "pool", "MaxPooling2D": "pool", "MaxPooling3D": "pool", "AveragePooling1D": "pool",
         "AveragePooling2D": "pool", "AveragePooling3D": "pool", "GlobalAveragePooling2D": "pool",
         "GlobalMaxPooling2D": "pool", "Activation": "activation", "ReLU": "activation", "Softmax": "activation",
         "Flatten": "flatten", "Reshape": "reshape", "Embedding": "embedding", "Dropout": "dropout", "Add": "add",
         "Concatenate": "concat", "ZeroPadding2D": "other", "Permute": "reshape"}


_LAST: dict = {}  # the model the last job loaded, by (folder, its digest, precision, trust): locate runs one
# layer after another of the same model in this warm worker, and loading a ResNet-50 each time took seconds


def _model(folder: Path, precision: str, trust_code: bool):
    from rosetta.frameworks.keras import in_precision, load_keras_model
    from rosetta.frameworks.base import artifact_file
    from rosetta.manifest import Manifest

    manifest = Manifest.read(folder)
    key = (str(Path(folder).resolve()), manifest.sha256, precision, trust_code)
    if key not in _LAST:
        _LAST.clear()
        _LAST[key] = in_precision(load_keras_model(artifact_file(folder, manifest), trust_code), precision,
                                  trust_code)
    return _LAST[key], manifest


def trace_job(argument: dict) -> dict:
    """Job: {"layers": [Layer as JSON], "notes": [one line each]} of the Keras model in argument["folder"] run on
    argument["feeds"], in argument["precision"]: its functional graph walked node by node, as Keras runs it. A
    layer whose settings cannot be read is read without them (no parameters, no configuration), with a note."""
    from rosetta.frameworks.keras import import_keras
    from rosetta.frameworks.keras_reference import _functional

    keras = import_keras()
    model, manifest = _model(Path(argument["folder"]), argument["precision"], argument.get("trust_code", False))
    graph = _functional(model)
    if graph is None:
        return {"layers": [], "reason": "a subclassed Keras model has no graph of layers to walk"}
    arrays = [np.asarray(argument["feeds"][entry["name"]]) for entry in manifest.inputs]
    arrays = [a.astype(argument["precision"]) if a.dtype.kind == "f" else a for a in arrays]
    values = {id(x): keras.ops.convert_to_tensor(a) for x, a in zip(graph.inputs, arrays)}
    # a tensor is channels-last where the layer that made it says so (data_format), or where its input was: a
    # BatchNormalization after a Conv2D; a sequence (N, T, F) from an Embedding or a GRU is not a feature map
    last = {id(x): False for x in graph.inputs}
    layers, notes = [], []
    for depth in sorted(graph._nodes_by_depth, reverse=True):
        for node in graph._nodes_by_depth[depth]:
            if not node.operation or node.is_input or any(id(x) not in values for x in node.input_tensors):
                continue
            args, kwargs = node.arguments.fill_in(values)
            operation = node.operation
            data_format = getattr(operation, "data_format", None)
            channels_last = data_format != "channels_first" if data_format else \
                any(last.get(id(x), False) for x in node.input_tensors)
            inside: list = []  # the sublayers it called, as they ended
            with recording_sublayers(operation, inside):
                outputs = keras.tree.flatten(operation(*args, **kwargs))
            for x, y in zip(node.outputs, outputs):
                values[id(x)] = y
                last[id(x)] = channels_last
            inputs = [np.asarray(keras.ops.convert_to_numpy(values[id(x)])) for x in node.input_tensors]
            for path, sublayer, received, output in inside:
                layers.append(_layer(path, sublayer, received, output, channels_last, notes))
            activation = fused_activation(operation)
            if activation is None:
                layers.append(_layer(operation.name, operation, inputs, outputs[0], channels_last, notes))
                continue
            # a fused activation split out: the layer without it, then the activation, each a tensor of its own
            with linear_activation(operation):
                before = keras.tree.flatten(operation(*args, **kwargs))[0]
            layers.append(_layer(operation.name, operation, inputs, before, channels_last, notes, fused=True))
            layers.append(Layer(f"{operation.name}/activation", "activation", "Activation (fused)",
                                _numpy(outputs[0]), [_numpy(before)], {}, {"activation": activation},
                                channels_last=channels_last).to_json())
    return {"layers": layers, "notes": notes}


def _numpy(value) -> np.ndarray:
    from rosetta.frameworks.keras import import_keras

    return np.asarray(import_keras().ops.convert_to_numpy(value))


def _layer(name: str, layer, inputs: list, output, channels_last: bool, notes: list, fused: bool = False) -> dict:
    """A Layer (as JSON) of a Keras layer as it ran; `fused`: its output taken before its fused activation."""
    inputs = [_numpy(value) for value in inputs]
    config, unread = settings(layer)
    if unread:
        notes.append(unread)
        kind, params, config = KINDS.get(type(layer).__name__, "other"), {}, {}
    else:
        kind, params, config = describe(layer, inputs, config)
        if fused:
            config = {key: value for key, value in config.items() if key != "activation"}
    return Layer(name, kind, type(layer).__name__, _numpy(output), inputs, params, config,
                 channels_last=channels_last).to_json()


def fused_activation(layer) -> str | None:
    """The name of a Conv's or Dense's fused activation (`activation="tanh"`), None where it has none."""
    activation = getattr(layer, "activation", None)
    if KINDS.get(type(layer).__name__) not in ("conv", "dense") or activation is None:
        return None
    name = getattr(activation, "__name__", None)
    return None if name == "linear" else _activation_name(layer, None) or str(activation)


@contextlib.contextmanager
def linear_activation(layer):
    """The layer with its fused activation set aside (its computation up to the activation)."""
    from rosetta.frameworks.keras import import_keras

    activation = layer.activation
    layer.activation = import_keras().activations.get("linear")
    try:
        yield layer
    finally:
        layer.activation = activation


def sublayers(layer, prefix: str = "") -> list:
    """(path, sublayer) of every layer a Keras layer holds, depth first ("block/attention/query")."""
    found = []
    for child in getattr(layer, "_flatten_layers", lambda **_: [])(include_self=False, recursive=False):
        path = f"{prefix or layer.name}/{child.name}"
        found.append((path, child))
        found.extend(sublayers(child, path))
    return found


@contextlib.contextmanager
def recording_sublayers(layer, record: list):
    """While inside: each sublayer of `layer` called appends (path, sublayer, its tensor inputs, its first
    output) to `record` as the call ends, so a block written as one layer (a keras-hub transformer block) is read
    down to the layers it is made of. Its `call` is wrapped on the instance and restored afterwards."""
    from rosetta.frameworks.keras import import_keras

    keras = import_keras()
    wrapped = []
    for path, child in sublayers(layer):
        if not callable(getattr(child, "call", None)):
            continue

        def call(*args, __call=child.call, __path=path, __child=child, **kwargs):
            output = __call(*args, **kwargs)
            tensors = [x for x in keras.tree.flatten((args, kwargs)) if keras.ops.is_tensor(x)]
            first = [y for y in keras.tree.flatten(output) if keras.ops.is_tensor(y)]
            if first:
                record.append((__path, __child, tensors, first[0]))
            return output

        child.call = call
        wrapped.append(child)
    try:
        yield record
    finally:
        for child in wrapped:
            with contextlib.suppress(AttributeError):
                del child.call


def settings(layer) -> tuple[dict, str]:
    """(the layer's get_config(), ""), or ({}, a one-line note) where get_config raises: a library's bug in one
    layer skips the diagnoses that need its settings instead of stopping locate for the whole model."""
    from rosetta.errors import one_line

    try:
        return (layer.get_config() if hasattr(layer, "get_config") else {}), ""
    except Exception as error:  # noqa: BLE001 - whatever the library's get_config raises
        return {}, (f"layer {layer.name} ({type(layer).__name__}) read without its settings: get_config raised "
                    f"{one_line(error)}")[:300]


def run_layer_job(argument: dict) -> dict:
    """Job: {"output"}: the layer argument["layer"] of the Keras model in argument["folder"] run alone on
    argument["inputs"] (its first output), in argument["precision"]."""
    from rosetta.frameworks.keras import import_keras

    keras = import_keras()
    model, _ = _model(Path(argument["folder"]), argument["precision"], argument.get("trust_code", False))
    inputs = [keras.ops.convert_to_tensor(np.asarray(a)) for a in argument["inputs"]]
    layer, part = find_layer(model, argument["layer"])
    if part == "activation":  # a fused activation alone
        return {"output": _numpy(layer.activation(inputs[0]))}
    given = inputs[0] if len(inputs) == 1 else inputs
    if fused_activation(layer) is not None:  # the layer's name is its computation before the fused activation
        with linear_activation(layer):
            output = layer(given)
    else:
        output = layer(given) if part == "" else layer(*inputs)
    return {"output": _numpy(keras.tree.flatten(output)[0])}


def find_layer(model, name: str):
    """(layer, part) of a layer name as trace_job gives it: a top-level layer, a sublayer by its path
    ("block/attention/query"; part "sublayer"), or "NAME/activation" (part "activation": a fused activation)."""
    head, *rest = name.split("/")
    layer = model.get_layer(head)
    if not rest:
        return layer, ""
    for path, child in sublayers(layer):
        if path == name:
            return child, "sublayer"
    if rest == ["activation"] and fused_activation(layer) is not None:
        return layer, "activation"
    raise ValueError(f"the model has no layer {name!r}")


def describe(layer, inputs: list[np.ndarray], config: dict) -> tuple[str, dict, dict]:
    """(kind, canonical parameters, canonical configuration) of a Keras layer (frameworks.layers), from its
    get_config() `config`."""
    name = type(layer).__name__
    kind = KINDS.get(name, "other")
    weights = {w.path.split("/")[-1]: np.asarray(w.numpy()) for w in getattr(layer, "weights", [])}
    activation = _activation_name(layer, config.get("activation"))
    found = {"activation": activation} if activation and activation != "linear" else {}
    if kind == "conv" and "kernel" in weights:
        kernel = weights["kernel"]
        rank = kernel.ndim
        spatial = rank - 2
        weight = np.transpose(kernel, (rank - 1, rank - 2, *range(spatial)))  # (k..., in, out) -> (out, in, k...)
        if name == "DepthwiseConv2D":  # (kH, kW, in, multiplier) -> (in * multiplier, 1, kH, kW)
            weight = np.transpose(kernel, (2, 3, 0, 1)).reshape(-1, 1, *kernel.shape[:2])
        strides, dilations = list(config["strides"]), list(config["dilation_rate"])
        sizes = inputs[0].shape[1:-1] if config.get("data_format", "channels_last") == "channels_last" \
            else inputs[0].shape[2:]
        pads = [same_pads(size, k, s, d) for size, k, s, d in zip(sizes, kernel.shape[:spatial], strides, dilations)] \
            if config["padding"] == "same" else [(0, 0)] * spatial
        return kind, {"weight": weight, **({"bias": weights["bias"]} if "bias" in weights else {})}, \
            {"strides": strides, "dilations": dilations, "pads": pads, "padding": config["padding"], **found}
    if kind == "dense" and "kernel" in weights:
        return kind, {"weight": weights["kernel"].T, **({"bias": weights["bias"]} if "bias" in weights else {})}, found
    if kind == "batchnorm":
        return kind, {"scale": weights.get("gamma"), "shift": weights.get("beta"), "mean": weights["moving_mean"],
                      "var": weights["moving_variance"]}, {"epsilon": config["epsilon"],
                                                          "momentum": 1.0 - config["momentum"]}
    if kind == "layernorm":
        return kind, {"scale": weights.get("gamma"), "shift": weights.get("beta")}, {"epsilon": config["epsilon"]}
    if kind == "gru" and "kernel" in weights:
        reset_after = config.get("reset_after", True)
        bias = weights.get("bias")
        hidden = weights["recurrent_kernel"].shape[0]
        ih, hh = (bias[0], bias[1]) if bias is not None and bias.ndim == 2 else \
            (bias if bias is not None else np.zeros(3 * hidden), np.zeros(3 * hidden))
        order = GATES_KERAS_GRU_TO_TORCH
        return kind, {"weight_ih_l0": gate_blocks(weights["kernel"].T, order),
                      "weight_hh_l0": gate_blocks(weights["recurrent_kernel"].T, order),
                      "bias_ih_l0": gate_blocks(ih, order), "bias_hh_l0": gate_blocks(hh, order)}, \
            {"reset_after": reset_after, "hidden": hidden, **found}
    if kind == "lstm" and "kernel" in weights:
        return kind, {"weight_ih_l0": weights["kernel"].T, "weight_hh_l0": weights["recurrent_kernel"].T,
                      **({"bias_l0": weights["bias"]} if "bias" in weights else {})}, \
            {"hidden": weights["recurrent_kernel"].shape[0]}
    if kind == "embedding":
        return kind, {"weight": weights.get("embeddings")}, {}
    if kind == "pool" and "pool_size" in config:
        spatial = len(config["pool_size"])
        sizes = inputs[0].shape[1:-1] if config.get("data_format", "channels_last") == "channels_last" \
            else inputs[0].shape[2:]
        strides = list(config.get("strides") or config["pool_size"])
        pads = [same_pads(size, k, s) for size, k, s in zip(sizes, config["pool_size"], strides)] \
            if config.get("padding") == "same" else [(0, 0)] * spatial
        return kind, {}, {"kernel": list(config["pool_size"]), "strides": strides, "pads": pads,
                          "type": "max" if "Max" in name else "average"}
    if kind == "activation":
        return kind, {}, {"activation": _activation_name(layer, config.get("activation")) or name.lower()}
    if name not in KINDS:  # a layer of its own (a whole block): every weight by its path, and its plain settings
        return kind, _weights_by_path(layer), {**_plain(config), **found}
    return kind, {}, found


def _weights_by_path(layer) -> dict:
    """Every weight of a layer by its variable path under the layer ("attention/query/kernel"), in Keras's layout:
    what the diagnoses match against the reference's tensors when the layer is a whole block of the reference."""
    own = f"{getattr(layer, 'path', None) or layer.name}/"
    return {w.path.removeprefix(own): np.asarray(w.numpy())
            for w in getattr(layer, "weights", [])}


def _plain(value):
    """A layer's settings as JSON keeps them (the worker's results are JSON): nested dicts, lists, numbers,
    strings; anything else dropped."""
    if isinstance(value, dict):
        kept = {str(key): _plain(item) for key, item in value.items()}
        return {key: item for key, item in kept.items() if item is not _DROPPED}
    if isinstance(value, (list, tuple)):
        return [item for item in (_plain(item) for item in value) if item is not _DROPPED]
    return value if value is None or isinstance(value, (str, int, float, bool)) else _DROPPED


_DROPPED = object()


def _activation_name(layer, named) -> str | None:
    """The activation's name as the diagnoses compare it: "relu6" for ReLU(max_value=6); GELU as "gelu" (erf) or
    "gelu_tanh" (its tanh approximation), told apart by running it, since Keras's activation="gelu" is the erf form,
    keras.ops.gelu's default the tanh one, and a functools.partial or a lambda says neither by its name."""
    function = getattr(layer, "activation", None)
    name = named if isinstance(named, str) else \
        getattr(function, "__name__", None) or getattr(getattr(function, "func", None), "__name__", None)
    if type(layer).__name__ == "ReLU":
        settings = layer.get_config()
        if settings.get("negative_slope"):
            return "leaky_relu"
        if settings.get("max_value") == 6:
            return "relu6"
    if callable(function) and (name is None or "gelu" in name or name == "<lambda>"):
        return _gelu_variant(function) or name
    return name


def _gelu_variant(function) -> str | None:
    """"gelu" or "gelu_tanh" where `function` computes one of GELU's two forms, None otherwise."""
    import math

    from rosetta.frameworks.keras import import_keras

    keras = import_keras()
    x = np.linspace(-4.0, 4.0, 33)
    try:
        y = np.asarray(keras.ops.convert_to_numpy(function(keras.ops.convert_to_tensor(x.astype("float32")))),
                       np.float64)
    except Exception:  # noqa: BLE001 - a user's activation that cannot run alone names nothing
        return None
    forms = {"gelu": 0.5 * x * (1 + np.vectorize(math.erf)(x / math.sqrt(2))),
             "gelu_tanh": 0.5 * x * (1 + np.tanh(math.sqrt(2 / math.pi) * (x + 0.044715 * x ** 3)))}
    gap = float(np.max(np.abs(forms["gelu"] - forms["gelu_tanh"])))
    errors = {form: float(np.max(np.abs(y - value))) if y.shape == x.shape else math.inf
              for form, value in forms.items()}
    best = min(errors, key=errors.get)
    return best if errors[best] < gap / 10 else None  # far nearer one form than the forms are to each other

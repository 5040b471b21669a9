"""The Keras side of a port's training check (rosetta.verify.port_training): a compiled Keras model, as its author
wrote it (its optimiser and loss from `model.compile`, kept in the .keras file's compile config), trained step by
step on given batches in the Keras worker; the loss of every step and every weight after it come back, with the
setup read from the model (optimiser class and get_config(), loss class and config, each BatchNorm's momentum,
each Dropout's rate, the output layer's activation) for the training diagnoses.

What is changed before training, and said in the result's "assumed" lines:
- Adam and its subclasses (AdamW) run as `port_adam` (every hyper-parameter of the user's optimiser kept, its
  weight_decay included) with PyTorch's conventions, which are the frameworks', not the port's: epsilon added
  after the bias correction (Keras adds it to sqrt(v) before), and the bias corrections 1 - beta^t computed in
  float64 (PyTorch computes them in Python floats; Keras in the variables' float32, where 1 - 0.999 loses 1.3e-5
  of its value to beta_2's rounding: a correct Adam pair then differed by ~60 float32 ulps after step 1, 70 x the
  noise floor on a fresh BatchNorm's beta).
- Dropout is turned off (rate 0) where both sides drop the same rates (`dropout_off`): random masks cannot match.
- Integer class labels are one-hot encoded where the loss is CategoricalCrossentropy (not sparse).
- An input whose Keras shape is the PyTorch one channels-last (N,C,H,W -> N,H,W,C) is transposed so.
"""

from __future__ import annotations

import numpy as np

from rosetta.errors import BadInput

LOSS_NAMES = {  # a loss given to compile() as a string -> the class it means
    "sparse_categorical_crossentropy": "SparseCategoricalCrossentropy",
    "categorical_crossentropy": "CategoricalCrossentropy",
    "binary_crossentropy": "BinaryCrossentropy",
    "mse": "MeanSquaredError", "mean_squared_error": "MeanSquaredError",
    "mae": "MeanAbsoluteError", "mean_absolute_error": "MeanAbsoluteError",
}


def _plain(value):
    """A config value as JSON holds it (a schedule or a dtype policy as its class name)."""
    if isinstance(value, (bool, int, float, str)) or value is None:
        return value
    if isinstance(value, (list, tuple)):
        return [_plain(v) for v in value]
    if isinstance(value, dict):
        return {str(k): _plain(v) for k, v in value.items()}
    if hasattr(value, "dtype") and np.ndim(value) == 0:
        return float(value)
    return type(value).__name__


def loss_setup(keras, loss) -> tuple[dict, object]:
    """(the loss as {"class", config...}, a Loss object that computes it)."""
    if loss is None:
        raise BadInput("the Keras model is compiled without a loss: model.compile(optimizer, loss) says how it "
                       "trains; rosetta would have to guess it")
    if isinstance(loss, str):
        name = LOSS_NAMES.get(loss)
        if name is None:
            raise BadInput(f"the Keras model's loss {loss!r}: rosetta reads "
                           f"{', '.join(sorted(LOSS_NAMES))} or a keras.losses.Loss object")
        loss = getattr(keras.losses, name)()
    if isinstance(loss, (list, tuple, dict)):
        raise BadInput("the Keras model has several losses; this check trains a model with one loss")
    config = loss.get_config() if hasattr(loss, "get_config") else {}
    return {"class": type(loss).__name__, **_plain(config)}, loss


def _layout(array: np.ndarray, shape) -> tuple[np.ndarray, str]:
    """The PyTorch-side array in the Keras input's layout: as it is, or channels-last where that is its shape."""
    wanted = tuple(shape[1:])
    fits = lambda a: len(wanted) == a.ndim - 1 and all(w is None or w == s for w, s in zip(wanted, a.shape[1:]))  # noqa: E731
    if fits(array):
        return array, ""
    if array.ndim >= 3:
        moved = np.moveaxis(array, 1, -1)
        if fits(moved):
            return np.ascontiguousarray(moved), "channels-last"
    raise BadInput(f"the Keras model's input {wanted} takes neither the PyTorch input's shape {array.shape[1:]} "
                   "nor its channels-last form")


def _called_training(model, name: str):
    """The `training=` a functional model calls the layer `name` with (False: inference mode whatever the
    fit), None where its calls do not say."""
    for layer in (model.get_config() or {}).get("layers", []):
        if layer.get("name") != name:
            continue
        for node in layer.get("inbound_nodes") or []:
            kwargs = node.get("kwargs") if isinstance(node, dict) else None
            if kwargs and "training" in kwargs:
                return kwargs["training"]
    return None


def port_adam(keras):
    class PortAdam(keras.optimizers.Adam):
        """Adam as torch.optim.Adam computes it: w -= lr/c1 * m / (sqrt(v)/sqrt(c2) + eps), c = 1 - beta^t in
        float64, then cast to the variable's dtype (see the module docstring)."""

        def update_step(self, gradient, variable, learning_rate):
            ops = keras.ops
            dtype = variable.dtype
            if type(gradient).__name__ == "IndexedSlices":  # TensorFlow's embedding gradient: summed, as PyTorch
                import tensorflow as tf

                gradient = tf.convert_to_tensor(gradient)
            gradient = ops.cast(gradient, dtype)
            wide = lambda value: ops.convert_to_tensor(value, dtype="float64")  # noqa: E731
            step = ops.cast(self.iterations + 1, "float64")
            correction1 = 1 - ops.power(wide(self.beta_1), step)
            correction2 = 1 - ops.power(wide(self.beta_2), step)
            alpha = ops.cast(ops.cast(learning_rate, "float64") * ops.sqrt(correction2) / correction1, dtype)
            epsilon = ops.cast(wide(self.epsilon) * ops.sqrt(correction2), dtype)
            m = self._momentums[self._get_variable_index(variable)]
            v = self._velocities[self._get_variable_index(variable)]
            self.assign_add(m, ops.multiply(ops.subtract(gradient, m), ops.cast(1 - self.beta_1, dtype)))
            self.assign_add(v, ops.multiply(ops.subtract(ops.square(gradient), v), ops.cast(1 - self.beta_2, dtype)))
            self.assign_sub(variable, ops.divide(ops.multiply(m, alpha), ops.add(ops.sqrt(v), epsilon)))

    return PortAdam


def train_port_job(argument: dict) -> dict:
    """Job (rosetta.execution, the Keras worker): the compiled .keras at argument["path"] trained on
    argument["batches"] ([feeds in PyTorch's order and layout, labels] per step); see the module docstring."""
    from rosetta.frameworks.keras import import_keras

    keras = import_keras()
    model = keras.saving.load_model(argument["path"], compile=True, safe_mode=False)  # the caller's own model
    if getattr(model, "optimizer", None) is None:
        raise BadInput("the Keras model is not compiled: model.compile(optimizer, loss) says how it trains; "
                       "rosetta would have to guess its optimiser and loss")
    assumed = []
    optimizer = model.optimizer
    optimizer_setup = {"class": type(optimizer).__name__, **_plain(optimizer.get_config())}
    loss_config, loss = loss_setup(keras, model.loss)
    layers = list(model._flatten_layers(include_self=False))
    batchnorms = [layer for layer in layers if isinstance(layer, keras.layers.BatchNormalization)]
    dropouts = [layer for layer in layers if isinstance(layer, keras.layers.Dropout)]
    last = model.layers[-1] if model.layers else None
    activation = (last.get_config().get("activation") if last is not None else None) or "linear"
    setup = {"optimizer": optimizer_setup, "loss": loss_config,
             "batchnorm": [{"name": layer.name, "momentum": float(layer.momentum), "epsilon": float(layer.epsilon),
                            "trainable": bool(layer.trainable), "training": _called_training(model, layer.name)}
                           for layer in batchnorms],
             "dropout": [{"name": layer.name, "rate": float(layer.rate)} for layer in dropouts],
             "output_activation": activation if isinstance(activation, str) else _plain(activation)}
    rates = sorted(np.float32(layer.rate) for layer in dropouts if layer.rate)
    dropout_off = rates == sorted(np.float32(r) for r in argument.get("torch_dropout_rates", []) if r)
    if dropout_off and rates:
        for layer in dropouts:
            layer.rate = 0.0
        assumed.append(f"Dropout off on both sides (the same rates, {', '.join(f'{r:g}' for r in rates)}: random "
                       "masks cannot match)")
    if isinstance(optimizer, keras.optimizers.Adam):
        config = optimizer.get_config()
        if config.get("amsgrad"):
            raise BadInput("the Keras model's Adam has amsgrad=True: not modelled by this check yet")
        kept = {key: config[key] for key in ("learning_rate", "beta_1", "beta_2", "epsilon", "weight_decay",
                                              "clipnorm", "clipvalue", "global_clipnorm") if config.get(key) is not None}
        if isinstance(getattr(optimizer, "_learning_rate", None), keras.optimizers.schedules.LearningRateSchedule):
            kept["learning_rate"] = optimizer._learning_rate  # the schedule itself, not its config
        optimizer = port_adam(keras)(**kept)
        assumed.append(f"Keras {optimizer_setup['class']}'s epsilon placed after the bias correction, as PyTorch "
                       "places it (a convention of the frameworks, modelled)")
    model.compile(optimizer=optimizer, loss=loss)
    out_units = int(model.outputs[0].shape[-1])
    inputs, layouts = list(model.inputs), []
    losses, weights = [], []
    initial = [np.asarray(keras.ops.convert_to_numpy(v.value)) for v in model.weights]
    for feeds, labels in argument["batches"]:
        if len(feeds) != len(inputs):
            raise BadInput(f"the Keras model takes {len(inputs)} input(s), the PyTorch module {len(feeds)}")
        arrays = []
        for array, tensor in zip(feeds, inputs):
            array, layout = _layout(np.asarray(array), tuple(tensor.shape))
            arrays.append(array)
            layouts.append(layout)
        labels = np.asarray(labels)
        if loss_config["class"] == "CategoricalCrossentropy" and labels.dtype.kind in "iu":
            labels = np.eye(out_units, dtype=np.float32)[labels]
        value = model.train_on_batch(arrays if len(arrays) > 1 else arrays[0], labels)
        losses.append(float(value[0] if isinstance(value, (list, tuple)) else value))
        weights.append([np.asarray(keras.ops.convert_to_numpy(v.value)) for v in model.weights])
    if loss_config["class"] == "CategoricalCrossentropy":
        assumed.append("labels one-hot for CategoricalCrossentropy (class indices on the PyTorch side)")
    if "channels-last" in layouts:
        assumed.append("inputs channels-last on the Keras side (as its input shape says)")
    owners = {}  # a weight's outermost layer's class: a GRU's or LSTM's weights pair through their gate layouts
    for layer in layers:
        for variable in layer.weights:
            owners.setdefault(id(variable), type(layer).__name__)
    return {"setup": setup, "assumed": assumed, "dropout_off": bool(dropout_off and rates),
            "names": [v.path for v in model.weights], "trainable": [bool(v.trainable) for v in model.weights],
            "classes": [owners.get(id(v), "") for v in model.weights],
            "initial": initial, "losses": np.asarray(losses, dtype=np.float64), "weights": weights,
            "version": f"{keras.__version__} ({keras.backend.backend()} backend)"}

"""Keras 3 training of the converted `.keras` artifact, on Keras' own train step (compile + train_on_batch),
compiled as Keras compiles it by default (jit_compile "auto": jax.jit on JAX, tf.function on TensorFlow, XLA
too where TensorFlow sees a GPU; eager on torch); --compile asks for jit_compile=True, --eager for
run_eagerly. The row says which ran, read back from the model.

The artifact is loaded with safe_mode. float64 rebuilds the model from its config with every layer's dtype
policy set to float64 (a saved model pins float32 per layer) and copies the weights across. Adam gets
PyTorch's epsilon placement through `TorchEpsilonAdam`, a subclass that overrides Keras' documented
extension point `update_step`, which also sums a sparse embedding gradient's repeated rows before squaring
them, as PyTorch does; Keras' own Adam is kept for the epsilon="hat" mismatch. Keras' SGD casts
its momentum through float32 (0.9 -> 0.89999998); `ExactMomentumSGD` keeps it in the weights' dtype.
Keras' SGD velocity is v = m*v - lr*g, so optimizer_state() reports -v/lr, PyTorch's momentum buffer.
`model_changes` (seeded faults, see rosetta.train.torch): "batchnorm_momentum": "flipped" (Keras momentum
0.1 where the ONNX 0.9 belongs), "frozen_layer": "first", "dropout_rate": "keep probability" (the first
Dropout's rate 1 - rate). Every Dropout's rate is read, then set to 0 (masks cannot match across frameworks).
"""

from __future__ import annotations

import numpy as np

from rosetta.frameworks.base import artifact_file, to_layouts
from rosetta.frameworks.keras import (SPEED_WAYS, backend_module, compiled_step, device_used, import_keras,
                                     in_precision, placement, precision_in_force, with_speed)
from rosetta.frameworks.speed import Speed
from rosetta.train.base import Trainer, check_options
from rosetta.train.optim import OptimizerSpec


def torch_epsilon_adam(keras):
    class TorchEpsilonAdam(keras.optimizers.Adam):
        """Adam with eps added to the bias-corrected sqrt(v_hat), as torch.optim.Adam does:
        w -= lr/(1-b1^t) * m / (sqrt(v)/sqrt(1-b2^t) + eps) = alpha * m / (sqrt(v) + eps*sqrt(1-b2^t))."""

        def update_step(self, gradient, variable, learning_rate):
            ops = keras.ops
            dtype = variable.dtype
            constant = lambda value: ops.convert_to_tensor(value, dtype=dtype)  # noqa: E731 (not via float32)
            if type(gradient).__name__ == "IndexedSlices":
                # TensorFlow's embedding gradient: one slice per token occurrence. Keras' ops would square
                # each slice separately (v gets g1^2 + g2^2 for a repeated token); PyTorch squares the sum.
                import tensorflow as tf

                gradient = tf.convert_to_tensor(gradient)
            lr = ops.cast(learning_rate, dtype)
            gradient = ops.cast(gradient, dtype)
            step = ops.cast(self.iterations + 1, dtype)
            correction1 = 1 - ops.power(constant(self.beta_1), step)
            correction2 = 1 - ops.power(constant(self.beta_2), step)
            m = self._momentums[self._get_variable_index(variable)]
            v = self._velocities[self._get_variable_index(variable)]
            self.assign_add(m, ops.multiply(ops.subtract(gradient, m), constant(1 - self.beta_1)))
            self.assign_add(v, ops.multiply(ops.subtract(ops.square(gradient), v), constant(1 - self.beta_2)))
            alpha = lr * ops.sqrt(correction2) / correction1
            denominator = ops.add(ops.sqrt(v), constant(self.epsilon) * ops.sqrt(correction2))
            self.assign_sub(variable, ops.divide(ops.multiply(m, alpha), denominator))

    return TorchEpsilonAdam


def exact_momentum_sgd(keras):
    class ExactMomentumSGD(keras.optimizers.SGD):
        """Keras' plain-momentum SGD (v = m*v - lr*g; w += v) with momentum held in the variable's dtype:
        Keras' own casts the Python float through float32 (0.9 -> 0.89999998), a 3e-8 relative error that
        float64 checks would see."""

        def update_step(self, gradient, variable, learning_rate):
            ops = keras.ops
            lr = ops.cast(learning_rate, variable.dtype)
            gradient = ops.cast(gradient, variable.dtype)
            m = self.momentums[self._get_variable_index(variable)]
            momentum = ops.convert_to_tensor(self.momentum, dtype=variable.dtype)
            self.assign(m, ops.subtract(ops.multiply(m, momentum), ops.multiply(gradient, lr)))
            self.assign_add(variable, m)

    return ExactMomentumSGD


def keras_optimizer(keras, spec: OptimizerSpec):
    if spec.name == "sgd":
        if spec.momentum and not spec.nesterov:
            return exact_momentum_sgd(keras)(learning_rate=spec.lr, momentum=spec.momentum)
        return keras.optimizers.SGD(learning_rate=spec.lr, momentum=spec.momentum, nesterov=spec.nesterov)
    adam = torch_epsilon_adam(keras) if spec.epsilon == "torch" else keras.optimizers.Adam
    return adam(learning_rate=spec.lr, beta_1=spec.betas[0], beta_2=spec.betas[1], epsilon=spec.eps)


def keras_loss(keras, name: str, dtype: str):
    """Keras losses compute in floatx (float32) unless given a dtype."""
    if name == "cross_entropy":
        return keras.losses.SparseCategoricalCrossentropy(from_logits=True, dtype=dtype)
    return keras.losses.MeanSquaredError(dtype=dtype)


class KerasTrainer(Trainer):
    framework = "keras"
    biased_running_variance = True  # moving_variance follows the batch's biased variance

    def __init__(self, folder, manifest, optimizer: dict, loss: str, precision: str = "float32", threads: int = 0,
                 device: str = "cpu", jit_compile: bool | str = "auto", model_changes: dict | None = None,
                 speed: dict | None = None) -> None:
        check_options(precision, device)
        keras = import_keras()
        backend = keras.backend.backend()
        if backend == "tensorflow":
            from rosetta.frameworks.tensorflow import import_tensorflow, set_threads

            tf = import_tensorflow()
            if threads:
                set_threads(threads)
            if device == "cpu":
                try:
                    tf.config.set_visible_devices([], "GPU")
                except RuntimeError:  # devices already initialised in this process
                    pass
        self.keras, self.manifest, self.precision, self.device = keras, manifest, precision, device
        self.placement = placement(keras, device)
        self.speed = Speed.from_json(speed)
        with self.placement():
            model = keras.saving.load_model(str(artifact_file(folder, manifest)), compile=False, safe_mode=True)
            model = with_speed(in_precision(model, precision), self.speed, device)
            self._prepare(model, optimizer, loss, model_changes or {},
                          jit_compile=True if self.speed.compile else (False if self.speed.eager else jit_compile))
        self.model = model
        self._settings = {"backend": backend, "threads": threads, "jit_compile": model.jit_compile,
                          "compiled step": compiled_step(keras, model), "device used": device_used(keras, model),
                          "precision in force": precision_in_force(keras, model), **self.speed.settings(**SPEED_WAYS)}

    def _prepare(self, model, optimizer: dict, loss: str, changes: dict, jit_compile) -> None:
        """The seeded model changes, dropout off, and compile() with the optimiser in the trainer's precision."""
        keras, precision = self.keras, self.precision
        self.batchnorms = [layer for layer in model._flatten_layers(include_self=False)
                           if isinstance(layer, keras.layers.BatchNormalization)]
        if changes.get("batchnorm_momentum") == "flipped":
            for layer in self.batchnorms:
                layer.momentum = 1 - layer.momentum
        if changes.get("frozen_layer") == "first":
            next(layer for layer in model._flatten_layers(include_self=False) if layer.trainable_weights).trainable = False
        dropouts = [layer for layer in model._flatten_layers(include_self=False)
                    if isinstance(layer, keras.layers.Dropout)]
        if changes.get("dropout_rate") == "keep probability" and dropouts:
            dropouts[0].rate = 1 - dropouts[0].rate
        self._dropout_rates = [float(layer.rate) for layer in dropouts]
        for layer in dropouts:
            layer.rate = 0.0
        floatx = keras.config.floatx()
        keras.config.set_floatx(precision)  # the optimiser's learning-rate variable in `precision`, not float32
        try:
            self.spec = OptimizerSpec.from_json(optimizer)
            optimizer = keras_optimizer(keras, self.spec)
            if self.speed.precision == "amp-fp16":  # float16 gradients need the loss scaled
                optimizer = keras.optimizers.LossScaleOptimizer(optimizer)
            model.compile(optimizer=optimizer, loss=keras_loss(keras, loss, precision), jit_compile=jit_compile,
                          run_eagerly=self.speed.eager)
            model.optimizer.build(model.trainable_variables)
        finally:
            keras.config.set_floatx(floatx)

    @classmethod
    def version(cls) -> str:
        keras = import_keras()
        return f"{keras.__version__} ({keras.backend.backend()} backend)"

    def step(self, feeds: dict[str, np.ndarray], labels: np.ndarray) -> float:
        arrays = []
        feeds = to_layouts(feeds, self.manifest.converter.get("layouts", {}))  # a channels-last native model
        for entry in self.manifest.inputs:
            array = feeds[entry["name"]]
            arrays.append(array.astype(self.precision) if array.dtype.kind == "f" else array)
        labels = labels.astype(self.precision) if labels.dtype.kind == "f" else labels
        with self.placement():
            loss = self.model.train_on_batch(arrays if len(arrays) > 1 else arrays[0], labels)
        return float(loss[0] if isinstance(loss, (list, tuple)) else loss)

    def parameters(self) -> np.ndarray:
        return self._flat(self.model.trainable_weights)

    def dropout_rates(self) -> list[float]:
        return self._dropout_rates

    def statistics(self) -> np.ndarray:
        return self._flat([w for layer in self.batchnorms for w in (layer.moving_mean, layer.moving_variance)])

    def optimizer_state(self) -> np.ndarray | None:
        optimizer = self.model.optimizer
        if self.spec.name == "adam":
            return self._flat([*optimizer._momentums, *optimizer._velocities])
        return -self._flat(optimizer.momentums) / self.spec.lr  # Keras' v = m*v - lr*g; PyTorch's buffer m*b + g

    def _flat(self, variables) -> np.ndarray:
        ops = self.keras.ops
        return np.concatenate([np.asarray(ops.convert_to_numpy(v.value), dtype=np.float64).ravel() for v in variables]
                              or [np.zeros(0)])

    def peak_device_mb(self) -> float | None:
        return backend_module(self.keras).peak_memory_mb(self.device)

    def settings(self) -> dict:
        return self._settings

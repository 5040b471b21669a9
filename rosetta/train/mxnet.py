"""MXNet training of the converted symbol + params artifact through Gluon: SymbolBlock, autograd, Trainer.

Gluon's Trainer.step(batch_size) divides gradients by batch_size; the loss here is already the batch mean,
so it steps with 1. MXNet's SGD with momentum is PyTorch's plain momentum (see train.optim); its fused
operator holds lr and momentum as C floats, so float64 runs use `ExactMomentumSGD`, the same rule in Python. Its Adam puts
eps before the bias correction; `torch_epsilon_adam` registers an Adam with PyTorch's placement (and MXNet's wd
and clip_gradient, which a Gluon port's check keeps) through MXNet's optimizer registry (mx.optimizer.register),
the framework's extension point for this.
Its SGD state is Keras' v = m*v - lr*g, so optimizer_state() reports -v/lr, PyTorch's momentum buffer.
`model_changes` (seeded faults, see rosetta.train.torch): "batchnorm_momentum": "flipped" rewrites every
BatchNorm's momentum in the symbol to 1 - momentum, "frozen_layer": "first" freezes the first layer's
parameters, "trainable_set": "as converted" trains the graph constants too (the importer's trainable set),
"dropout_rate": "keep probability" writes 1 - p into the first Dropout. Every Dropout's p is read from the
symbol, then set to 0 there (masks cannot match across frameworks).
"""

from __future__ import annotations

import math

import numpy as np

from rosetta.frameworks.base import artifact_file
from rosetta.frameworks.mxnet import (PARAMS_FILE, SPEED_WAYS, SYMBOL_FILE, check_speed, context_of, import_mxnet,
                                     mxnet_context)
from rosetta.frameworks.speed import Speed
from rosetta.train.base import Trainer, check_options
from rosetta.train.optim import OptimizerSpec

_REGISTERED: dict = {}


def torch_epsilon_adam(mx):
    if "adam" in _REGISTERED:
        return _REGISTERED["adam"]

    class TorchEpsilonAdam(mx.optimizer.Optimizer):
        """torch.optim.Adam's update: w -= lr/(1-b1^t) * m / (sqrt(v)/sqrt(1-b2^t) + eps), the corrections in
        Python floats (float64); MXNet's Adam options kept: wd (coupled: added to the gradient, as PyTorch's Adam
        weight_decay, only where it is set) and clip_gradient (after it). The trainers here give neither; a Gluon
        port's Adam (rosetta.train.port_mxnet) keeps the user's."""

        def __init__(self, beta1=0.9, beta2=0.999, epsilon=1e-8, **kwargs):
            super().__init__(**kwargs)
            self.beta1, self.beta2, self.epsilon = beta1, beta2, epsilon

        def create_state(self, index, weight):
            zeros = lambda: mx.nd.zeros(weight.shape, weight.context, dtype=weight.dtype)  # noqa: E731
            return zeros(), zeros()

        def update(self, index, weight, grad, state):
            self._update_count(index)
            step = self._index_update_count[index]
            lr, wd = self._get_lr(index), self._get_wd(index)
            grad = grad * self.rescale_grad
            if wd:
                grad = grad + wd * weight
            if self.clip_gradient:
                grad = mx.nd.clip(grad, -self.clip_gradient, self.clip_gradient)
            mean, var = state
            mean[:] = self.beta1 * mean + (1 - self.beta1) * grad
            var[:] = self.beta2 * var + (1 - self.beta2) * mx.nd.square(grad)
            correction1, correction2 = 1 - self.beta1 ** step, 1 - self.beta2 ** step
            weight[:] -= (lr / correction1) * mean / (mx.nd.sqrt(var) / math.sqrt(correction2) + self.epsilon)

    _REGISTERED["adam"] = mx.optimizer.register(TorchEpsilonAdam)
    return TorchEpsilonAdam


def exact_momentum_sgd(mx):
    if "sgd" in _REGISTERED:
        return _REGISTERED["sgd"]

    class ExactMomentumSGD(mx.optimizer.Optimizer):
        """MXNet's plain momentum (v = m*v - lr*g; w += v) in the weights' dtype. The fused sgd_mom_update
        operator takes lr and momentum as C floats, a 1e-8 relative rounding that float64 checks would see."""

        def __init__(self, momentum=0.0, **kwargs):
            super().__init__(**kwargs)
            self.momentum = momentum

        def create_state(self, index, weight):
            return mx.nd.zeros(weight.shape, weight.context, dtype=weight.dtype)

        def update(self, index, weight, grad, state):
            self._update_count(index)
            state[:] = self.momentum * state - self._get_lr(index) * (grad * self.rescale_grad)
            weight[:] += state

    _REGISTERED["sgd"] = mx.optimizer.register(ExactMomentumSGD)
    return ExactMomentumSGD


def mxnet_optimizer(mx, spec: OptimizerSpec, precision: str):
    if spec.name == "sgd":
        if spec.nesterov:
            return mx.optimizer.NAG(learning_rate=spec.lr, momentum=spec.momentum)
        if precision == "float64":
            return exact_momentum_sgd(mx)(learning_rate=spec.lr, momentum=spec.momentum)
        return mx.optimizer.SGD(learning_rate=spec.lr, momentum=spec.momentum)
    adam = torch_epsilon_adam(mx) if spec.epsilon == "torch" else mx.optimizer.Adam
    return adam(learning_rate=spec.lr, beta1=spec.betas[0], beta2=spec.betas[1], epsilon=spec.eps)


def flip_batchnorm_momentum(mx, symbol):
    """The symbol with every BatchNorm's momentum m rewritten as 1 - m (a seeded fault)."""
    import json

    graph = json.loads(symbol.tojson())
    for node in graph["nodes"]:
        if node["op"] == "BatchNorm":
            attrs = node.setdefault("attrs", {})
            attrs["momentum"] = repr(1 - float(attrs.get("momentum", 0.9)))
    return mx.sym.load_json(json.dumps(graph))


def dropout_rates(mx, symbol, change: str | None = None):
    """(the symbol with every Dropout's p set to 0, the p of each in graph order); `change` "keep probability"
    first writes 1 - p into the first one (a seeded fault)."""
    import json

    graph = json.loads(symbol.tojson())
    dropouts = [node.setdefault("attrs", {}) for node in graph["nodes"] if node["op"] == "Dropout"]
    rates = [float(attrs.get("p", 0.5)) for attrs in dropouts]  # 0.5: MXNet's default p
    if change == "keep probability" and rates:
        rates[0] = 1 - rates[0]
    for attrs in dropouts:
        attrs["p"] = "0"
    return mx.sym.load_json(json.dumps(graph)), rates


def freeze_first_layer(symbol, parameters) -> list[str]:
    """The trainable inputs of the symbol's first operator that has any, frozen (a seeded fault); their names."""
    import json

    graph = json.loads(symbol.tojson())
    for node in graph["nodes"]:
        names = [graph["nodes"][i[0]]["name"] for i in node["inputs"]] if node["op"] != "null" else []
        frozen = [n for n in names if n in parameters and parameters[n].grad_req != "null"]
        if frozen:
            for name in frozen:
                parameters[name].grad_req = "null"
            return frozen
    return []


class MXNetTrainer(Trainer):
    framework = "mxnet"
    biased_running_variance = True  # BatchNorm's running_var follows the batch's biased variance

    def __init__(self, folder, manifest, optimizer: dict, loss: str, precision: str = "float32", threads: int = 0,
                 device: str = "cpu", hybridize: bool = True, model_changes: dict | None = None,
                 speed: dict | None = None) -> None:
        import os

        check_options(precision, device)
        self.speed = speed = Speed.from_json(speed)
        check_speed(speed, device)  # compile: hybridize with static_alloc, the trainer's default already; eager: not
        os.environ.setdefault("MXNET_CUDNN_AUTOTUNE_DEFAULT", "1")
        mx = import_mxnet(threads)
        self.mx, self.manifest, self.precision = mx, manifest, precision
        self.context = mxnet_context(device)
        artifact = artifact_file(folder, manifest)
        names = [entry["name"] for entry in manifest.inputs]
        changes = model_changes or {}
        symbol = mx.sym.load(str(artifact / SYMBOL_FILE))
        if changes.get("batchnorm_momentum") == "flipped":
            symbol = flip_batchnorm_momentum(mx, symbol)
        symbol, self._dropout_rates = dropout_rates(mx, symbol, changes.get("dropout_rate"))
        self.block = mx.gluon.SymbolBlock(symbol, [mx.sym.var(name) for name in names])
        self.block.collect_params().load(str(artifact / PARAMS_FILE), self.context, cast_dtype=True,
                                         dtype_source="saved")  # as SymbolBlock.imports loads them
        self.auxiliary = set(symbol.list_auxiliary_states())  # BatchNorm's running mean and variance
        if precision != "float32":
            self.block.cast(precision)
        hybridize = hybridize and not speed.eager
        if hybridize:
            self.block.hybridize(static_alloc=True, static_shape=True)
        constants = set(manifest.converter.get("constant_parameters", []))
        if changes.get("trainable_set") == "as converted":
            constants = set()
        for name, parameter in self.block.collect_params().items():
            if name in constants:
                parameter.grad_req = "null"
        if changes.get("frozen_layer") == "first":
            freeze_first_layer(symbol, self.block.collect_params())
        self.trainable = [p for p in self.block.collect_params().values() if p.grad_req != "null"]
        self.spec = OptimizerSpec.from_json(optimizer)
        self.trainer = mx.gluon.Trainer(self.trainable, mxnet_optimizer(mx, self.spec, precision),
                                        kvstore=None)
        if loss == "cross_entropy":
            self.loss = mx.gluon.loss.SoftmaxCrossEntropyLoss(sparse_label=True)
        else:
            self.loss = lambda output, target: mx.nd.mean(mx.nd.square(output - target), axis=tuple(range(1, output.ndim)))
        self._settings = {"threads": threads, "hybridize": hybridize, "device used": context_of(self.block),
                          **speed.settings(**SPEED_WAYS),
                          "MXNET_CUDNN_AUTOTUNE_DEFAULT": os.environ["MXNET_CUDNN_AUTOTUNE_DEFAULT"]}

    @classmethod
    def version(cls) -> str:
        return import_mxnet().__version__

    def _array(self, array: np.ndarray):
        # legacy operators read indices (Gather -> take) as floating point; ids < 2**24 stay exact
        return self.mx.nd.array(array, ctx=self.context, dtype=self.precision)

    def step(self, feeds: dict[str, np.ndarray], labels: np.ndarray) -> float:
        mx = self.mx
        inputs = [self._array(feeds[entry["name"]]) for entry in self.manifest.inputs]
        target = self._array(labels)
        with mx.autograd.record(train_mode=True):
            output = self.block(*inputs)
            output = output[0] if isinstance(output, (list, tuple)) else output
            loss = self.loss(output, target).mean()
        loss.backward()
        self.trainer.step(1)
        return float(loss.asscalar())

    def dropout_rates(self) -> list[float]:
        return self._dropout_rates

    def parameters(self) -> np.ndarray:
        return np.concatenate([p.data().asnumpy().astype(np.float64).ravel() for p in self.trainable])

    def statistics(self) -> np.ndarray:
        values = [p for name, p in self.block.collect_params().items() if name in self.auxiliary]
        return np.concatenate([p.data().asnumpy().astype(np.float64).ravel() for p in values] or [np.zeros(0)])

    def optimizer_state(self) -> np.ndarray | None:
        states = self.trainer._updaters[0].states
        arrays = []
        for index in sorted(states):
            state = states[index]
            arrays.extend(state if isinstance(state, (list, tuple)) else [state])
        values = np.concatenate([a.asnumpy().astype(np.float64).ravel() for a in arrays if a is not None] or [np.zeros(0)])
        return values if self.spec.name == "adam" else -values / self.spec.lr  # MXNet's v = m*v - lr*g

    def synchronize(self) -> None:
        self.mx.nd.waitall()

    def settings(self) -> dict:
        return self._settings

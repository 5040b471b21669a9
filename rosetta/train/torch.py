"""PyTorch training: the reference model and the converted `torch` artifact (onnx2torch) share one trainer.

onnx2torch keeps ONNX initializers that no layer owns (the GRU model's embedding table, read by Gather) as
buffers of an `initializers` container, which an optimiser never sees. `make_initializers_trainable` turns
its floating-point buffers into Parameters so the converted model trains every weight the original trains
(the test checks the trainable count equals the reference's).

`model_changes` seed wrong models for the training faults (rosetta.verify.training): "batchnorm_momentum":
"flipped" writes 1 - momentum into every BatchNorm (0.9 where torch means 0.1, as MMdnn's PyTorch emitter
does); "frozen_layer": "first" leaves the first layer with weights untrained; "trainable_set": "as converted"
skips make_initializers_trainable (onnx2torch's own trainable set); "dropout_rate": "keep probability" writes
1 - p into the first Dropout (a keep probability taken for a drop rate, TF 1's keep_prob).
"""

from __future__ import annotations

import numpy as np

from rosetta.frameworks.onnx2torch import load_module
from rosetta.frameworks.torch import (SPEED_WAYS, check_speed, compile_errors, module_device, peak_memory_mb,
                                     speed_contexts, torch_device)
from rosetta.models import get_model
from rosetta.train.base import Trainer, check_options
from rosetta.train.optim import OptimizerSpec


def torch_optimizer(parameters, spec: OptimizerSpec):
    import torch

    if spec.name == "sgd":
        return torch.optim.SGD(parameters, lr=spec.lr, momentum=spec.momentum, dampening=0.0, nesterov=spec.nesterov)
    if spec.epsilon != "torch":
        raise ValueError("PyTorch's Adam only adds eps to the bias-corrected sqrt(v_hat) (epsilon='torch')")
    return torch.optim.Adam(parameters, lr=spec.lr, betas=spec.betas, eps=spec.eps)


def torch_loss(name: str):
    import torch.nn.functional as F

    return {"cross_entropy": F.cross_entropy, "mse": F.mse_loss}[name]


def flip_batchnorm_momentum(module) -> int:
    """Every BatchNorm's momentum m replaced by 1 - m (a seeded fault); returns how many layers."""
    layers = [layer for layer in module.modules() if "BatchNorm" in type(layer).__name__ and layer.momentum is not None]
    for layer in layers:
        layer.momentum = 1 - layer.momentum
    return len(layers)


def dropout_rates(module, change: str | None = None) -> list[float]:
    """Every torch.nn.Dropout's p, in module order, then turned off (p = 0: masks cannot match across
    frameworks); `change` "keep probability" first writes 1 - p into the first one (a seeded fault)."""
    import torch

    layers = [layer for layer in module.modules() if isinstance(layer, torch.nn.Dropout)]
    if change == "keep probability" and layers:
        layers[0].p = 1 - layers[0].p
    rates = [float(layer.p) for layer in layers]
    for layer in layers:
        layer.p = 0.0
    return rates


def freeze_first_layer(module) -> list[str]:
    """The first layer that holds trainable parameters made untrainable (a seeded fault); its parameter names."""
    for name, layer in module.named_modules():
        own = [(key, p) for key, p in layer.named_parameters(recurse=False) if p.requires_grad]
        if own:
            for _, parameter in own:
                parameter.requires_grad_(False)
            return [f"{name}.{key}" for key, _ in own]
    return []


def make_initializers_trainable(module) -> int:
    """Re-register onnx2torch's floating-point initializer buffers as Parameters; returns how many."""
    import torch

    container = getattr(module, "initializers", None)
    if container is None:
        return 0
    names = [name for name, buffer in container.named_buffers(recurse=False) if buffer.is_floating_point()]
    for name in names:
        value = getattr(container, name)
        delattr(container, name)
        container.register_parameter(name, torch.nn.Parameter(value.detach().clone()))
    return len(names)


class TorchTrainer(Trainer):
    framework = "torch"

    def __init__(self, module, input_names: list[str], optimizer: dict, loss: str, precision: str = "float32",
                 threads: int = 0, device: str = "cpu", compile: bool = False, cudnn_benchmark: bool = True,
                 model_changes: dict | None = None, speed: dict | None = None) -> None:
        import torch

        check_options(precision, device)
        self.speed = check_speed(speed, device)
        compile = compile or self.speed.compile
        changes = model_changes or {}
        if changes.get("batchnorm_momentum") == "flipped":
            flip_batchnorm_momentum(module)
        if changes.get("frozen_layer") == "first":
            freeze_first_layer(module)
        if threads:
            torch.set_num_threads(threads)
        self.torch, self.device, self.dtype = torch, torch_device(device), getattr(torch, precision)
        if device == "cuda":
            torch.backends.cudnn.benchmark = cudnn_benchmark
        self._dropout_rates = dropout_rates(module, changes.get("dropout_rate"))  # train mode is for BatchNorm
        self.module = module.to(self.dtype).to(self.device).train()
        if self.speed.channels_last:
            self.module = self.module.to(memory_format=torch.channels_last)
        self.autocast, self.scaler, in_force = speed_contexts(torch, self.speed, self.device)
        self.input_names = list(input_names)
        self.trainable = [p for p in self.module.parameters() if p.requires_grad]
        self.spec = OptimizerSpec.from_json(optimizer)
        self.optimizer = torch_optimizer(self.trainable, self.spec)
        self.loss = torch_loss(loss)
        self.forward = torch.compile(self.module) if compile else self.module
        self._settings = {"threads": torch.get_num_threads(), "compile": compile,
                          "device used": module_device(self.module, self.device), "precision in force": in_force,
                          **({"cudnn.benchmark": torch.backends.cudnn.benchmark} if device == "cuda" else {}),
                          **self.speed.settings(**SPEED_WAYS)}

    def dropout_rates(self) -> list[float]:
        return self._dropout_rates

    @staticmethod
    def reference(model: str, seed: int = 0, **options) -> TorchTrainer:
        """A trainer of the PyTorch reference model itself (rosetta.models), built with `seed`."""
        spec = get_model(model)
        return TorchTrainer(spec.build(seed), [t.name for t in spec.inputs], **options)

    @classmethod
    def version(cls) -> str:
        import torch

        return torch.__version__

    def _tensor(self, array: np.ndarray):
        tensor = self.torch.from_numpy(np.ascontiguousarray(array)).to(self.device)
        if self.speed.channels_last and tensor.dim() == 4:
            tensor = tensor.contiguous(memory_format=self.torch.channels_last)
        return tensor.to(self.dtype) if tensor.is_floating_point() else tensor

    def step(self, feeds: dict[str, np.ndarray], labels: np.ndarray) -> float:
        inputs = [self._tensor(feeds[name]) for name in self.input_names]
        self.optimizer.zero_grad(set_to_none=True)
        with self.autocast(), compile_errors(self.forward is not self.module):
            output = self.forward(*inputs)
            output = output[0] if isinstance(output, (tuple, list)) else output
            loss = self.loss(output, self._tensor(labels))
        if self.scaler is not None:  # amp-fp16: the loss scaled so that small float16 gradients survive
            self.scaler.scale(loss).backward()
            self.scaler.step(self.optimizer)
            self.scaler.update()
        else:
            loss.backward()
            self.optimizer.step()
        return float(loss.detach())

    def parameters(self) -> np.ndarray:
        return np.concatenate([p.detach().cpu().double().numpy().ravel() for p in self.trainable])

    def statistics(self) -> np.ndarray:
        buffers = [b for name, b in self.module.named_buffers() if name.rsplit(".", 1)[-1] in ("running_mean", "running_var")]
        return np.concatenate([b.detach().cpu().double().numpy().ravel() for b in buffers] or [np.zeros(0)])

    def optimizer_state(self) -> np.ndarray | None:
        keys = ("exp_avg", "exp_avg_sq") if self.spec.name == "adam" else ("momentum_buffer",)
        values = [self.optimizer.state[p][key] for p in self.trainable for key in keys if key in self.optimizer.state[p]]
        return np.concatenate([v.detach().cpu().double().numpy().ravel() for v in values] or [np.zeros(0)])

    def synchronize(self) -> None:
        if self.device.type == "cuda":
            self.torch.cuda.synchronize()

    def peak_device_mb(self) -> float | None:
        return peak_memory_mb(self.device.type)

    def settings(self) -> dict:
        return self._settings


class TorchArtifactTrainer(TorchTrainer):
    """Trains the converted `torch` artifact (onnx2torch graph + state_dict)."""

    def __init__(self, folder, manifest, **options) -> None:
        module = load_module(folder, manifest)
        if (options.get("model_changes") or {}).get("trainable_set") != "as converted":
            make_initializers_trainable(module)
        super().__init__(module, [entry["name"] for entry in manifest.inputs], **options)

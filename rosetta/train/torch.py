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
from rosetta.frameworks.speed import SettingUnavailable, Speed
from rosetta.frameworks.torch import (REDUCE_OVERHEAD, SPEED_WAYS, CapturedStep, ResidentBatches, check_speed, clock_for,
                                     compile_errors, compiled, compiled_frames, module_device, peak_memory_mb, speed_contexts,
                                     synchronizer, to_tensor, torch_device)
from rosetta.models import get_model
from rosetta.train.base import Trainer, check_options
from rosetta.train.optim import OptimizerSpec


def torch_optimizer(parameters, spec: OptimizerSpec, capturable: bool = False):
    """The optimiser; `capturable`: Adam keeps its step count on the device, so a CUDA graph can hold its update."""
    import torch

    if spec.name == "sgd":
        return torch.optim.SGD(parameters, lr=spec.lr, momentum=spec.momentum, dampening=0.0, nesterov=spec.nesterov)
    if spec.epsilon != "torch":
        raise ValueError("PyTorch's Adam only adds eps to the bias-corrected sqrt(v_hat) (epsilon='torch')")
    return torch.optim.Adam(parameters, lr=spec.lr, betas=spec.betas, eps=spec.eps,
                            **({"capturable": True} if capturable else {}))


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
    """Speed variants (rosetta.frameworks.speed): --cuda-graphs captures the whole step (forward, loss,
    backward, optimiser) as one CUDA graph after CAPTURE_AFTER eager steps (CapturedStep; with --compile,
    torch.compile's reduce-overhead mode instead); --resident-data stages every batch once (stage) and leaves
    each step's loss on the device (staged_step), read back after the timed steps (loss_values)."""

    framework = "torch"

    def __init__(self, module, input_names: list[str], optimizer: dict, loss: str, precision: str = "float32",
                 threads: int = 0, device: str = "cpu", model_changes: dict | None = None,
                 speed: dict | None = None) -> None:
        """`speed`: the speed variant (its `compile`: torch.compile); on CUDA cuDNN picks its algorithms by
        benchmark (cudnn.benchmark)."""
        import torch

        check_options(precision, device)
        self.speed = check_speed(speed or {}, device)
        if self.speed.cuda_graphs and self.speed.precision == "amp-fp16":
            raise SettingUnavailable("cuda_graphs= with precision=amp-fp16 is not available in PyTorch: its "
                                     "GradScaler reads the gradients' inf check back to the host every step")
        changes = model_changes or {}
        if changes.get("batchnorm_momentum") == "flipped":
            flip_batchnorm_momentum(module)
        if changes.get("frozen_layer") == "first":
            freeze_first_layer(module)
        if threads:
            torch.set_num_threads(threads)
        self.torch, self.device, self.dtype = torch, torch_device(device), getattr(torch, precision)
        if device == "cuda":
            torch.backends.cudnn.benchmark = True
        self._dropout_rates = dropout_rates(module, changes.get("dropout_rate"))  # train mode is for BatchNorm
        self.module = module.to(self.dtype).to(self.device).train()
        if self.speed.channels_last:
            self.module = self.module.to(memory_format=torch.channels_last)
        self.autocast, self.scaler, in_force = speed_contexts(torch, self.speed, self.device)
        self.input_names = list(input_names)
        self.trainable = [p for p in self.module.parameters() if p.requires_grad]
        self.spec = OptimizerSpec.from_json(optimizer)
        self.optimizer = torch_optimizer(self.trainable, self.spec, capturable=self.speed.cuda_graphs)
        self.loss = torch_loss(loss)
        self.forward = compiled(torch, self.module, self.speed)
        graphs = self.speed.cuda_graphs and not self.speed.compile  # else torch.compile's own, or none
        self.train_step = CapturedStep(self._eager_step) if graphs else self._eager_step
        self.staged_where = ""
        self._settings = {"threads": torch.get_num_threads(), "compile": self.speed.compile,
                          "device used": module_device(self.module, self.device), "precision in force": in_force,
                          **({"cudnn.benchmark": torch.backends.cudnn.benchmark} if device == "cuda" else {}),
                          **self.speed.settings(**{**SPEED_WAYS, "cuda_graphs": REDUCE_OVERHEAD if self.speed.compile
                                                   else SPEED_WAYS["cuda_graphs"]})}

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

    def _tensors(self, feeds: dict[str, np.ndarray], labels: np.ndarray, device) -> list:
        """The step's inputs and labels as tensors on `device`."""
        return [to_tensor(self.torch, array, device, self.dtype, self.speed.channels_last)
                for array in [feeds[name] for name in self.input_names] + [labels]]

    def _eager_step(self, *tensors):
        """One optimiser step on (inputs..., labels) tensors on the device; the loss, left there."""
        *inputs, labels = tensors
        self.optimizer.zero_grad(set_to_none=True)
        with self.autocast(), compile_errors(self.forward is not self.module):
            output = self.forward(*inputs)
            output = output[0] if isinstance(output, (tuple, list)) else output
            loss = self.loss(output, labels)
        if self.scaler is not None:  # amp-fp16: the loss scaled so that small float16 gradients survive
            self.scaler.scale(loss).backward()
            self.scaler.step(self.optimizer)
            self.scaler.update()
        else:
            loss.backward()
            self.optimizer.step()
        return loss.detach()

    def step(self, feeds: dict[str, np.ndarray], labels: np.ndarray) -> float:
        return float(self.train_step(*self._tensors(feeds, labels, self.device)))

    def stage(self, batches: list) -> ResidentBatches:
        staged = ResidentBatches([self._tensors(feeds, labels, "cpu") for feeds, labels in batches], self.device)
        self.staged_where = staged.where
        return staged

    def staged_step(self, staged: ResidentBatches, index: int):
        loss = self.train_step(*staged[index])
        return loss.clone() if isinstance(self.train_step, CapturedStep) else loss  # a graph's loss is overwritten

    def loss_values(self, losses: list) -> list[float]:
        return [float(value) for value in self.torch.stack(losses).cpu()]

    def clock(self):
        return clock_for(self.device)

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
        synchronizer(self.device)()

    def peak_device_mb(self) -> float | None:
        return peak_memory_mb(self.device.type)

    def settings(self) -> dict:
        return {**self._settings, **({"staged": self.staged_where} if self.staged_where else {}),
                **({"torch.compile": compiled_frames()} if self.speed.compile else {})}


class TorchArtifactTrainer(TorchTrainer):
    """Trains the converted `torch` artifact (onnx2torch graph + state_dict)."""

    def __init__(self, folder, manifest, **options) -> None:
        module = load_module(folder, manifest)
        if (options.get("model_changes") or {}).get("trainable_set") != "as converted":
            make_initializers_trainable(module)
        super().__init__(module, [entry["name"] for entry in manifest.inputs], **options)

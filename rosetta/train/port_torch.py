"""The PyTorch side of a port's training check (rosetta.verify.port_training): a user's training setup (module,
torch.optim optimiser, loss callable) read into plain data (torch_setup), trained on given batches in float32 or
float64 as users' loops train it (train_torch: a copy, the caller's objects untouched; clipping where the
optimiser says the loop clips), the tensors it starts from (initial_tensors, a torch RNN's two biases also as
Keras' one: fused_biases), and the layout its images take (torch_layout). Beside port_keras.py and port_mxnet.py,
the other sides; verify/ compares what they return and imports no framework.

Modelled conventions (see rosetta.verify.port_training): the running variance in Keras' (and MXNet's) convention,
the biased batch variance, re-computed from the batch each BatchNorm sees; global-norm clipping as Keras'
global_clipnorm computes it.
"""

from __future__ import annotations

import copy

import numpy as np

from rosetta.errors import BadInput

STATISTICS = ("running_mean", "running_var")
CLIPPING = ("clip_grad_norm", "clip_grad_value")  # optimizer attributes: what the user's loop clips (see train_torch)


def _loss_setup(loss_fn) -> dict:
    name = getattr(loss_fn, "__name__", "") or type(loss_fn).__name__
    setup = {"class": type(loss_fn).__name__ if hasattr(loss_fn, "forward") else name}
    for key in ("reduction", "label_smoothing", "ignore_index"):
        if hasattr(loss_fn, key):
            setup[key] = getattr(loss_fn, key)
    weight = getattr(loss_fn, "weight", None)  # CrossEntropyLoss(weight=...): class weights
    if weight is not None:
        setup["class_weights"] = [float(w) for w in weight.detach().reshape(-1)]
    return setup


def _plain(value):
    if isinstance(value, (bool, int, float, str)) or value is None:
        return value
    if isinstance(value, (list, tuple)):
        return [_plain(v) for v in value]
    if hasattr(value, "item") and getattr(value, "ndim", 1) == 0:
        return value.item()
    return str(value)


def torch_setup(module, optimizer, loss_fn) -> dict:
    import torch

    groups = [{key: _plain(v) for key, v in group.items() if key != "params"} for group in optimizer.param_groups]
    batchnorms = [{"name": name, "momentum": layer.momentum, "epsilon": layer.eps}
                  for name, layer in module.named_modules() if isinstance(layer, torch.nn.modules.batchnorm._BatchNorm)]
    dropouts = [{"name": name, "rate": float(layer.p)} for name, layer in module.named_modules()
                if isinstance(layer, torch.nn.modules.dropout._DropoutNd)]
    kept = module.training  # see train_torch: a module in training mode keeps its submodules' modes
    for layer in batchnorms:
        layer["training"] = bool(module.get_submodule(layer["name"]).training) if kept else True
    clipping = {key: float(getattr(optimizer, key)) for key in CLIPPING if getattr(optimizer, key, None) is not None}
    return {"optimizer": {"class": type(optimizer).__name__,
                          "defaults": {k: _plain(v) for k, v in optimizer.defaults.items()}, "groups": groups,
                          **clipping},
            "loss": _loss_setup(loss_fn), "batchnorm": batchnorms, "dropout": dropouts,
            "frozen": [name for name, p in module.named_parameters() if not p.requires_grad]}


def recurrent_layers(module) -> list[tuple[str, str]]:
    """(name, "GRU" or "LSTM") of every one-layer, one-direction torch RNN with biases: their two bias vectors
    pair with Keras' one (see fused_biases)."""
    import torch

    return [(name, type(layer).__name__) for name, layer in module.named_modules()
            if isinstance(layer, (torch.nn.GRU, torch.nn.LSTM)) and layer.num_layers == 1
            and not layer.bidirectional and layer.bias]


def fused_biases(tensors: dict, recurrent: list) -> dict:
    """`tensors` with each torch RNN's two bias vectors also as the one tensor Keras holds for them: a GRU's
    (reset_after=True) stacked (2, 3h) as Keras' GRU bias, an LSTM's summed (4h) as Keras' LSTM bias (only their
    sum acts)."""
    for name, kind in recurrent:
        ih, hh = (tensors.get(f"{name}.bias_{part}_l0") for part in ("ih", "hh"))
        if ih is None or hh is None:
            continue
        if kind == "GRU":
            tensors[f"{name}.bias_ih_l0|bias_hh_l0"] = np.stack([ih, hh])
        else:
            tensors[f"{name}.bias_ih_l0+bias_hh_l0"] = ih + hh
    return tensors


def _copied_optimizer(optimizer, module, copied):
    """The user's optimiser class and param groups, on `copied` (a copy of `module`), fresh (no state)."""
    names = {id(p): name for name, p in module.named_parameters()}
    parameters = dict(copied.named_parameters())
    groups = []
    for group in optimizer.param_groups:
        missing = [p for p in group["params"] if id(p) not in names]
        if missing:
            raise BadInput("the optimizer holds parameters that are not the module's: give the optimizer built "
                           "on the module's own parameters")
        groups.append({**{k: v for k, v in group.items() if k != "params"},
                       "params": [parameters[names[id(p)]] for p in group["params"]]})
    try:
        return type(optimizer)(groups, **optimizer.defaults)
    except TypeError:
        return type(optimizer)(groups)


def clip_global_norm(parameters, max_norm: float) -> None:
    """torch.nn.utils.clip_grad_norm_ as Keras' global_clipnorm computes it: gradients x max_norm / max(norm,
    max_norm); PyTorch's adds 1e-6 to the norm (max_norm / (norm + 1e-6)), a relative 1e-6 / norm that reached
    10 x the noise floor at step 1 on the test pair: a convention, modelled."""
    import torch

    grads = [p.grad for p in parameters if p.grad is not None]
    if not grads:
        return
    norm = torch.linalg.vector_norm(torch.stack([torch.linalg.vector_norm(g) for g in grads]))
    scale = max_norm * torch.minimum(1.0 / norm, torch.tensor(1.0 / max_norm, dtype=norm.dtype))
    for g in grads:
        g.mul_(scale)


def train_torch(module, optimizer, loss_fn, batches: list, precision: str, dropout_off: bool) -> dict:
    """The PyTorch side trained on `batches` in `precision` (a copy: the caller's module and optimiser untouched):
    the loss of every step and, after every step, every parameter and BatchNorm statistic by name (running
    variances in Keras' convention, biased: see the module docstring)."""
    import torch

    dtype = torch.float64 if precision == "float64" else torch.float32
    model = copy.deepcopy(module).to(dtype)
    if not module.training:  # left in eval mode after inference: trained as a whole; else as the user set it
        model.train()
    clip_norm, clip_value = (getattr(optimizer, key, None) for key in CLIPPING)
    recurrent = recurrent_layers(model)
    loss = copy.deepcopy(loss_fn).to(dtype) if isinstance(loss_fn, torch.nn.Module) else loss_fn
    if dropout_off:
        for layer in model.modules():
            if isinstance(layer, torch.nn.modules.dropout._DropoutNd):
                layer.p = 0.0
    opt = _copied_optimizer(optimizer, module, model)
    modelled, hooks = {}, []
    for name, layer in model.named_modules():
        if isinstance(layer, torch.nn.modules.batchnorm._BatchNorm) and layer.track_running_stats:
            if layer.momentum is None:
                raise BadInput(f"{name}: BatchNorm momentum=None (a cumulative average) has no Keras counterpart")
            modelled[name] = layer.running_var.detach().clone()

            def biased(layer, args, name=name):
                if not layer.training:  # in eval mode (left on by the user): its statistics do not move
                    return
                x = args[0].detach()
                values = x.transpose(0, 1).reshape(x.shape[1], -1)
                batch_var = values.var(dim=1, unbiased=False)
                modelled[name] = (1 - layer.momentum) * modelled[name] + layer.momentum * batch_var

            hooks.append(layer.register_forward_pre_hook(biased))
    losses, states = [], []
    with torch.random.fork_rng():
        torch.manual_seed(0)
        for feeds, labels in batches:
            arguments = [torch.from_numpy(np.asarray(a)).to(dtype) if np.asarray(a).dtype.kind == "f"
                         else torch.from_numpy(np.asarray(a)) for a in feeds]
            target = torch.from_numpy(labels)
            if labels.dtype.kind == "f":
                target = target.to(dtype)
            opt.zero_grad()
            output = model(*arguments)
            if isinstance(output, (tuple, list)):
                output = output[0]
            value = loss(output, target)
            value.backward()
            if clip_value is not None:  # torch.nn.utils.clip_grad_value_(parameters, clip_value) in the user's loop
                torch.nn.utils.clip_grad_value_(model.parameters(), float(clip_value))
            if clip_norm is not None:  # torch.nn.utils.clip_grad_norm_(parameters, max_norm): the global norm
                clip_global_norm(model.parameters(), float(clip_norm))
            opt.step()
            losses.append(float(value.detach()))
            state = {name: p.detach().double().numpy().copy() for name, p in model.named_parameters()}
            for name, buffer in model.named_buffers():
                layer, _, part = name.rpartition(".")
                if part == "running_var" and layer in modelled:
                    state[name] = modelled[layer].double().numpy().copy()
                elif part in STATISTICS:
                    state[name] = buffer.detach().double().numpy().copy()
            states.append(fused_biases(state, recurrent))
    for hook in hooks:
        hook.remove()
    return {"losses": np.asarray(losses), "states": states}


def initial_tensors(module) -> dict:
    tensors = {name: p.detach().double().numpy() for name, p in module.named_parameters()}
    tensors.update({name: b.detach().double().numpy() for name, b in module.named_buffers()
                    if name.rpartition(".")[2] in STATISTICS})
    return fused_biases(tensors, recurrent_layers(module))


def torch_layout(module, feeds: list) -> str:
    """"" where the PyTorch module takes the feeds as generated, "channels-first" where it takes its images moved
    channels-first (a Keras reference's specs are channels-last); tried on a copy in eval mode."""
    import torch

    probe = copy.deepcopy(module).eval()
    tried = ("", "channels-first") if any(np.asarray(a).ndim >= 3 for a in feeds) else ("",)
    for layout in tried:
        arguments = [torch.from_numpy(np.ascontiguousarray(moved(np.asarray(a), layout))) for a in feeds]
        arguments = [a.float() if a.is_floating_point() else a for a in arguments]
        try:
            with torch.no_grad():
                probe(*arguments)
            return layout
        except Exception:  # noqa: BLE001: the next layout, or the first error said below
            continue
    raise BadInput("the PyTorch module takes neither the inputs as given nor their channels-first form")


def moved(array: np.ndarray, layout: str) -> np.ndarray:
    """`array` with its channels moved first where `layout` says "channels-first" (images of 3 or more axes)."""
    return np.moveaxis(array, -1, 1) if layout == "channels-first" and array.ndim >= 3 else array

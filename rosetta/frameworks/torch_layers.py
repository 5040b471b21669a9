"""Every leaf module of a PyTorch model as it runs (frameworks.layers.Layer), and one leaf run alone."""

from __future__ import annotations

import copy

import numpy as np

from rosetta.frameworks.layers import Layer


def trace_module(module, arrays: list[np.ndarray], precision: str = "float32") -> list[Layer]:
    """Run `module` (a copy, in eval mode and `precision`) on `arrays`; a Layer per module call, in the order the
    calls end: every leaf, and every module holding others (kind "block", its output read, its parameters left to
    its leaves), so that a port whose one layer is a whole block of the reference has a tensor to agree with."""
    import torch

    dtype = getattr(torch, precision)
    model = copy.deepcopy(module).to(dtype).eval()
    layers: list[Layer] = []
    seen: dict[str, list] = {}

    def before(name):
        def hook(_, args):
            seen.setdefault(name, []).append([_numpy(a) for a in args if isinstance(a, torch.Tensor)])
        return hook

    def after(name):
        def hook(leaf, args, output):
            first = output[0] if isinstance(output, (tuple, list)) else output
            if not isinstance(first, torch.Tensor):
                return
            kind, params, config = describe(leaf) if name in leaves else ("block", {}, {})
            layers.append(Layer(name, kind, type(leaf).__name__, _numpy(first), seen[name].pop(), params, config))
        return hook

    tensors = [torch.from_numpy(np.ascontiguousarray(a)) for a in arrays]
    tensors = [t.to(dtype) if t.is_floating_point() else t for t in tensors]
    leaves = {name for name, _ in leaf_modules(_user_modules(model))}
    run_with_leaf_hooks(model, [(name, m) for name, m in _user_modules(model) if name], before, after, tensors)
    return layers


def leaf_modules(named_modules) -> list:
    """(name, module) of the modules that hold no other: the layers a model computes with."""
    return [(name, leaf) for name, leaf in named_modules if name and not any(True for _ in leaf.children())]


def run_with_leaf_hooks(model, leaves, before, after, tensors, with_kwargs: bool = False) -> None:
    """`model(*tensors)` in inference mode with before(name) and after(name) as each leaf's forward pre-hook and
    hook, removed afterwards whatever happens."""
    import torch

    handles = []
    for name, leaf in leaves:
        handles += [leaf.register_forward_pre_hook(before(name), with_kwargs=with_kwargs),
                    leaf.register_forward_hook(after(name), with_kwargs=with_kwargs)]
    try:
        with torch.inference_mode():
            model(*tensors)
    finally:
        for handle in handles:
            handle.remove()


def run_leaf(module, name: str, inputs: list[np.ndarray], precision: str = "float32") -> np.ndarray:
    """The module `name` of `module` (a leaf, or a block of them) run alone on `inputs` (its first output)."""
    import torch

    dtype = getattr(torch, precision)
    leaf = copy.deepcopy(dict(_user_modules(module))[name]).to(dtype).eval()
    tensors = [torch.from_numpy(np.ascontiguousarray(a)) for a in inputs]
    with torch.inference_mode():
        output = leaf(*[t.to(dtype) if t.is_floating_point() else t for t in tensors])
    return _numpy(output[0] if isinstance(output, (tuple, list)) else output)


def _numpy(tensor) -> np.ndarray:
    return tensor.detach().cpu().numpy().copy()


def describe(leaf) -> tuple[str, dict, dict]:
    """(kind, canonical parameters, canonical configuration) of a leaf module (frameworks.layers)."""
    import torch.nn as nn

    state = {k: v.detach().cpu().numpy() for k, v in leaf.state_dict().items()}
    if isinstance(leaf, (nn.Conv1d, nn.Conv2d, nn.Conv3d)):
        spatial = leaf.weight.dim() - 2
        padding = leaf.padding if isinstance(leaf.padding, tuple) else (leaf.padding,) * spatial
        pads = [(p, p) for p in padding] if not isinstance(leaf.padding, str) else leaf.padding
        return "conv", {"weight": state["weight"], **({"bias": state["bias"]} if "bias" in state else {})}, \
            {"strides": list(leaf.stride), "dilations": list(leaf.dilation), "pads": pads, "groups": leaf.groups}
    if isinstance(leaf, nn.Linear):
        return "dense", {"weight": state["weight"], **({"bias": state["bias"]} if "bias" in state else {})}, {}
    if isinstance(leaf, nn.modules.batchnorm._BatchNorm):
        return "batchnorm", {"scale": state.get("weight"), "shift": state.get("bias"), "mean": state["running_mean"],
                             "var": state["running_var"]}, {"epsilon": leaf.eps, "momentum": leaf.momentum}
    if isinstance(leaf, nn.LayerNorm):
        return "layernorm", {"scale": state.get("weight"), "shift": state.get("bias")}, {"epsilon": leaf.eps}
    if isinstance(leaf, nn.GRU):
        return "gru", _recurrent(state, leaf), {"reset_after": True, "hidden": leaf.hidden_size,
                                                "layers": leaf.num_layers, "bidirectional": leaf.bidirectional}
    if isinstance(leaf, nn.LSTM):
        params = _recurrent(state, leaf)
        return "lstm", params, {"hidden": leaf.hidden_size, "layers": leaf.num_layers,
                                "bidirectional": leaf.bidirectional}
    if isinstance(leaf, nn.Embedding):
        return "embedding", {"weight": state["weight"]}, {}
    if isinstance(leaf, (nn.MaxPool1d, nn.MaxPool2d, nn.MaxPool3d, nn.AvgPool1d, nn.AvgPool2d, nn.AvgPool3d)):
        spatial = int(type(leaf).__name__[-2])
        as_list = lambda v: list(v) if isinstance(v, tuple) else [v] * spatial  # noqa: E731
        return "pool", {}, {"kernel": as_list(leaf.kernel_size), "strides": as_list(leaf.stride or leaf.kernel_size),
                            "pads": [(p, p) for p in as_list(leaf.padding)], "ceil": leaf.ceil_mode,
                            "type": "max" if "Max" in type(leaf).__name__ else "average"}
    simple = {nn.ReLU: "activation", nn.ReLU6: "activation", nn.Tanh: "activation", nn.Sigmoid: "activation",
              nn.GELU: "activation", nn.SiLU: "activation", nn.Hardswish: "activation", nn.LeakyReLU: "activation",
              nn.Softmax: "activation", nn.Flatten: "flatten", nn.Dropout: "dropout", nn.Identity: "other"}
    kind = next((k for cls, k in simple.items() if isinstance(leaf, cls)), "other")
    if kind == "activation":
        return kind, {}, {"activation": _activation_name(leaf)}
    return kind, state if kind == "other" else {}, _epsilons(leaf) if kind == "other" else {}


def _activation_name(leaf) -> str:
    """The activation's name as the diagnoses compare it: GELU's tanh approximation (nn.GELU(approximate="tanh"))
    is "gelu_tanh", the exact erf form "gelu"."""
    name = type(leaf).__name__.lower()
    return "gelu_tanh" if name == "gelu" and getattr(leaf, "approximate", "none") == "tanh" else name


def _epsilons(leaf) -> dict:
    """A module's epsilon settings by their own names (GroupNorm's and RMSNorm's eps, a library's
    variance_epsilon): the diagnoses compare them with the port's wherever it holds them."""
    return {key: value for key, value in vars(leaf).items() if isinstance(value, float)
            and (key.lower() in ("eps", "epsilon") or key.lower().endswith(("_eps", "_epsilon")))}


def _recurrent(state: dict, leaf) -> dict:
    """A GRU's or LSTM's weights per layer and direction, as PyTorch holds them; an LSTM's two biases summed."""
    params = {}
    for key, value in state.items():
        params[key] = value
    if type(leaf).__name__ == "LSTM":
        for key in [k for k in state if k.startswith("bias_ih")]:
            params[key.replace("bias_ih", "bias")] = state[key] + state[key.replace("bias_ih", "bias_hh")]
    return params


def _user_modules(module):
    """The named modules as the user's model names them: rosetta's calling wrapper (frameworks.torch_outputs:
    inputs by keyword, a mapping's tensors out) adds no name of its own."""
    from rosetta.frameworks.torch_outputs import TensorInterface

    inner = module.module if isinstance(module, TensorInterface) else module
    return inner.named_modules()

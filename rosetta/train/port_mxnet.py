"""The Gluon side of a port's training check (rosetta.verify.port_training): a factory file `gluon_setup.py:fn`
returning (block, trainer, loss) as its author wrote them (a gluon Block with initialised parameters, a
gluon.Trainer over them, a gluon loss), built and trained step by step in the MXNet worker on given batches; the
loss of every step and every parameter (BatchNorm running statistics included) after it come back, by structural
name ("0.weight", "1.gamma", "1.running_mean": Gluon's Dense weight is (out, in) and its Conv kernel OIHW, PyTorch's
forms), with the setup read from the objects in the Keras side's terms (rosetta.train.port_keras) so that one
registry of training diagnoses reads both.

The loop is Gluon's idiom: `with autograd.record(): L = loss(block(x), y)`, `L.backward()`,
`trainer.step(batch_size)`; the step's loss is L's mean. A loss that returns per-sample values (every gluon.loss
does) then trains on the batch mean; one that returns a scalar (a mean already) is divided by the batch size a
second time in trainer.step: the classic Gluon bug, recorded as setup["loss"]["reduced"] for its diagnosis.

Read from MXNet 1.9.1's optimizer source (mxnet/optimizer/optimizer.py): SGD is
state = momentum x state + lr x (g + wd x w), w -= state (PyTorch's SGD with momentum for a constant rate, wd
coupled); NAG is its Nesterov form; Adam is m, v on g + wd x w (coupled, as PyTorch's Adam weight_decay), with
lr x sqrt(1 - b2^t) / (1 - b1^t) and epsilon added to sqrt(v) before the bias correction; MXNet 1.9.1 has no
AdamW. What is changed before training, and said in the result's "assumed" lines:
- Adam runs as the trainers' `torch_epsilon_adam` (rosetta.train.mxnet: lr, betas, epsilon, wd, clip_gradient
  kept) with epsilon placed after the bias correction, as PyTorch places it (a convention of the frameworks,
  modelled as port_keras does for Keras).
- Dropout is turned off where both sides drop the same rates (random masks cannot match).
- Labels are one-hot where the loss takes dense labels (SoftmaxCrossEntropyLoss(sparse_label=False)).
"""

from __future__ import annotations

import importlib.util
import sys

import numpy as np

from rosetta.errors import BadInput, RosettaError, one_line


def _factory(text: str):
    """The function of `path/file.py:fn` (the caller checked trust_code before sending it here)."""
    path, _, function = text.rpartition(":")
    name = f"rosetta_gluon_setup_{abs(hash(path))}"
    try:
        spec = importlib.util.spec_from_file_location(name, path)
        module = importlib.util.module_from_spec(spec)
        sys.modules[name] = module
        spec.loader.exec_module(module)
    except Exception as error:  # noqa: BLE001: the user's file, said in one line
        raise RosettaError(f"importing {path} failed: {one_line(error)}") from None
    factory = getattr(module, function, None)
    if not callable(factory):
        raise BadInput(f"{text}: {path} has no function {function!r}")
    return factory


def _built_setup(text: str, gluon) -> tuple:
    built = _factory(text)()
    if not (isinstance(built, tuple) and len(built) == 3 and isinstance(built[0], gluon.Block)
            and isinstance(built[1], gluon.Trainer) and callable(built[2])):
        shown = f"a tuple of {', '.join(type(v).__name__ for v in built)}" if isinstance(built, tuple) \
            else type(built).__name__
        raise BadInput(f"{text} returned {shown}; train_steps= needs (gluon.Block, gluon.Trainer, loss), the "
                       "trainer built on the block's parameters")
    return built


def export_setup_job(argument: dict) -> dict:
    """Job (the MXNet worker): the block of the Gluon setup argument["setup"] exported for the pair's inference rows
    (HybridBlock.export into argument["folder"], after one hybridized run on argument["feeds"]): {"path" of its
    model-symbol.json, "names": the symbol's input names}."""
    import json
    from pathlib import Path

    from rosetta.frameworks.mxnet import import_mxnet

    mx = import_mxnet()
    from mxnet import gluon

    block = _built_setup(argument["setup"], gluon)[0]
    if not isinstance(block, gluon.HybridBlock):
        raise BadInput(f"{argument['setup']}: the block is a gluon.Block, not a HybridBlock; its inference is "
                       "compared through HybridBlock.export")
    folder = Path(argument["folder"])
    block.hybridize()
    block(*[mx.nd.array(array) for array in argument["feeds"]])
    block.export(str(folder / "model"), 0)
    path = folder / "model-symbol.json"
    parameters = {name.split(":", 1)[-1] for name in mx.nd.load(str(folder / "model-0000.params"))}
    graph = json.loads(path.read_text())
    names = [graph["nodes"][i]["name"] for i in graph["arg_nodes"] if graph["nodes"][i]["name"] not in parameters]
    return {"path": str(path), "names": names}


def optimizer_setup(optimizer) -> dict:
    """The trainer's optimiser in the Keras side's terms (class, learning_rate, momentum, nesterov, beta_1, ...)."""
    name = type(optimizer).__name__
    setup = {"class": "SGD" if name in ("SGD", "NAG") else name, "mxnet_class": name,
             "learning_rate": float(optimizer.learning_rate), "weight_decay": float(optimizer.wd or 0.0),
             "weight_decay_coupled": True, "clip_gradient": optimizer.clip_gradient,
             "schedule": type(optimizer.lr_scheduler).__name__ if optimizer.lr_scheduler is not None else None}
    if setup["class"] == "SGD":
        setup.update(momentum=float(getattr(optimizer, "momentum", 0.0) or 0.0), nesterov=name == "NAG")
    if name == "Adam":
        setup.update(beta_1=float(optimizer.beta1), beta_2=float(optimizer.beta2), epsilon=float(optimizer.epsilon))
    return setup


def _walk(block, prefix=""):
    yield prefix, block
    for name, child in block._children.items():
        yield from _walk(child, f"{prefix}.{name}" if prefix else name)


def train_port_job(argument: dict) -> dict:
    """Job (rosetta.execution, the MXNet worker): the Gluon setup the factory argument["setup"] returns trained on
    argument["batches"] ([feeds in PyTorch's order and layout, labels] per step); see the module docstring. Trained
    twice, as built (float32) and cast to float64 (a second build): "float64" holds the second run's losses and
    weights, the Gluon side's own rounding (its float32 kernels round differently from PyTorch's), which the caller
    adds to the noise floor."""
    result = _trained(argument, "float32")
    wide = _trained(argument, "float64")
    result["float64"] = {"losses": wide["losses"], "weights": wide["weights"]}
    return result


def _trained(argument: dict, precision: str) -> dict:
    from rosetta.frameworks.mxnet import import_mxnet
    from rosetta.train.mxnet import torch_epsilon_adam

    mx = import_mxnet()
    from mxnet import autograd, gluon

    block, trainer, loss = _built_setup(argument["setup"], gluon)
    named = block._collect_params_with_prefix()
    if not named:
        raise BadInput(f"{argument['setup']}: the block has no parameters")
    params = list(named.values())
    assumed = []
    owners = {}
    layers = list(_walk(block))
    for prefix, layer in layers:
        for name in layer._reg_params:
            owners[f"{prefix}.{name}" if prefix else name] = type(layer).__name__
    batchnorms = [(n, layer) for n, layer in layers if isinstance(layer, gluon.nn.BatchNorm)]
    dropouts = [(n, layer) for n, layer in layers if isinstance(layer, gluon.nn.Dropout)]
    optimizer = trainer._optimizer
    setup = {"framework": "Gluon", "optimizer": optimizer_setup(optimizer),
             # from_logits in Keras' sense (the loss takes logits): gluon's SoftmaxCrossEntropyLoss(from_logits=False)
             # applies log-softmax itself, so it takes logits; from_logits=True takes log-probabilities
             "loss": {"class": type(loss).__name__, "reduction": "sum_over_batch_size",
                      "from_logits": None if not hasattr(loss, "_from_logits") else not loss._from_logits,
                      "sparse_label": getattr(loss, "_sparse_label", None)},
             "batchnorm": [{"name": n, "momentum": float(layer._kwargs.get("momentum", 0.9)),
                            "epsilon": float(layer._kwargs.get("eps", 1e-5)),
                            "trainable": layer.gamma.grad_req != "null" or layer.beta.grad_req != "null",
                            "training": False if layer._kwargs.get("use_global_stats") else None}
                           for n, layer in batchnorms],
             "dropout": [{"name": n, "rate": float(layer._rate)} for n, layer in dropouts],
             "output_activation": "linear"}
    rates = sorted(np.float32(layer._rate) for _, layer in dropouts if layer._rate)
    dropout_off = rates == sorted(np.float32(r) for r in argument.get("torch_dropout_rates", []) if r)
    if dropout_off and rates:
        for _, layer in dropouts:
            layer._rate = 0.0
        assumed.append(f"Dropout off on both sides (the same rates, {', '.join(f'{r:g}' for r in rates)}: random "
                       "masks cannot match)")
    if type(optimizer).__name__ == "Adam":
        modelled = torch_epsilon_adam(mx)(learning_rate=optimizer.learning_rate, beta1=optimizer.beta1,
                                 beta2=optimizer.beta2, epsilon=optimizer.epsilon, wd=optimizer.wd,
                                 clip_gradient=optimizer.clip_gradient, lr_scheduler=optimizer.lr_scheduler)
        trainer = gluon.Trainer(trainer._params, modelled, kvstore=None)
        assumed.append("Gluon Adam's epsilon placed after the bias correction, as PyTorch places it (a convention "
                       "of the frameworks, modelled)")
    dense = getattr(loss, "_sparse_label", True) is False
    dtype = np.float64 if precision == "float64" else np.float32
    if precision == "float64":
        block.cast("float64")  # before the first step: the optimiser's states are made then, in the weights' dtype
    initial = [p.data().asnumpy().copy() for p in params]
    losses, weights, reduced = [], [], None
    for feeds, labels in argument["batches"]:
        arrays = [mx.nd.array(np.asarray(a), dtype=dtype if np.asarray(a).dtype.kind == "f"
                              else np.asarray(a).dtype) for a in feeds]
        labels = np.asarray(labels)
        batch = int(labels.shape[0])
        with autograd.record():
            output = block(*arrays)
            if isinstance(output, (tuple, list)):
                output = output[0]
            if dense and labels.dtype.kind in "iu":
                target = mx.nd.array(np.eye(int(output.shape[-1]), dtype=dtype)[labels])
            else:
                target = mx.nd.array(labels, dtype=dtype if labels.dtype.kind == "f" else labels.dtype)
            value = loss(output, target)
        value.backward()
        trainer.step(batch)
        reduced = value.size == 1 and batch > 1
        losses.append(float(value.mean().asscalar()))
        weights.append([p.data().asnumpy().astype(np.float64) for p in params])
    setup["loss"]["reduced"] = bool(reduced)
    assumed.append("the Gluon loop: loss(block(x), y).backward(), trainer.step(batch_size)")
    if dense:
        assumed.append("labels one-hot for the Gluon loss's sparse_label=False (class indices on the PyTorch side)")
    return {"setup": setup, "assumed": assumed, "dropout_off": bool(dropout_off and rates),
            "names": list(named), "trainable": [p.grad_req != "null" for p in params],
            "classes": [owners.get(name, "") for name in named], "initial": initial,
            "losses": np.asarray(losses, dtype=np.float64), "weights": weights,
            "version": f"MXNet {mx.__version__} (Gluon)", "framework": "Gluon"}

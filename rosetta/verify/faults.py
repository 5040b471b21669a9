"""Deliberately wrong artifacts, registered like models and targets, so that every check rosetta makes is shown
to say FAIL when it should. Tests iterate over this registry; scripts/calibrate_tolerance.py measures how far
each fault sits above the tolerance. A fault builds an artifact folder for its (model, target) that a correct
conversion would have produced, but with one specific mistake in it."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Callable

from rosetta.convert.store import ArtifactStore
from rosetta.convert.targets import Target, list_targets
from rosetta.frameworks.onnx_graph import edit_initializers
from rosetta.models import get_model
from rosetta.registry import Registry
from rosetta.models.variants import (build_cnn_nhwc_flatten, flip_conv_kernels, perturb_parameter, swap_gru_gates,
                                     transpose_gru_recurrent_kernels)

PERTURBED_TENSOR = "layer3.2.conv2.weight"
PERTURBATION = 1e-4


@dataclass(frozen=True)
class Fault:
    name: str
    model: str
    description: str
    # (store, seed, target, export options) -> artifact folder for that target
    build: Callable[[ArtifactStore, int, Target, dict], Path]
    targets: tuple = ()  # target names it applies to, in each of its routes; empty: every target of the route
    routes: tuple = ("onnx",)  # "onnx", "mmdnn": a wrong model goes through each route's real converters
    node: str = ""  # the ONNX node where it was seeded (in the reference's export, or in the wrong model's)
    in_export: bool = True  # made by exporting a wrong model (False: a correct artifact edited afterwards)

    def export(self, store: ArtifactStore, seed: int, target: Target, options: dict) -> Path:
        """The graph the fault's artifact for `target` was made from: its ONNX export (ONNX route) or MMdnn IR
        (MMdnn route); for an edited artifact, the reference's own."""
        from dataclasses import replace

        chain = target.chain[:2]  # the source, then the route's graph (ONNX, MMdnn's IR)
        if not self.in_export:
            return store.get(get_model(self.model), seed, chain, target.export_options(options))
        return self.build(store, seed, replace(target, chain=chain), options)

    def applies_to(self, route: str = "onnx") -> list[str]:
        if route not in self.routes:
            return []
        return [t for t in self.targets if t in list_targets(route)] if self.targets else list_targets(route)


FAULTS: Registry[Fault] = Registry("fault", key=lambda fault: fault.name)
register_fault = FAULTS.register


def list_faults() -> list[Fault]:
    return list(FAULTS)


def get_fault(name: str) -> Fault:
    return FAULTS.get(name)


def fault_cases(route: str = "onnx") -> list[tuple[Fault, str]]:
    """Every (fault, target) pair to test: each target gets at least one wrong model through its converter."""
    return [(fault, target) for fault in FAULTS for target in fault.applies_to(route)]


def _variant(model: str, name: str, make: Callable):
    """A fault that is a wrong variant of a reference model, carried through the target's own converters."""
    def build(store: ArtifactStore, seed: int, target: Target, options: dict) -> Path:
        spec = get_model(model)
        return store.get(spec, seed, target.chain, target.export_options(options), module=make(seed), tag=name)
    return build


def _dropout_active(store: ArtifactStore, seed: int, target: Target, options: dict) -> Path:
    return store.get(get_model("cnn"), seed, target.chain, {**target.export_options(options), "training": "train"})


register_fault(Fault("cnn-dropout-active", "cnn",
                     "exported as a training-mode graph: Dropout stays active at inference", _dropout_active,
                     targets=("onnxruntime",), node="/drop1/Dropout"))
register_fault(Fault("resnet50-weight-perturbed", "resnet50",
                     f"one weight tensor ({PERTURBED_TENSOR}) perturbed by {PERTURBATION:g} relative",
                     _variant("resnet50", "weight-perturbed", lambda seed: perturb_parameter(
                         get_model("resnet50").build(seed), PERTURBED_TENSOR, PERTURBATION, seed)),
                     targets=("onnxruntime", "torch"), routes=("onnx", "mmdnn"), node="/layer3/layer3.2/conv2/Conv"))
register_fault(Fault("cnn-kernels-flipped", "cnn",
                     "conv2's kernels flipped in both spatial axes (convolution vs cross-correlation mix-up)",
                     _variant("cnn", "kernels-flipped", lambda seed: flip_conv_kernels(get_model("cnn").build(seed),
                                                                                      "conv2")),
                     routes=("onnx", "mmdnn"), node="/conv2/Conv"))
register_fault(Fault("cnn-nhwc-flatten", "cnn", "flattened in NHWC order before the first dense layer",
                     _variant("cnn", "nhwc-flatten", build_cnn_nhwc_flatten), node="/Transpose"))
register_fault(Fault("gru-gates-swapped", "gru", "GRU reset and update gates swapped (gate order mix-up)",
                     _variant("gru", "gates-swapped", lambda seed: swap_gru_gates(get_model("gru").build(seed))),
                     node="/gru/GRU"))
register_fault(Fault("gru-recurrent-transposed", "gru", "GRU recurrent kernels transposed (in/out layout mix-up)",
                     _variant("gru", "recurrent-transposed",
                              lambda seed: transpose_gru_recurrent_kernels(get_model("gru").build(seed))),
                     node="/gru/GRU"))


# ---- corruptions of a converted artifact itself: a converter that got one detail wrong ---------------------
def _corrupted(model: str, tag: str, edit: Callable[[Path], None]):
    """A fault that converts the model correctly, then edits the converted artifact as a buggy converter would."""
    def build(store: ArtifactStore, seed: int, target: Target, options: dict) -> Path:
        good = store.get(get_model(model), seed, target.chain, target.export_options(options))
        return store.derived(good, tag, edit)
    return build


def _swap_first_two_blocks(array, axis: int):
    import numpy as np

    blocks = np.split(np.asarray(array), 3, axis=axis)
    return np.concatenate([blocks[1], blocks[0], blocks[2]], axis=axis)


def _keras_gru_gates_swapped(artifact: Path) -> None:
    from rosetta.frameworks.keras import edit_keras_weights

    # Keras GRU kernels are (in, 3H) with gates z, r, h along the last axis
    edit_keras_weights(artifact, lambda name, array: _swap_first_two_blocks(array, -1)
                       if "/gru/cell/vars/" in name else None)


def _keras_flatten_order_dropped(artifact: Path) -> None:
    """The Dense after the channels-last flatten keeps ONNX's (c, h, w) row order instead of Keras' (h, w, c)."""
    import numpy as np

    from rosetta.frameworks.keras import edit_keras_weights

    order = np.arange(100 * 8 * 8).reshape(100, 8, 8).transpose(1, 2, 0).ravel()  # Keras row j = ONNX row order[j]
    edit_keras_weights(artifact, lambda name, array: array[np.argsort(order)] if array.shape == (6400, 512) else None)


def _torch_gru_gates_swapped(artifact: Path) -> None:
    from rosetta.frameworks.torch_edits import edit_state_dict_arrays

    def swap(name, array):  # torch.nn.GRU gates r, z, n along the first axis
        if any(key in name for key in ("weight_ih", "weight_hh", "bias_ih", "bias_hh")):
            return _swap_first_two_blocks(array, 0)
        return None
    edit_state_dict_arrays(artifact, swap)


def _kernels_flipped_in_artifact(artifact: Path) -> None:
    """Every convolution kernel in a converted artifact's own files flipped in its two spatial axes (a converter
    that writes cross-correlation kernels for a convolution): a Keras file (kernels H, W, in, out), an ONNX
    file (the Conv weights, out, in, H, W) or MMdnn's PyTorch weights (.npz, out, in, H, W). What needs its
    framework to be rewritten (MXNet params, a SavedModel's variables) gets wrong models only."""
    import numpy as np

    from rosetta.frameworks.keras import edit_keras_weights
    from rosetta.frameworks.torch import KIT_WEIGHTS

    if artifact.suffix == ".keras":
        edit_keras_weights(artifact, lambda name, array: array[::-1, ::-1] if array.ndim == 4 else None)
    elif artifact.suffix == ".onnx":
        import onnx

        model = onnx.load(str(artifact))
        kernels = {node.input[1] for node in model.graph.node if node.op_type == "Conv"}
        edit_initializers(model, kernels, lambda name, array: array[:, :, ::-1, ::-1])
        onnx.save(model, str(artifact))
    elif (artifact / KIT_WEIGHTS).is_file():
        with np.load(artifact / KIT_WEIGHTS) as weights:
            arrays = {name: weights[name][:, :, ::-1, ::-1] if weights[name].ndim == 4 else weights[name]
                      for name in weights.files}
        np.savez(artifact / KIT_WEIGHTS, **arrays)
    else:
        raise ValueError(f"no kernel editor for the artifact {artifact.name!r}")


register_fault(Fault("keras-gru-gates-swapped", "gru", "Keras GRU kernels with the z and r gate blocks swapped",
                     _corrupted("gru", "keras-gates-swapped", _keras_gru_gates_swapped), targets=("keras",),
                     node="/gru/GRU", in_export=False))
register_fault(Fault("keras-flatten-order-dropped", "cnn",
                     "Keras Dense after a channels-last flatten with the ONNX (c, h, w) row order",
                     _corrupted("cnn", "keras-flatten-order-dropped", _keras_flatten_order_dropped), targets=("keras",),
                     routes=("onnx", "mmdnn"), node="/fc1/Gemm", in_export=False))
register_fault(Fault("torch-gru-gates-swapped", "gru", "onnx2torch GRU with the r and z gate blocks swapped",
                     _corrupted("gru", "torch-gates-swapped", _torch_gru_gates_swapped), targets=("torch",),
                     node="/gru/GRU", in_export=False))
register_fault(Fault("artifact-kernels-flipped", "cnn",
                     "every convolution kernel flipped in the converted artifact's own weights (an emitter that "
                     "writes cross-correlation kernels)",
                     _corrupted("cnn", "artifact-kernels-flipped", _kernels_flipped_in_artifact),
                     targets=("onnxruntime", "keras", "torch"), routes=("mmdnn",), node="/conv1/Conv", in_export=False))


# ---- converters that write one node wrong: for `--locate`, which must name that node ------------------------
@dataclass(frozen=True)
class ConverterFault:
    """A buggy converter: the target's own chain, after an edit of the ONNX graph it is given that a converter
    with one wrong mapping would make. Applied to every model the chain converts (whole graphs, prefixes, single
    nodes), it is wrong wherever that mapping is used, as a real converter bug is."""

    name: str
    model: str
    description: str
    edit: Callable  # (onnx.ModelProto) -> None, in place
    node: str  # where `rosetta verify --locate` must say the target first diverges
    origin: str  # "introduced" (the node alone is wrong) or "inherited" (wrong only joined with the one before)


CONVERTER_FAULTS: Registry[ConverterFault] = Registry("converter fault", key=lambda fault: fault.name)


def _weight_misread(node_name: str):
    """The first output channel of node `node_name`'s weight (its second input: a Conv's) read 1e-2 off; the
    weight, not the bias, because an export that keeps BatchNorm (training preserve) has Convs without one."""
    def misread(name, values):
        values = values.copy()
        values[0] += 1e-2
        return values

    def edit(model) -> None:
        node = next((node for node in model.graph.node if node.name == node_name), None)
        if node is not None:
            edit_initializers(model, {node.input[1]}, misread)
    return edit


def _gru_gates_swapped(model) -> None:
    """ONNX GRU's z and r gate blocks swapped in W, R and B (ONNX order z, r, h)."""
    import numpy as np

    def swap(name, values):
        blocks = np.split(values, 6 if name == gru.input[3] else 3, axis=1)
        order = [1, 0, 2, 4, 3, 5] if len(blocks) == 6 else [1, 0, 2]
        return np.concatenate([blocks[i] for i in order], axis=1)

    gru = next((node for node in model.graph.node if node.op_type == "GRU"), None)
    if gru is not None:
        edit_initializers(model, set(gru.input[1:4]), swap)


def _relu_after_pool_dropped(model) -> None:
    """A 'MaxPool + Relu' fusion that forgets the Relu: wrong only where a Relu follows a MaxPool."""
    from onnx import helper

    pooled = {out for node in model.graph.node if node.op_type == "MaxPool" for out in node.output}
    for node in model.graph.node:
        if node.op_type == "Relu" and node.input[0] in pooled:
            node.CopyFrom(helper.make_node("Identity", list(node.input), list(node.output), name=node.name))


for _fault in (
    ConverterFault("cnn-conv3-weight-misread", "cnn", "conv3's first output channel of weights read 1e-2 off",
                   _weight_misread("/conv3/Conv"), "/conv3/Conv", "introduced"),
    ConverterFault("cnn-relu-after-pool-dropped", "cnn", "a MaxPool + Relu fusion that drops the Relu",
                   _relu_after_pool_dropped, "/Relu_1", "inherited"),
    ConverterFault("gru-gates-misordered", "gru", "ONNX GRU gates z and r taken in the wrong order",
                   _gru_gates_swapped, "/gru/GRU", "introduced"),
    ConverterFault("resnet50-layer3-weight-misread", "resnet50",
                   "layer3.2.conv2's first output channel of weights read 1e-2 off (a node deep in the graph)",
                   _weight_misread("/layer3/layer3.2/conv2/Conv"), "/layer3/layer3.2/conv2/Conv", "introduced"),
):
    CONVERTER_FAULTS.register(_fault)


def faulty_chain(target: Target, edit: Callable | None = None) -> Callable[[Path, Path], Path]:
    """convert(ONNX folder, destination) -> artifact: the target's chain from ONNX (convert.store.from_onnx),
    after `edit` of the graph (None: the correct converter)."""
    from rosetta.convert.store import from_onnx

    correct = from_onnx(target)

    def convert(folder: Path, destination: Path) -> Path:
        if edit is not None:
            import onnx

            model = onnx.load(str(Path(folder) / "model.onnx"))
            edit(model)
            onnx.save(model, str(Path(folder) / "model.onnx"))
        return correct(folder, destination)
    return convert

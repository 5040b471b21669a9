"""Where a port written by hand stops being the same function: layer-level locate between two independently
written models (`rosetta verify REF PORT --locate`), in any two of PyTorch, Keras, MXNet and ONNX.

Each model's layers are read as it runs (frameworks.layers: PyTorch leaf modules by forward hooks, Keras layers
by walking its functional graph, MXNet nodes by the symbol's internals, ONNX nodes by ONNX Runtime), the
reference's in float32 and float64, so each of its layers has its own noise floor, as a model's outputs do.
Layers are paired in execution order (an alignment, as of two sequences) by their output's shape, equal up to
the layout permutation of the port (NCHW <-> NHWC), helped by agreeing values, equal names and kinds; a
`--layer-map` file gives the pairing instead. The report names:
- the first pair whose output crosses the tolerance;
- whether that layer introduced the error or inherited it: the port's layer run alone on the reference layer's
  own input (where its framework can run a layer alone);
- the porting bug, where a diagnosis recognises it (verify.diagnoses), from the two layers' parameters and
  configuration in their canonical form."""

from __future__ import annotations

import json
import math
from dataclasses import dataclass, field
from pathlib import Path
from typing import Callable

import numpy as np

from rosetta.errors import BadInput, RosettaError, Unsupported, one_line
from rosetta.frameworks.layers import Layer
from rosetta.verify.locate import INHERITED, INTRODUCED, LocateReport, NodeRow, fill_row
from rosetta.verify.tolerance import TolerancePolicy

BAND = 0.3  # a pair's positions in their sequences (as fractions) are at most this far apart


@dataclass
class Side:
    """One model's layers (in float32, and float64 for the reference) and how to run one of its layers alone."""

    label: str
    layers: list[Layer]
    layers64: list[Layer] | None = None
    run_alone: Callable[[Layer, list[np.ndarray]], np.ndarray] | None = None
    notes: list[str] = field(default_factory=list)  # one line each: a layer read without its settings, ...


def to_layout(value: np.ndarray, from_last: bool, to_last: bool) -> np.ndarray:
    """A 3-D to 5-D tensor moved between channels-first and channels-last (the batch stays first)."""
    value = np.asarray(value)
    if from_last == to_last or not 3 <= value.ndim <= 5:
        return value
    if to_last:
        return np.transpose(value, (0, *range(2, value.ndim), 1))
    return np.transpose(value, (0, value.ndim - 1, *range(1, value.ndim - 1)))


def _feature_map(layers: list[Layer], before: int):
    """(channels-last?, shape) of the last 3-D to 5-D output before layer `before`, or None."""
    for layer in reversed(layers[:before]):
        if 3 <= np.ndim(layer.output) <= 5:
            return layer.channels_last, np.shape(layer.output)
    return None


def last_step(reference: np.ndarray, value: np.ndarray, kind: str) -> tuple[np.ndarray, np.ndarray]:
    """A recurrent layer's output that one side gives for every step (N, T, H) and the other for the last only
    (N, H) (PyTorch's GRU and a Keras GRU without return_sequences): both at the last step."""
    if kind in ("gru", "lstm") and np.ndim(reference) == 3 and np.ndim(value) == 2:
        return np.asarray(reference)[:, -1], value
    if kind in ("gru", "lstm") and np.ndim(reference) == 2 and np.ndim(value) == 3:
        return reference, np.asarray(value)[:, -1]
    return reference, value


def mapped_output(reference: list[Layer], i: int, port: list[Layer], j: int) -> np.ndarray:
    """The port layer j's output in the reference layer i's layout: feature maps moved between channels-first
    and -last, and a flattened feature map (a 2-D output right after feature maps laid out otherwise) put in the
    reference's flatten order, so that a correct port agrees at its Flatten and a Dense that kept the wrong row
    order is the one that differs."""
    ref, other = reference[i], port[j]
    value = np.asarray(other.output)
    if value.ndim != 2 or np.ndim(ref.output) != 2:
        return to_layout(value, other.channels_last, ref.channels_last)
    mine, theirs = _feature_map(port, j), _feature_map(reference, i)
    if mine is None or theirs is None or mine[0] == theirs[0] or int(np.prod(mine[1][1:])) != value.shape[1]:
        return value
    return to_layout(value.reshape(value.shape[0], *mine[1][1:]), mine[0], theirs[0]).reshape(value.shape[0], -1)


def _as_port_input(value: np.ndarray, reference: list[Layer], i: int, port: list[Layer], j: int) -> np.ndarray:
    """A reference layer's input in the port's layout (the inverse of mapped_output)."""
    if value.ndim != 2:
        return to_layout(value, reference[i].channels_last, port[j].channels_last)
    mine, theirs = _feature_map(port, j), _feature_map(reference, i)
    if mine is None or theirs is None or mine[0] == theirs[0] or int(np.prod(theirs[1][1:])) != value.shape[1]:
        return value
    return to_layout(value.reshape(value.shape[0], *theirs[1][1:]), theirs[0], mine[0]).reshape(value.shape[0], -1)


def read_layer_map(path: Path | None) -> dict[str, str]:
    """A --layer-map file: {reference layer: port layer}, as JSON or one `REF = PORT` per line (# comments)."""
    if path is None:
        return {}
    try:
        text = Path(path).read_text()
    except OSError as error:
        raise BadInput(f"--layer-map {path}: {error.strerror or error}") from None
    try:
        found = json.loads(text)
        if isinstance(found, dict):
            return {str(k): str(v) for k, v in found.items()}
    except ValueError:
        pass
    pairs = {}
    for number, line in enumerate(text.splitlines(), 1):
        line = line.split("#", 1)[0].strip()
        if not line:
            continue
        reference, equals, port = (part.strip() for part in line.partition("="))
        if not equals or not reference or not port:
            raise BadInput(f"--layer-map {path}:{number}: expected REFERENCE_LAYER = PORT_LAYER, got {line!r}")
        pairs[reference] = port
    return pairs


def pair_layers(reference: Side, port: Side, policy: TolerancePolicy, layer_map: dict[str, str]) -> list[tuple]:
    """(reference index, port index) of each paired layer, in order: the layer map's, or an alignment."""
    if layer_map:
        ports = {layer.name: j for j, layer in enumerate(port.layers)}
        pairs = []
        for i, layer in enumerate(reference.layers):
            if layer.name in layer_map:
                if layer_map[layer.name] not in ports:
                    raise BadInput(f"--layer-map: {port.label} has no layer {layer_map[layer.name]!r}")
                pairs.append((i, ports[layer_map[layer.name]]))
        unknown = sorted(set(layer_map) - {layer.name for layer in reference.layers})
        if unknown:
            raise BadInput(f"--layer-map: the reference has no layer {unknown[0]!r}")
        return pairs
    n, m = len(reference.layers), len(port.layers)
    score = np.zeros((n, m))
    for i, ref in enumerate(reference.layers):
        for j, other in enumerate(port.layers):
            if abs((i + 0.5) / n - (j + 0.5) / m) > BAND:
                continue
            mapped = mapped_output(reference.layers, i, port.layers, j)
            if np.shape(last_step(ref.output, mapped, ref.kind)[0]) != np.shape(last_step(ref.output, mapped,
                                                                                       ref.kind)[1]):
                continue
            agrees = _compare(ref, reference.layers64[i] if reference.layers64 else None, mapped, policy).passed
            score[i, j] = 1 + 2 * agrees + (ref.name == other.name) + (ref.kind == other.kind != "other")
    best = np.zeros((n + 1, m + 1))
    for i in range(n):
        for j in range(m):
            best[i + 1, j + 1] = max(best[i, j + 1], best[i + 1, j], best[i, j] + score[i, j] if score[i, j] else 0)
    pairs, i, j = [], n, m
    while i and j:
        if score[i - 1, j - 1] and best[i, j] == best[i - 1, j - 1] + score[i - 1, j - 1]:
            pairs.append((i - 1, j - 1))
            i, j = i - 1, j - 1
        elif best[i, j] == best[i - 1, j]:
            i -= 1
        else:
            j -= 1
    return pairs[::-1]


def _compare(ref: Layer, ref64: Layer | None, value: np.ndarray, policy: TolerancePolicy):
    from rosetta.verify.compare import compare_output

    reference32, value = last_step(ref.output, value, ref.kind)
    reference64, _ = last_step(ref64.output, value, ref.kind) if ref64 is not None else \
        (reference32.astype(np.float64), value)
    if reference32.dtype.kind != "f":
        reference32, reference64 = reference32.astype(np.float32), reference64.astype(np.float64)
    return compare_output(ref.name, np.asarray(value, dtype=np.float64) if np.asarray(value).dtype.kind in "fiu"
                          else value, reference32, reference64, policy)


def locate_port(reference: Side, port: Side, policy: TolerancePolicy, target: str,
                layer_map: dict[str, str] | None = None) -> LocateReport:
    """The first paired layer whose port output fails `policy` against the reference's, whether it introduced
    the error, and the porting bug where a diagnosis names it; with both sides' notes."""
    report = _locate_port(reference, port, policy, target, layer_map)
    report.notes = [f"{side.label}: {note}" for side in (reference, port) for note in side.notes]
    return report


def _locate_port(reference: Side, port: Side, policy: TolerancePolicy, target: str,
                 layer_map: dict[str, str] | None) -> LocateReport:
    from rosetta.verify.diagnoses import diagnose

    if reference.layers64 is None:  # float32 values only: the float32-only rule, per layer
        from rosetta.verify.tolerance import FLOAT32_ONLY_MULTIPLE

        policy = TolerancePolicy(FLOAT32_ONLY_MULTIPLE, float64_reference=False)
    pairs = pair_layers(reference, port, policy, layer_map or {})
    mechanism = (f"{len(pairs)} of {len(reference.layers)} reference layers paired with {port.label}'s "
                 f"{len(port.layers)} " + ("by --layer-map" if layer_map else "in execution order (shape up to the "
                                           "port's layout, agreeing values, names, kinds)"))
    if not pairs:
        return LocateReport(target, "not located", reason=f"no layer of {port.label} pairs with one of the "
                            "reference's (shapes differ even up to layout); give the pairing with --layer-map",
                            graph="layers", mechanism=mechanism)
    rows = []
    for i, j in pairs:
        ref, other = reference.layers[i], port.layers[j]
        row = NodeRow(i, ref.name, ref.op, other.name, other.name)
        fill_row(row, _compare(ref, reference.layers64[i] if reference.layers64 else None,
                               mapped_output(reference.layers, i, port.layers, j), policy))
        rows.append(row)
    first = next((row for row in rows if row.passed is False), None)
    if first is None:
        return LocateReport(target, "not reproduced", rows=rows, graph="layers", mechanism=mechanism,
                            reason="every paired layer agrees within the tolerance: the difference is in what no "
                                   "layer of the reference outputs (a function between layers)")
    i, j = pairs[rows.index(first)]
    report = LocateReport(target, "located", first, rows=rows, graph="layers", mechanism=mechanism)
    ref, other = reference.layers[i], port.layers[j]
    report.alone, report.origin, report.reason = _alone(reference, port, i, j, policy, first)
    # the port's layer of the reference layer's kind, where the pair's output comes from a layer after it (MXNet's
    # fused RNN in time-major layout, then a SwapAxis): the one whose parameters tell the porting bug
    before = max((b for a, b in pairs if b < j), default=-1)
    same_kind = [k for k in range(before + 1, j + 1) if port.layers[k].kind == ref.kind]
    if other.kind != ref.kind and same_kind:
        j, other = same_kind[-1], port.layers[same_kind[-1]]
    context = {"reference": reference.layers, "port": port.layers, "pairs": pairs, "at": (i, j)}
    report.diagnosis = diagnose(ref, other, context) or ("no known porting bug recognised: compare its parameters "
                                                         "and configuration (figures above)")
    return report


def _alone(reference: Side, port: Side, i: int, j: int, policy: TolerancePolicy, first: NodeRow):
    """(row, origin, reason): the port's layer j run on the reference layer i's own inputs."""
    ref, other = reference.layers[i], port.layers[j]
    source = (reference.layers64 or reference.layers)[i]
    if port.run_alone is None or not source.inputs:
        return None, "", f"{port.label}'s layers cannot be run one at a time here"
    inputs = [_as_port_input(np.asarray(value), reference.layers, i, port.layers, j) for value in source.inputs]
    inputs = [value.astype(np.asarray(mine).dtype) if np.asarray(mine).dtype != value.dtype else value
              for value, mine in zip(inputs, other.inputs or inputs)]
    try:
        value = port.run_alone(other, inputs)
    except (RosettaError, Unsupported) as error:
        return None, "", f"its layer could not run alone ({one_line(error)})"
    except Exception as error:  # noqa: BLE001 - a layer that needs what a call alone does not give it
        return None, "", f"its layer could not run alone ({one_line(error)})"
    alone = NodeRow(first.index, first.node, first.op, first.tensor, first.source_layer)
    fill_row(alone, _compare(ref, reference.layers64[i] if reference.layers64 else None,
                             to_layout(value, other.channels_last, ref.channels_last), policy))
    if alone.passed is None:
        return alone, "", alone.reason
    return alone, INTRODUCED if alone.passed is False else INHERITED, ""


def ratio_text(value: float) -> str:
    return f"{value:.3g}x" if math.isfinite(value) else str(value)


def side_of(label: str, folder: Path | None, module, feeds: dict, inputs: list[str], float64: bool,
            trust_code: bool = False) -> Side:
    """One model's Side: a PyTorch module (`module`, run here), or the artifact in `folder` read by its
    framework where it runs (Keras and MXNet in their workers, ONNX by ONNX Runtime). `inputs`: the model's
    input names in order; `float64`: also its layers in float64 (the reference's)."""
    from rosetta.execution import run_job

    arrays = [feeds[name] for name in inputs]
    if module is not None:
        from rosetta.frameworks.torch_layers import run_leaf, trace_module

        return Side(label, trace_module(module, arrays), trace_module(module, arrays, "float64") if float64 else None,
                    lambda layer, values: run_leaf(module, layer.name, values))
    from rosetta.frameworks import isolation, runner_for_format
    from rosetta.manifest import Manifest

    fmt = Manifest.read(Path(folder)).format
    framework = runner_for_format(fmt)
    if framework == "onnxruntime":
        from rosetta.frameworks.onnx_layers import trace_model

        path = Manifest.read(Path(folder)).artifact_path(Path(folder))
        return Side(label, trace_model(path, feeds), trace_model(path, feeds, "float64") if float64 else None)
    jobs = {"keras": ("rosetta.frameworks.keras_layers:trace_job", "rosetta.frameworks.keras_layers:run_layer_job",
                      "layer"),
            "mxnet": ("rosetta.frameworks.mxnet_layers:trace_job", "rosetta.frameworks.mxnet_layers:run_node_job",
                      "node")}
    if framework not in jobs:
        raise Unsupported(f"--locate reads the layers of PyTorch, Keras, MXNet and ONNX models; a {fmt} artifact "
                          "keeps none it can read one by one")
    trace, alone, key = jobs[framework]

    notes: list[str] = []

    def layers(precision: str) -> list[Layer]:
        found = run_job(trace, {"folder": str(folder), "feeds": feeds, "precision": precision,
                                "trust_code": trust_code}, isolation(framework), f"{framework} layers")
        if not found["layers"]:
            raise Unsupported(found.get("reason", f"{label} gives no layers"))
        notes.extend(note for note in found.get("notes", []) if note not in notes)
        return [Layer.from_json(layer) for layer in found["layers"]]

    def run_alone(layer: Layer, values: list) -> np.ndarray:
        return run_job(alone, {"folder": str(folder), key: layer.name, "inputs": values, "precision": "float32",
                               "trust_code": trust_code}, isolation(framework), f"{framework} layer alone")["output"]

    return Side(label, layers("float32"), layers("float64") if float64 else None, run_alone, notes)

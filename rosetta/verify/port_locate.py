"""Where a port written by hand stops being the same function (`rosetta verify REF PORT --locate`), in any two of
PyTorch, Keras, MXNet and ONNX, when the two models' layers do not line up one to one.

Each model is read as it runs at the finest grain it offers (frameworks.layers: every PyTorch module by forward
hooks, leaves and the blocks holding them; Keras layers by walking the functional graph, a fused activation split
out and a layer made of sublayers opened into them; MXNet nodes; ONNX nodes), the reference's in float32 and
float64, so each of its tensors has its own noise floor, as a model's outputs do. The tensors are matched by
value up to layout (verify.dataflow): between two matched tensors lies a *segment pair*, one reference module or
many against one port layer or many (a conv with its padding split off, BatchNorm folded into a conv, an
activation fused, a transformer block written as one layer). The report names:
- the first segment pair whose inputs agree and whose output does not, and how its end was confirmed;
- whether the port's segment introduced the error: run alone on the reference's tensors at its start;
- the porting bug, where a diagnosis recognises it (verify.diagnoses), from both segments' parameters and
  configuration in their canonical form; none where the segment's end could not be confirmed.
A `--layer-map` file pairs layers, blocks or sublayers by name instead."""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from pathlib import Path
from typing import Callable

import numpy as np

from rosetta.errors import BadInput, RosettaError, Unsupported, one_line
from rosetta.frameworks.layers import Layer
from rosetta.verify.dataflow import Flow, as_port
from rosetta.verify.locate import INHERITED, INTRODUCED, LocateReport, NodeRow, fill_row
from rosetta.verify.tolerance import TolerancePolicy


@dataclass
class Side:
    """One model's layers (in float32, and float64 for the reference) and how to run one of its layers alone."""

    label: str
    layers: list[Layer]
    layers64: list[Layer] | None = None
    fed: list[np.ndarray] = field(default_factory=list)  # the model's inputs as it was given them
    run_alone: Callable[[Layer, list[np.ndarray]], np.ndarray] | None = None
    notes: list[str] = field(default_factory=list)  # one line each: a layer read without its settings, ...


def read_layer_map(path: Path | None) -> dict[str, str]:
    """A --layer-map file: {reference layer: port layer}, as JSON or one `REF = PORT` per line (# comments)."""
    if path is None:
        return {}
    try:
        text = Path(path).read_text()
    except OSError as error:
        raise BadInput(f"layer_map={path}: {error.strerror or error}") from None
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
            raise BadInput(f"layer_map={path}:{number}: expected REFERENCE_LAYER = PORT_LAYER, got {line!r}")
        pairs[reference] = port
    return pairs


def _policy_for(reference: Side, policy: TolerancePolicy) -> TolerancePolicy:
    if reference.layers64 is None:  # float32 values only: the float32-only rule, per tensor
        from rosetta.verify.tolerance import FLOAT32_ONLY_MULTIPLE

        return TolerancePolicy(FLOAT32_ONLY_MULTIPLE, float64_reference=False)
    return policy


def locate_port(reference: Side, port: Side, policy: TolerancePolicy, target: str,
                layer_map: dict[str, str] | None = None) -> LocateReport:
    """Where the port first stops computing the reference's function: the first segment pair (see the module
    docstring) whose inputs agree and whose output does not, whether it introduced the error, and the porting bug
    where a diagnosis names it; with both sides' notes."""
    from rosetta.verify.dataflow import Matcher

    policy = _policy_for(reference, policy)
    flows = Flow(reference.layers, reference.fed, reference.layers64), Flow(port.layers, port.fed)
    matcher = Matcher(*flows, policy)
    report = (_by_layer_map(reference, port, matcher, target, layer_map) if layer_map else
              Alignment(reference, port, matcher, target).locate())
    report.notes = [f"{side.label}: {note}" for side in (reference, port) for note in side.notes]
    return report


def _row(matcher, r: int, p: int, value: np.ndarray | None = None) -> NodeRow:
    """The row of reference point r against port point p (or a value computed for it)."""
    reference, port = matcher.reference, matcher.port
    ref_layer = reference.layers[reference.points[r].producers[-1]] if reference.points[r].producers else None
    name = port.name(p)
    row = NodeRow(r, ref_layer.name if ref_layer else reference.name(r), ref_layer.op if ref_layer else "", name,
                  name)
    compared = matcher.compared(r, p, value)
    if compared is None:
        row.reason = f"{name}'s output has no layout that maps it onto the reference's"
    else:
        fill_row(row, compared)
    return row


def _by_layer_map(reference: Side, port: Side, matcher, target: str, layer_map: dict[str, str]) -> LocateReport:
    """The pairing a --layer-map file gives (any module or block of the reference, any layer or sublayer path of
    the port): the first pair whose outputs differ."""
    ref_names = {layer.name: k for k, layer in enumerate(reference.layers)}
    port_names = {layer.name: k for k, layer in enumerate(port.layers)}
    unknown = sorted(set(layer_map) - set(ref_names))
    if unknown:
        raise BadInput(f"layer_map=: the reference has no layer {unknown[0]!r} (its layers: "
                       f"{', '.join(list(ref_names)[:8])}, ...)")
    missing = sorted(set(layer_map.values()) - set(port_names))
    if missing:
        raise BadInput(f"layer_map=: {port.label} has no layer {missing[0]!r} (its layers: "
                       f"{', '.join(list(port_names)[:8])}, ...)")
    pairs = sorted(((ref_names[a], port_names[b]) for a, b in layer_map.items()))
    rows = [_row(matcher, matcher.reference.output_of[i], matcher.port.output_of[j]) for i, j in pairs]
    mechanism = f"{len(pairs)} layer pairs given by layer_map="
    first = next((row for row in rows if row.passed is False), None)
    if first is None:
        unmeasured = [row for row in rows if row.passed is None]
        if unmeasured:
            return LocateReport(target, "not located", rows=rows, graph="layers", mechanism=mechanism,
                                reason=f"no paired layer differs, and {unmeasured[0].node} could not be compared "
                                       f"({unmeasured[0].reason})")
        return LocateReport(target, "not reproduced", rows=rows, graph="layers", mechanism=mechanism,
                            reason="every paired layer agrees within the tolerance")
    i, j = pairs[rows.index(first)]
    report = LocateReport(target, "located", first, rows=rows, graph="layers", mechanism=mechanism,
                          segment={"reference": [reference.layers[i].name], "port": [port.layers[j].name],
                                   "confirmed": True})
    context = {"reference": reference.layers, "port": port.layers, "pairs": pairs, "at": (i, j),
               "segment": ([reference.layers[i]], [port.layers[j]])}
    report.diagnosis = _diagnosis(reference.layers[i], port.layers[j], context)
    return report


def _diagnosis(reference: Layer, port: Layer, context: dict) -> str:
    from rosetta.verify.diagnoses import diagnose

    return diagnose(reference, port, context) or ("no known porting bug recognised: compare its parameters and "
                                                  "configuration (figures above)")


WEIGHTED = ("conv", "dense", "batchnorm", "layernorm", "gru", "lstm", "embedding")  # layers that hold weights


def _once(names: list[str]) -> list[str]:
    """A module called more than once (torchvision's one ReLU per block) named once, where it was last called."""
    return list(reversed(dict.fromkeys(reversed(names))))


def _with_sublayers(layers: list[Layer], segment: list[Layer]) -> list[Layer]:
    """The segment's layers with every layer a block of it holds, in execution order, each once."""
    held = [layer for layer in layers if any(Flow.contains(block.name, layer.name) for block in segment)]
    seen = {id(layer) for layer in segment}
    return segment + [layer for layer in held if id(layer) not in seen and not seen.add(id(layer))]


def _holds_weights(layer: Layer) -> bool:
    return layer.kind in WEIGHTED or (layer.kind in ("other", "block") and bool(layer.params))


class Alignment:
    """The first segment pair where the port diverges, found from the anchors (verify.dataflow.Matcher):
    1. on the reference, the first layer whose inputs agree with tensors of the port and whose output agrees
       with none, nor does anything computed from it: the segment starts at its inputs. A layer whose output
       has no twin in the port but whose results do (a conv whose BatchNorm the port folded in) is inside a
       segment, not a divergence: a disagreement followed by agreement is a misalignment, never blamed;
    2. on the port, the first layer of the same kind of place: its inputs agree, its output and everything
       after it does not;
    3. the segment's end: a tensor of each side after the start, of shapes that map; confirmed where the port's
       next layers, run alone from the reference's tensor up to the first that holds weights, give a tensor the
       reference computes later (or both ends are the models' outputs). Where no end is confirmed, only the
       segment's first layer on each side is named, with a cause only from their own weights and settings;
    4. introduced or inherited: the port's segment run alone on the reference's tensors at its start."""

    CANDIDATES = 4  # the ends tried per port tensor, best agreement first
    RUNS = 24  # the ends tried by running the port's layers alone, at most
    CHAIN = 4  # the port's layers run one after another to confirm an end, at most
    REACH = 40  # tensors after the start looked at, per side

    def __init__(self, reference: Side, port: Side, matcher, target: str):
        self.reference, self.port, self.matcher, self.target = reference, port, matcher, target
        self.ref, self.other = matcher.reference, matcher.port

    def _ok(self, flow, anchored: dict, point: int) -> bool:
        found = flow.points[point]
        return point in anchored or found.is_input or not found.floating

    def _table(self, value: np.ndarray) -> bool:
        """A tensor the same for every sample: one row (broadcast over a batch of several) or equal rows."""
        batch = max((np.shape(a)[0] for a in self.reference.fed if np.ndim(a)), default=1)
        return value.ndim > 0 and batch > 1 and (value.shape[0] == 1 or bool(np.all(value == value[:1])))

    def _diverges(self, flow, anchored: dict, k: int) -> bool:
        out = flow.output_of[k]
        point = flow.points[out]
        if not point.floating or out in anchored or flow.layers[k].kind == "block" and point.producers[0] != k:
            return False
        if not all(self._ok(flow, anchored, i) for i in flow.inputs_of[k]):
            return False
        return not any(d in anchored and flow.points[d].varies for d in flow.descendants(out))

    def _code_divergence(self, flow, anchored: dict) -> int | None:
        """The first tensor computed by code between layers (no layer outputs it) from tensors that agree, which
        agrees with nothing, nor does anything computed from it."""
        for point in flow.points:
            if point.producers or point.is_input or not point.floating or point.index in anchored or \
                    not point.parents or not point.varies:
                continue
            if all(self._ok(flow, anchored, parent) for parent in point.parents) and \
                    not any(d in anchored and flow.points[d].varies for d in flow.descendants(point.index)):
                return point.index
        return None

    @staticmethod
    def _from(flow, point: int) -> str:
        return ", ".join(flow.layers[flow.points[p].producers[-1]].name if flow.points[p].producers else "the inputs"
                         for p in flow.points[point].parents)

    def locate(self) -> LocateReport:
        ref, other, matcher = self.ref, self.other, self.matcher
        rows = [_row(matcher, ref.output_of[k], matcher.anchors[ref.output_of[k]][0])
                for k in range(len(ref.layers)) if ref.output_of[k] in matcher.anchors
                and ref.points[ref.output_of[k]].producers[0] == k]
        mechanism = (f"{len(matcher.anchors)} of {len(ref.points)} tensors of the reference agree with one of "
                     f"{self.port.label}'s {len(other.points)} (value up to layout), read as dataflow")
        diverging = [k for k in range(len(ref.layers)) if self._diverges(ref, matcher.anchors, k)]
        # a table of positions (Llama's rotary cos/sin, computed once by the model) has no twin where the port
        # computes it inside each block: its output is the same for every sample, so a difference that depends
        # on the data starts at a layer after it, where there is one
        k = next((k for k in diverging if not self._table(ref.points[ref.output_of[k]].value)),
                 diverging[0] if diverging else None)
        if k is None:
            code = self._code_divergence(ref, matcher.anchors)
            if code is not None:
                # the first tensor that agrees with nothing is computed by the reference's own code between layers
                # (torch.cat, F.pad, a mean in forward): the port does that work inside some layer of its own,
                # which cannot be named without guessing
                return LocateReport(self.target, "not located", rows=rows, graph="layers", mechanism=mechanism,
                                    reason=f"the reference's tensors stop agreeing with the port's at one its "
                                           f"own code computes between layers: the {ref.name(code)} (computed by "
                                           f"its forward from {self._from(ref, code)}) agrees with nothing in the "
                                           "port, nor does anything after it; the port does that work inside a "
                                           "layer of its own, which is not named without a twin to confirm it "
                                           "(give layer_map= to pair blocks)")
            return LocateReport(self.target, "not reproduced", rows=rows, graph="layers", mechanism=mechanism,
                                reason="every tensor of the reference that the port can be compared on agrees, or "
                                       "what is computed from it does: the difference is in a tensor no layer of "
                                       "the reference outputs (give layer_map= to pair blocks)")
        starts = [i for i in ref.inputs_of[k] if ref.points[i].floating or ref.points[i].is_input]
        port_starts = {p for i in starts for p in matcher.anchors.get(i, [])}
        frontier = [j for j in range(len(other.layers)) if self._diverges(other, matcher.anchored_port, j)]
        consuming = [j for j in frontier if port_starts & set(other.inputs_of[j])]
        if not frontier:
            return self._unaligned(rows, mechanism, k, "no layer of the port has inputs that agree with the "
                                   "reference's and an output that does not")
        j = (consuming or frontier)[0]
        end = self._end(k, j)
        if end is None:
            return self._unaligned(rows, mechanism, k, f"no tensor of {self.port.label} after "
                                   f"{other.layers[j].name} maps onto one of the reference's after "
                                   f"{ref.layers[k].name} (shapes differ even up to layout)")
        r_end, p_end, confirmed = end
        port_in = [p for p in other.inputs_of[j]]
        if not confirmed:  # only where it starts is known: its first layer on each side
            r_end, p_end = ref.output_of[k], other.output_of[j]
        segment_ref = ref.layers_between(starts, r_end) if confirmed else [k]
        segment_port = other.layers_between(port_in, p_end) if confirmed else [j]
        row = _row(matcher, r_end, p_end)
        if not ref.points[r_end].producers and segment_ref:  # a tensor of code after its last layer
            row.node, row.op = ref.layers[segment_ref[-1]].name, ref.layers[segment_ref[-1]].op
        if not other.points[p_end].producers and segment_port:
            row.tensor = row.source_layer = other.layers[segment_port[-1]].name
        report = LocateReport(self.target, "located", row, rows=rows + [row], graph="layers", mechanism=mechanism,
                              segment={"reference": _once([ref.layers[i].name for i in segment_ref]),
                                       "port": _once([other.layers[i].name for i in segment_port]),
                                       "confirmed": confirmed})
        layers_ref = [ref.layers[i] for i in segment_ref]
        layers_port = [other.layers[i] for i in segment_port]
        if not confirmed:
            # the segment starts at these two layers (their inputs agree, nothing after them does); where it ends
            # is not known, so only a cause read from the two layers' own weights and settings is named
            report.reason = ("it starts here, but where it ends could not be confirmed (the port's layers after it, "
                             "run on the reference's tensors, give none of the reference's)")
            if _holds_weights(layers_ref[0]) and _holds_weights(layers_port[0]):
                report.diagnosis = _diagnosis(layers_ref[0], layers_port[0], {
                    "reference": ref.layers, "port": other.layers, "at": (k, j), "pairs": [],
                    "segment": (layers_ref, layers_port)})
            return report
        report.alone, report.origin, report.reason = self._alone(starts, port_in, segment_port, r_end, p_end, row)
        # a block named alone (a transformer layer whose inner tensors agree crosswise: query and key swapped)
        # holds its weights in its modules: the diagnoses read them too
        layers_ref, layers_port = _with_sublayers(ref.layers, layers_ref), _with_sublayers(other.layers, layers_port)
        first_ref, first_port = self._pair_for_diagnosis(layers_ref, layers_port)
        at = (next(i for i, layer in enumerate(ref.layers) if layer is first_ref),  # by identity: Layers hold arrays
              next(j for j, layer in enumerate(other.layers) if layer is first_port))
        context = {"reference": ref.layers, "port": other.layers, "at": at,
                   "pairs": [], "segment": (layers_ref, layers_port)}
        report.diagnosis = _diagnosis(first_ref, first_port, context)
        return report

    def _unaligned(self, rows, mechanism, k, why: str) -> LocateReport:
        return LocateReport(self.target, "not located", rows=rows, graph="layers", mechanism=mechanism,
                            reason=f"the reference first differs after the inputs of {self.ref.layers[k].name}, but "
                                   f"{why}; give the pairing with layer_map=")

    def _end(self, k: int, j: int) -> tuple[int, int, bool] | None:
        """(reference point, port point, confirmed) where the segment from layers k and j ends: of the confirmed
        ends, the one whose two sides hold as many layers with weights (a v1 port's conv1 is not the v1.5
        reference's conv2, though a ReLU after either gives the same tensor), the nearer on a tie."""
        ref, other, matcher = self.ref, self.other, self.matcher
        ref_ends = [ref.output_of[k], *ref.descendants(ref.output_of[k])][: self.REACH]
        port_ends = [other.output_of[j], *other.descendants(other.output_of[j])][: self.REACH // 3]
        fallback, confirmed, runs = None, [], 0
        for p in port_ends:
            mapped = [(matcher.compared(r, p), r) for r in ref_ends]
            mapped = sorted(((c.error_ratio if np.isfinite(c.error_ratio) else np.inf, r) for c, r in mapped
                             if c is not None), key=lambda pair: pair[0])
            if not mapped:
                continue
            fallback = fallback or (mapped[0][1], p, False)
            for _, r in mapped[: self.CANDIDATES]:
                if runs >= self.RUNS:
                    break
                runs += bool(self._next_layer(p))
                if self._confirmed(r, p):
                    confirmed.append((self._imbalance(k, j, r, p), len(confirmed), r, p))
                    break
            if confirmed and min(confirmed)[0] == 0 or runs >= self.RUNS:
                break
        if confirmed:
            _, _, r, p = min(confirmed)
            return r, p, True
        return fallback

    def _imbalance(self, k: int, j: int, r: int, p: int) -> int:
        """How many more layers with weights one side of the segment ending at (r, p) holds than the other."""
        def weighted(flow, starts, end):
            layers = [flow.layers[i] for i in flow.layers_between(starts, end)]
            return sum(layer.kind in WEIGHTED and not any(Flow.contains(layer.name, o.name) for o in layers)
                       for layer in layers)
        return abs(weighted(self.ref, self.ref.inputs_of[k], r) - weighted(self.other, self.other.inputs_of[j], p))

    def _confirmed(self, r: int, p: int) -> bool:
        """The port's layers after point p, run alone from the reference's tensor r up to and including the first
        that holds weights, give a tensor the reference computes after r; or p and r are the two models' last
        tensors. A ReLU or a pool alone confirms nothing: applied to any tensor before the reference's own ReLU it
        gives that ReLU's output, so a v1 port's conv1 would be 'confirmed' against the v1.5 reference's conv2."""
        ref, other = self.ref, self.other
        j = self._next_layer(p)
        if j is None:
            return p == len(other.points) - 1 and r == len(ref.points) - 1
        if self.port.run_alone is None:
            return False
        value = as_port(ref.values64.get(r, ref.points[r].value), ref.points[r], other.points[p],
                        self.matcher.layout(r, p))
        point = p
        for _ in range(self.CHAIN):
            inputs = [value if i == point else other.points[i].value for i in other.inputs_of[j]]
            try:
                value = np.asarray(self.port.run_alone(other.layers[j], inputs))
            except Exception:  # noqa: BLE001 - a layer that cannot run alone confirms nothing
                return False
            point = other.output_of[j]
            following = self._next_layer(point)
            if _holds_weights(other.layers[j]) or following is None:
                break
            j = following
        later = [q for q in range(r + 1, len(ref.points)) if ref.points[q].floating and ref.points[q].varies]
        return any(self.matcher.agrees(q, point, value) for q in later)

    def _next_layer(self, p: int) -> int | None:
        """The first port layer that receives point p as it is (not one that gives it back unchanged)."""
        other = self.other
        return next((j for j in other.points[p].consumers if other.output_of[j] != p), None)

    def _alone(self, starts: list[int], port_in: list[int], segment: list[int], r_end: int, p_end: int,
               row: NodeRow):
        """(row, origin, reason): the port's segment run alone, layer by layer, on the reference's tensors at
        its start."""
        ref, other, matcher = self.ref, self.other, self.matcher
        if self.port.run_alone is None:
            return None, "", f"{self.port.label}'s layers cannot be run one at a time here"
        values = {}
        for p in port_in:
            twins = [r for r in starts if p in matcher.anchors.get(r, [])]
            if twins:
                r = twins[0]
                values[p] = as_port(ref.values64.get(r, ref.points[r].value), ref.points[r], other.points[p],
                                    matcher.layout(r, p))
        # a layer inside another of the segment runs as part of it
        runnable = [j for j in segment if not any(Flow.contains(other.layers[c].name, other.layers[j].name)
                                                   for c in segment if c != j)]
        for j in runnable:
            inputs = []
            for i in other.inputs_of[j]:
                if i in values:
                    inputs.append(values[i])
                elif i in matcher.anchored_port or other.points[i].is_input or not other.points[i].floating:
                    inputs.append(other.points[i].value)
                else:
                    return None, "", (f"{other.layers[j].name} reads a tensor from outside the segment that does "
                                      "not agree with the reference's")
            try:
                values[other.output_of[j]] = np.asarray(self.port.run_alone(other.layers[j], inputs))
            except (RosettaError, Unsupported) as error:
                return None, "", f"its layer could not run alone ({one_line(error)})"
            except Exception as error:  # noqa: BLE001 - a layer that needs what a call alone does not give it
                return None, "", f"its layer could not run alone ({one_line(error)})"
        if p_end not in values:
            return None, "", "the segment's end is not computed by its layers alone"
        alone = _row(matcher, r_end, p_end, values[p_end])
        alone.index, alone.node, alone.op = row.index, row.node, row.op
        if alone.passed is None:
            return alone, "", alone.reason
        return alone, INTRODUCED if alone.passed is False else INHERITED, ""

    @staticmethod
    def _pair_for_diagnosis(reference: list[Layer], port: list[Layer]) -> tuple[Layer, Layer]:
        """The segment's two layers a diagnosis reads first: its last of the same kind on both sides (the one that
        holds parameters), else its two ends."""
        for ref in reversed(reference):
            for other in reversed(port):
                if ref.kind == other.kind and ref.kind not in ("other", "block") and (ref.params or ref.config):
                    return ref, other
        return reference[-1], port[-1]


def side_of(label: str, folder: Path | None, module, feeds: dict, inputs: list[str], float64: bool,
            trust_code: bool = False) -> Side:
    """One model's Side: a PyTorch module (`module`, run here), or the artifact in `folder` read by its
    framework where it runs (Keras and MXNet in their workers, ONNX by ONNX Runtime). `inputs`: the model's
    input names in order; `float64`: also its layers in float64 (the reference's)."""
    from rosetta.execution import run_job
    from rosetta.frameworks import FRAMEWORKS, isolation, layer_jobs, runner_for_format
    from rosetta.registry import load_entry

    arrays = [feeds[name] for name in inputs]
    if module is not None:  # a PyTorch module runs here: its framework row names the functions that trace it
        row = FRAMEWORKS.get("torch-code")
        trace_module, run_leaf = load_entry(row.layer_trace), load_entry(row.layer_alone)
        return Side(label, trace_module(module, arrays), trace_module(module, arrays, "float64") if float64 else None,
                    arrays, lambda layer, values: run_leaf(module, layer.name, values))
    from rosetta.manifest import Manifest

    fmt = Manifest.read(Path(folder)).format
    framework = runner_for_format(fmt)
    if not isolation(framework) and FRAMEWORKS.get(framework).layer_trace:  # runs here (ONNX Runtime)
        trace_model = load_entry(FRAMEWORKS.get(framework).layer_trace)
        path = Manifest.read(Path(folder)).artifact_path(Path(folder))
        return Side(label, trace_model(path, feeds), trace_model(path, feeds, "float64") if float64 else None, arrays)
    jobs = layer_jobs(framework)  # in the framework's worker: FRAMEWORKS' row says which jobs
    if jobs is None:
        raise Unsupported(f"locate=True reads the layers of PyTorch, Keras, MXNet and ONNX models; a {fmt} artifact "
                          "keeps none it can read one by one")
    trace, alone, key = jobs

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

    return Side(label, layers("float32"), layers("float64") if float64 else None, arrays, run_alone, notes)

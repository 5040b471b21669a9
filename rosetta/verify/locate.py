"""Where a converted model stops being the same function: the first ONNX node whose error crosses the tolerance.

The source ONNX graph (the export every ONNX-route target starts from) is the common language. Every tensor
of it gets reference values twice, in float32 (ONNX Runtime, every node output made a graph output) and in
float64 (ONNX's reference evaluator on the graph cast to float64), so every tensor has its own noise floor,
as the model's outputs do (rosetta.verify.tolerance). The target's value of a tensor is read by converting a
model whose graph outputs are that tensor along the target's own chain (ONNX -> X), running it with the
target's runner (which returns it in ONNX's layout, as the converter recorded it), and comparing:

- *intermediates*: one model with every float tensor as a graph output, converted once: a row per node
  (Polygraphy's `mark all`). It can change what a converter does (an extra output stops a fusion), so its
  first failing row is only a candidate, confirmed by the next mechanism;
- *bisection*: the prefix graph that ends at node k (onnx.utils.Extractor), converted with the same chain:
  nothing in the graph changes but where it ends. O(log N) conversions find the first failing prefix;
- *introduced or inherited*: the first failing node alone, fed the reference's own values of its inputs
  (Polygraphy's `debug reduce` advice): if it still fails, its conversion introduced the error; if not, the
  error came in from before it, or from how the converter joined it with its neighbours.

Before the conversion is suspected, `locate` looks where else the error can be: in the export the artifact
was made from, when a wrong model was exported (its tensors in ONNX Runtime, matched by name), and in an
artifact whose tensors can be read as it runs (onnx2torch's graph with its weights; a Keras model of
rosetta's mapper, whose manifest maps each ONNX tensor to a layer output and its axis order). Each conversion is one
`convert(onnx folder, destination)` call (rosetta.convert.store.from_onnx, or a registered buggy converter).
"""

from __future__ import annotations

import math
import re
import shutil
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Callable

import numpy as np

from rosetta.errors import one_line
from rosetta.frameworks.onnx_graph import float_tensors, with_outputs
from rosetta.verify.tolerance import TolerancePolicy

INTRODUCED, INHERITED = "introduced", "inherited"


@dataclass
class NodeRow:
    """One node output of the source graph: its error in the target as a multiple of its own noise floor."""

    index: int  # the node's position in the graph's topological order
    node: str
    op: str
    tensor: str
    source_layer: str  # the PyTorch module the exporter's scope names (or "")
    passed: bool | None = None  # None: not measured (its model did not convert or run: `reason`)
    error_ratio: float = math.nan
    max_abs_error: float = math.nan
    noise_floor: float = math.nan
    origin: str = ""  # INTRODUCED (its inputs pass) or INHERITED (an input fails), for a failing row
    reason: str = ""
    varies: bool | None = None  # its reference value differs across the batch: a match there could have failed


@dataclass
class LocateReport:
    target: str
    verdict: str  # "located", "not reproduced" (every measured tensor passes), "not located" (reason)
    first: NodeRow | None = None
    origin: str = ""  # INTRODUCED / INHERITED, from the node run alone on the reference's inputs
    alone: NodeRow | None = None  # that run
    unread: list[str] = field(default_factory=list)  # nodes just before `first` whose value the target cannot give
    unread_reason: str = ""
    rows: list[NodeRow] = field(default_factory=list)  # every node, from the intermediates model
    stage: str = ""  # where the error was found: "export", "artifact" or "conversion" (see `locate`)
    graph: str = "onnx"  # the graph whose nodes are named: "onnx" (ONNX route), "mmdnn" (MMdnn's IR)
    mechanism: str = ""  # which mechanisms gave the figures
    conversions: int = 0
    reason: str = ""
    diagnosis: str = ""  # the porting bug named at `first` (verify.diagnoses), where one is recognised
    notes: list[str] = field(default_factory=list)  # one line each: what was read otherwise (a layer's settings)
    # two models' layers aligned at matched tensors (verify.port_locate): the layers of each side between them,
    # {"reference": [names], "port": [names], "confirmed": whether its end was confirmed}
    segment: dict = field(default_factory=dict)

    def summary(self) -> str:
        """One line: where the target diverges, or why that is not known."""
        notes = "".join(f"; note: {note}" for note in self.notes)
        if self.verdict != "located" or self.first is None:
            return f"{self.target}: {self.verdict}" + (f": {self.reason}" if self.reason else "") + notes
        first = self.first
        # an MMdnn IR node's source layer is a torch module, a Keras layer or an MXNet node; two models' layers
        # paired: the reference's layer and the port's
        named = {"mmdnn": "source layer", "layers": "the port's"}.get(self.graph, "torch module")
        layer = f" ({named} {first.source_layer})" if first.source_layer else ""
        if self.segment:
            layer = f" (the port's {_names(self.segment['port'])})"
        where = {"export": " of the ONNX model it was made from",
                 "artifact": " of the artifact itself"}.get(self.stage, "")
        kind = {"mmdnn": "MMdnn IR node", "layers": "layer"}.get(self.graph, "node")
        at = f"{kind} {first.node} ({first.op})" if not self.segment or self.segment["reference"] == [first.node] \
            else f"the segment {_names(self.segment['reference'])}"
        text = f"{self.target}: first diverges at {at}{layer}{where}: {_ratio(first.error_ratio)} its noise floor"
        if self.unread:
            text += (f", or at {', '.join(self.unread)} just before it, whose value cannot be read in the target "
                     f"({self.unread_reason})")
        if self.origin == INTRODUCED and self.alone is None:
            text += "; introduced there (its inputs pass)"
        elif self.origin == INTRODUCED:
            text += f"; introduced there (alone, on the reference's inputs: {_ratio(self.alone.error_ratio)})"
        elif self.origin == INHERITED:
            text += "; not introduced there (alone, on the reference's inputs, it passes): inherited, or how the " \
                    "converter joined it with the nodes before it"
        elif self.reason:
            text += f"; whether it was introduced there is unknown: {self.reason}"
        if self.diagnosis:
            text += f"; {self.diagnosis}"
        return text + notes

    def to_json(self) -> dict:
        return asdict(self)


def _names(names: list[str], most: int = 4) -> str:
    """Layer names as a reader takes them in: a block's own name in place of its members', the first few."""
    outer = [name for name in names if not any(name != other and (name.startswith(other + ".") or
                                                                  name.startswith(other + "/")) for other in names)]
    return ", ".join(outer[:most]) + (f" and {len(outer) - most} more" if len(outer) > most else "")


def _ratio(value: float) -> str:
    return f"{value:.3g}x" if math.isfinite(value) else str(value)


# ---- the source graph and its reference values ---------------------------------------------------------------
def tensor_references(model, feeds: dict) -> tuple[dict, dict, dict]:
    """(float32 values of every float tensor, float64 values of every tensor, the float64 run's ReferenceCheck as
    JSON) of the graph on `feeds`: ONNX Runtime (optimiser off, as rosetta verifies) on the float32 graph with
    every float tensor as an output; ONNX's reference evaluator on the float64 graph, checked node by node
    against it (frameworks.onnx_reference; integer tensors keep their dtype)."""
    from rosetta.frameworks.onnx_reference import checked_float64_run, float32_values

    ref32 = float32_values(model, feeds)
    names = [name for node in model.graph.node for name in node.output if name]
    values, check = checked_float64_run(model, feeds, names, values32=dict(ref32))
    return ref32, values, check.to_json()


def fill_row(row: NodeRow, compared) -> None:
    """A node's row from the comparison of its value (verify.compare.OutputComparison): a value that could not be
    compared (none, or another shape) leaves the row unmeasured (passed None) with the reason, not wrong."""
    measured = not (math.isnan(compared.error_ratio) and not compared.nan_count)
    row.passed, row.reason = (compared.passed if measured else None), compared.reason
    row.error_ratio, row.max_abs_error, row.noise_floor = compared.error_ratio, compared.max_abs_error, compared.noise_floor


def source_layer(node_name: str, modules: set[str] | None = None) -> str:
    """The PyTorch module path in the TorchScript exporter's scope name ("/layer2/layer2.2/conv1/Conv" ->
    "layer2.2.conv1"); a module called twice is scoped with a suffix ("relu_1"), dropped when `modules` (the
    model's module names) knows the name without it. "" for a node at the top level or another exporter."""
    parts = [part for part in node_name.split("/") if part][:-1]
    if not parts or "/" not in node_name:
        return ""
    path = ""
    for part in parts:
        path = part if not path or part.startswith(path + ".") else f"{path}.{part}"
    if modules is not None and path not in modules:
        bare = re.sub(r"_\d+$", "", path)
        return bare if bare in modules else ""
    return path


# ---- the models that read one tensor of the target -----------------------------------------------------------
def extracted(model, inputs: list[str], outputs: list[str]):
    """The part of the graph from `inputs` to `outputs` (onnx.utils.Extractor), as a model of its own."""
    from onnx.utils import Extractor

    return Extractor(model).extract_model(inputs, outputs)


def span_inputs(model, start: int, tensor: str) -> list[str]:
    """The inputs of the part of the graph that computes `tensor` from nodes `start` onwards: the tensors it
    reads that an earlier node or the graph's input made (not weights, nor what constants alone compute)."""
    constants = {init.name for init in model.graph.initializer}
    for other in model.graph.node:
        if other.op_type == "Constant" or (other.input and all(i in constants for i in other.input if i)):
            constants.update(other.output)
    producers = {name: index for index, node in enumerate(model.graph.node) for name in node.output}
    inputs, seen, stack = set(), set(), [tensor]
    while stack:
        name = stack.pop()
        if not name or name in seen or name in constants:
            continue
        seen.add(name)
        if producers.get(name, -1) < start:
            inputs.add(name)
        else:
            stack.extend(model.graph.node[producers[name]].input)
    return sorted(inputs, key=lambda name: producers.get(name, -1))


def write_source(model, folder: Path, like) -> Path:
    """`model` as an ONNX artifact folder a conversion chain starts from (a manifest like the source's)."""
    import onnx

    from rosetta.frameworks.onnx_graph import graph_inputs, value_info_signature
    from rosetta.manifest import Manifest, sha256_of

    folder.mkdir(parents=True, exist_ok=True)
    onnx.save(model, str(folder / "model.onnx"))
    Manifest(artifact="model.onnx", format="onnx", source=like.source, converter=like.converter,
             inputs=value_info_signature(graph_inputs(model)), outputs=value_info_signature(model.graph.output),
             sha256=sha256_of(folder / "model.onnx"), opset=like.opset, chain=like.chain).write(folder)
    return folder


@dataclass
class References:
    """The reference export's tensors on one set of feeds: float32 values, every value in float64."""

    feeds: dict
    ref32: dict
    values: dict  # float64 for float tensors, the graph's dtype for the rest
    float64_doubt: str = ""  # why the float64 values are not believed (then the float32 ones stand in for them)

    @classmethod
    def of(cls, model, feeds: dict) -> "References":
        ref32, values, check = tensor_references(model, feeds)
        if check["trusted"]:
            return cls(feeds, ref32, values)
        return cls(feeds, ref32, {**values, **ref32}, check["description"])


def inferred(folder: Path):
    """The ONNX model of an ONNX artifact folder, with every tensor's type and shape (which the Extractor needs
    of the tensors it cuts at), and its manifest."""
    import onnx

    from rosetta.manifest import Manifest

    manifest = Manifest.read(folder)
    return onnx.shape_inference.infer_shapes(onnx.load(str(manifest.artifact_path(folder)))), manifest


class Probe:
    """Reads tensors of the target: cuts a model out of `graph` (an ONNX artifact folder: the reference export,
    or the export a wrong model came from), converts it with `convert`, runs it with `load`'s runner, and
    compares each output with the reference value of the tensor of that name; counts the conversions."""

    def __init__(self, graph: Path, references: References, convert: Callable[[Path, Path], Path],
                 load: Callable[[Path], object], policy: TolerancePolicy, work: Path, modules: set[str] | None = None):
        self.model, self.manifest = inferred(graph)
        self.convert, self.load, self.policy, self.work = convert, load, policy, Path(work)
        self.feeds, self.ref32, self.values = references.feeds, references.ref32, references.values
        if references.float64_doubt and policy.calibrated:  # float32 values only: the float32-only rule
            from rosetta.verify.tolerance import FLOAT32_ONLY_MULTIPLE

            self.policy = TolerancePolicy(FLOAT32_ONLY_MULTIPLE, per_output=policy.per_output,
                                          float64_reference=False, float64_doubt=references.float64_doubt)
        self.ref64 = {name: self.values[name] for name in self.ref32 if name in self.values}
        self.nodes = [(i, node) for i, node in enumerate(self.model.graph.node)
                      if any(name in self.ref64 for name in node.output)]
        self.modules, self.conversions, self.prefixes = modules, 0, {}

    def row(self, index: int, node, tensor: str) -> NodeRow:
        return NodeRow(index, node.name or f"#{index}", node.op_type, tensor, source_layer(node.name, self.modules))

    def measure(self, model, feeds: dict, rows: list[NodeRow]) -> None:
        """Convert `model`, run it on `feeds`, and fill each row from the output named as its tensor."""
        self.conversions += 1
        folder = self.work / f"probe-{self.conversions}"
        try:
            source = write_source(model, folder / "onnx", self.manifest)
            artifact = self.convert(source, folder / "target")
            outputs = self.load(artifact).predict(feeds)
        except Exception as error:  # noqa: BLE001 - the rows say why they have no figures
            for row in rows:
                row.reason = one_line(error)
            return
        finally:
            shutil.rmtree(folder, ignore_errors=True)
        self.compare(outputs, rows)

    def compare(self, outputs: dict, rows: list[NodeRow]) -> None:
        """Fill each row from the output named as its tensor. An output the target does not give, or gives in
        another shape, leaves the row unmeasured (passed None), with the reason: it was not read, not wrong."""
        from rosetta.verify.compare import compare_output, uninformative

        for row in rows:
            fill_row(row, compare_output(row.tensor, outputs.get(row.tensor), self.ref32[row.tensor],
                                         self.ref64[row.tensor], self.policy))
            row.varies = not uninformative(self.ref64[row.tensor])

    def graph_inputs(self) -> list[str]:
        from rosetta.frameworks.onnx_graph import graph_inputs

        return [value.name for value in graph_inputs(self.model)]

    def prefix(self, position: int) -> NodeRow:
        """The row of node `position` (of self.nodes), from the prefix graph that ends there (measured once)."""
        if position not in self.prefixes:
            index, node = self.nodes[position]
            row = self.row(index, node, next(name for name in node.output if name in self.ref64))
            self.measure(extracted(self.model, self.graph_inputs(), [row.tensor]), self.feeds, [row])
            self.prefixes[position] = row
        return self.prefixes[position]

    def alone(self, row: NodeRow, start: int) -> NodeRow:
        """The row of the nodes from `start` (graph index) to `row`'s node, run alone: fed the reference's own
        values of what they read (float64 values, in the graph's dtypes). The inputs are renamed input_0, ...:
        an intermediate's name is rarely a valid input name for a framework (Keras refuses
        "/pool/MaxPool_output_0")."""
        inputs = span_inputs(self.model, start, row.tensor)
        model = extracted(self.model, inputs, [row.tensor])
        renamed = {name: f"input_{n}" for n, name in enumerate(inputs)}
        for value in model.graph.input:
            value.name = renamed.get(value.name, value.name)
        for each in model.graph.node:
            each.input[:] = [renamed.get(name, name) for name in each.input]
        feeds = {renamed[name]: self.feeds[name] if name in self.feeds else
                 np.asarray(self.values[name]).astype(self.ref32[name].dtype if name in self.ref32
                                                      else np.asarray(self.values[name]).dtype)
                 for name in inputs}
        alone = NodeRow(**{**asdict(row), "passed": None, "reason": "", "origin": ""})
        self.measure(model, feeds, [alone])
        return alone

    def artifact_intermediates(self, artifact: Path) -> list[NodeRow] | None:
        """A row per node read from the artifact itself, with no conversion (what was converted, edited or not,
        is what runs), where the artifact lets its tensors be read: an ONNX graph with its weights beside it
        (onnx2torch's model.onnx + state_dict.pt: the same graph with every tensor as an output, its own weights
        loaded), or a model of rosetta's Keras mapper (its manifest maps ONNX tensors to layer outputs). None
        for any other artifact."""
        from rosetta.manifest import Manifest

        manifest = Manifest.read(artifact)
        if manifest.converter.get("tensors"):
            return self._keras_intermediates(Path(artifact))
        path = manifest.artifact_path(artifact)
        if not (path.is_dir() and (path / "model.onnx").is_file()):
            return None
        return self._graph_intermediates(Path(artifact))

    def _keras_intermediates(self, artifact: Path) -> list[NodeRow]:
        from rosetta.execution import Job, execute

        rows = self._rows()
        argument = {"folder": str(artifact), "tensors": [row.tensor for row in rows], "feeds": self.feeds}
        try:
            answer = execute(Job("rosetta.frameworks.keras:intermediates_job", argument, "tensorflow",
                                 "keras intermediates")).result
            self.compare(answer["values"], rows)
        except Exception as error:  # noqa: BLE001 - the rows say why they have no figures
            for row in rows:
                row.reason = one_line(error)
        return self._origins(rows)

    def _graph_intermediates(self, artifact: Path) -> list[NodeRow]:
        import onnx

        from rosetta.frameworks.onnx_graph import value_info_signature
        from rosetta.manifest import Manifest

        rows = self._rows()
        folder = self.work / "artifact"
        shutil.rmtree(folder, ignore_errors=True)
        shutil.copytree(artifact, folder)
        try:
            manifest = Manifest.read(folder)
            graph = manifest.artifact_path(folder) / "model.onnx"
            marked = with_outputs(onnx.shape_inference.infer_shapes(onnx.load(str(graph))), [r.tensor for r in rows])
            onnx.save(marked, str(graph))
            manifest.outputs = value_info_signature(marked.graph.output)
            manifest.sha256 = manifest.digest(folder)
            manifest.write(folder)
            self.compare(self.load(folder).predict(self.feeds), rows)
        except Exception as error:  # noqa: BLE001 - the rows say why they have no figures
            for row in rows:
                row.reason = one_line(error)
        finally:
            shutil.rmtree(folder, ignore_errors=True)
        return self._origins(rows)

    def _rows(self) -> list[NodeRow]:
        return [self.row(index, node, name) for index, node in self.nodes for name in node.output if name in self.ref64]

    def _origins(self, rows: list[NodeRow]) -> list[NodeRow]:
        producers = {row.tensor: row for row in rows}
        for row in rows:  # a failing row whose inputs pass introduced its error (as measured here)
            if row.passed is False:
                inputs = [producers[name] for name in self.model.graph.node[row.index].input if name in producers]
                row.origin = INHERITED if any(i.passed is False for i in inputs) else INTRODUCED
        return rows

    def intermediates(self) -> list[NodeRow]:
        """A row per node from one model with every node's float output as a graph output, converted."""
        rows = self._rows()
        self.measure(with_outputs(self.model, [row.tensor for row in rows]), self.feeds, rows)
        return self._origins(rows)


@dataclass(frozen=True)
class TargetFiles:
    """What a target's artifact was made from and into, where known: `export`, the ONNX export it was made
    from; `artifact`, the artifact itself (both looked at before converting again)."""

    export: Path | None = None
    artifact: Path | None = None


def locate(reference: Path, convert: Callable[[Path, Path], Path], load: Callable[[Path], object], feeds: dict,
           policy: TolerancePolicy, work: Path, target: str = "", modules: set[str] | None = None,
           mechanisms: tuple[str, ...] = ("intermediates", "bisection"),
           files: TargetFiles = TargetFiles()) -> LocateReport:
    """The first node whose value in the target fails `policy` against the reference values on `feeds`, looked
    for where the error can be, in order:
    1. `files.export`, the ONNX export the target's artifact was made from, where it is not the `reference`
       export (a wrong model was exported: a fault, a user's other model): its tensors in ONNX Runtime, by name;
    2. `files.artifact`, where its tensors can be read (an onnx2torch graph with its weights, a Keras model of
       rosetta's mapper: Probe.artifact_intermediates), as it is, so an artifact edited after conversion is seen
       as it runs;
    3. the conversion: models cut from the reference export, made by `convert` (ONNX folder, destination ->
       artifact) and run by `load`'s runner (see the module docstring)."""
    from rosetta.manifest import Manifest

    export, artifact = files.export, files.artifact
    model, manifest = inferred(reference)
    references = References.of(model, feeds)
    work = Path(work)
    if export is not None and Manifest.read(export).sha256 != manifest.sha256:
        report = locate_in_export(reference, export, feeds, policy, work / "export", target, modules, mechanisms,
                                  references)
        if report.verdict == "located":
            return report
    if artifact is not None:
        probe = Probe(reference, references, convert, load, policy, work / "artifact", modules)
        rows = probe.artifact_intermediates(Path(artifact)) or []
        first = next((row for row in rows if row.passed is False), None)
        if first is not None:
            # nodes between the last that passes and the first that fails whose value the artifact does not give
            after = max((row.index for row in rows if row.passed and row.index < first.index), default=-1)
            unread = [row for row in rows if after < row.index < first.index and row.passed is None]
            return LocateReport(target, "located", first=first, origin=first.origin, rows=rows, stage="artifact",
                                mechanism="intermediates", unread=list(dict.fromkeys(row.node for row in unread)),
                                unread_reason=unread[0].reason if unread else "")
    report = _locate_with(Probe(reference, references, convert, load, policy, work / "conversion", modules), target,
                          mechanisms, "conversion")
    if report.verdict == "not reproduced" and artifact is not None:
        report.reason += (": converting again along the target's chain gives a model that passes, so the artifact "
                          "is not what this chain makes (edited after conversion, or made by another converter "
                          "version)")
    return report


def locate_in_export(reference: Path, candidate: Path, feeds: dict, policy: TolerancePolicy, work: Path,
                     target: str = "", modules: set[str] | None = None,
                     mechanisms: tuple[str, ...] = ("intermediates", "bisection"),
                     references: References | None = None) -> LocateReport:
    """The first node of the ONNX model in `candidate` (an ONNX artifact folder) whose tensor fails against the
    tensor of the same name in the `reference` ONNX model, both run in ONNX Runtime: a wrong model's export,
    or a user's ONNX model against another (`rosetta verify A.onnx B.onnx --locate`). Tensors are matched by
    name only, so a candidate whose tools renamed every tensor has nothing to compare, and says so."""
    from rosetta.convert.targets import load_verify_runner

    references = references or References.of(inferred(reference)[0], feeds)
    probe = Probe(candidate, references, lambda folder, _: folder,
                  lambda folder: load_verify_runner("onnxruntime", folder), policy, Path(work), modules)
    return _locate_with(probe, target, mechanisms, "export")


def _locate_with(probe: Probe, target: str, mechanisms: tuple[str, ...], stage: str) -> LocateReport:
    """The first failing node of `probe`'s graph: the intermediates model's rows, bisection of prefixes, and
    the first failing span run alone on the reference's inputs."""
    report = LocateReport(target, "not located", stage=stage)
    if not probe.nodes:
        report.reason = ("the graph computes no float32 tensor the reference has a value of (tensors are matched "
                         "by name)")
        return report
    used, candidate = [], None
    if "intermediates" in mechanisms:
        report.rows = probe.intermediates()
        used.append("intermediates")
        candidate = next((row for row in report.rows if row.passed is False), None)
    if "bisection" in mechanisms:
        found = _bisect(probe, candidate, used)
    else:
        found = (_position(probe, candidate) - 1, _position(probe, candidate)) if candidate else None
    report.mechanism, report.conversions = " + ".join(used), probe.conversions
    if isinstance(found, str):
        report.reason = found
        return report
    if found is None:
        report.verdict = "not reproduced"
        report.reason = "every tensor measured passes"
        return report
    good, bad = found
    first = probe.prefix(bad) if "bisection" in mechanisms else candidate
    report.first, report.verdict = first, "located"
    # the nodes between the last that passes and the first that fails: their values could not be read (the
    # target cannot give them, or the reference has no tensor of their name: a node the wrong model added)
    after = probe.nodes[good][0] if good >= 0 else -1
    floats = set(float_tensors(probe.model))
    between = [i for i, node in enumerate(probe.model.graph.node)
               if after < i < first.index and any(name in floats for name in node.output)]
    report.unread = [probe.model.graph.node[i].name or f"#{i}" for i in between]
    if between:
        measured = {index: position for position, (index, _) in enumerate(probe.nodes)}
        report.unread_reason = probe.prefix(measured[between[0]]).reason if between[0] in measured else \
            "the reference has no tensor of its output's name"
    report.alone = probe.alone(first, between[0] if between else first.index)
    report.conversions = probe.conversions
    if report.alone.passed is None:
        report.reason = f"the node alone did not convert or run: {report.alone.reason}"
    else:
        report.origin = INHERITED if report.alone.passed else INTRODUCED
        for row in report.rows:  # the table's guess at the first node, replaced by the measurement
            if row.tensor == first.tensor:
                row.origin = report.origin
    return report


def _position(probe: Probe, row: NodeRow) -> int:
    return next(p for p, (index, _) in enumerate(probe.nodes) if index == row.index)


def _bisect(probe: Probe, candidate: NodeRow | None, used: list) -> tuple[int, int] | str | None:
    """(last passing, first failing) positions in probe.nodes of the prefix graphs, the positions between them
    being prefixes that did not convert or run (-1: the graph's inputs); None when the whole graph passes; a
    reason when it cannot tell. A candidate from the intermediates model is tried first: if its prefix fails
    and the one before passes, no bisection is needed. Assumes, as any bisection does, that an error once in
    stays in (a later node that hides it, a Relu under a wrong negative value, can only move the answer later)."""
    used.append("bisection")

    def fails(position: int) -> bool | None:  # None: the prefix did not convert or run
        passed = probe.prefix(position).passed
        return None if passed is None else not passed

    last = len(probe.nodes) - 1
    if candidate is not None:
        position = _position(probe, candidate)
        if fails(position) and (position == 0 or fails(position - 1) is False):
            return position - 1, position
    if not fails(last):
        if fails(last) is None:
            return f"the whole graph did not convert or run: {probe.prefix(last).reason}"
        return None
    good, bad = -1, last  # invariant: prefix `bad` fails, prefix `good` passes, unknown ones lie between
    unknown: set[int] = set()
    while any(p not in unknown for p in range(good + 1, bad)):
        middle = (good + bad) // 2
        at = min((p for p in range(good + 1, bad) if p not in unknown), key=lambda p: abs(p - middle))
        outcome = fails(at)
        if outcome is None:
            unknown.add(at)
        elif outcome:
            bad = at
        else:
            good = at
    return good, bad


DECIDED_ON_INTERMEDIATES = "decided on its intermediates"


def intermediates_verdict(report: LocateReport) -> tuple[str, str]:
    """(verdict, reason) of a conversion whose outputs do not depend on the input (INCONCLUSIVE by its outputs),
    from `locate`'s report on it: FAIL where a node was located (a tensor that fails its own tolerance, confirmed
    by bisection); PASS where every tensor measured passes and some of them depend on the input (so a wrong
    conversion could have shown there); else INCONCLUSIVE, with why the intermediates could not decide."""
    from rosetta.verify.results import FAIL, INCONCLUSIVE, PASS

    if report.verdict == "located":
        return FAIL, f"{DECIDED_ON_INTERMEDIATES}: {report.summary()}"
    measured = [row for row in report.rows if row.passed is not None]
    varying = [row for row in measured if row.varies]
    if report.verdict == "not reproduced" and varying:
        deepest = max(varying, key=lambda row: row.index)
        return PASS, (f"{DECIDED_ON_INTERMEDIATES}: {len(measured)} of the {len(report.rows)} tensors of its ONNX "
                      f"export, converted with every tensor as an output, read and pass; {len(varying)} of them "
                      f"depend on the input (the deepest: {deepest.node} ({deepest.op}))")
    if report.rows and not measured:
        why = f"no tensor could be read: {report.rows[0].reason}"
    elif report.verdict == "not reproduced":
        why = "none of its tensors measured depends on the input either"
    else:
        why = report.reason or report.verdict
    return INCONCLUSIVE, f"its intermediates could not decide: {why}"


def report_from_json(data: dict) -> LocateReport:
    rows = lambda items: [NodeRow(**item) for item in items]  # noqa: E731
    return LocateReport(**{**data, "rows": rows(data.get("rows", [])),
                           "first": NodeRow(**data["first"]) if data.get("first") else None,
                           "alone": NodeRow(**data["alone"]) if data.get("alone") else None})


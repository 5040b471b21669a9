"""`--locate` for the MMdnn route: the first node of MMdnn's IR whose value in the target crosses the tolerance.

MMdnn's emitters write code whose intermediates cannot be asked for, so this is bisection only: the IR the
target was emitted from is cut after node k (convert.mmdnn.ir.cut_ir_job: the node and what it depends on),
the prefix is emitted by the target's own emitter and run by the target's runner, and its one output is
compared with the source model's value of that node, each with its own noise floor (float64 where the source
runs in float64). O(log N) emissions find the first failing prefix (verify.locate._bisect, shared with the ONNX
route); the failing node's inputs are then measured too: if they pass, the error was introduced at that node.

The source's value of an IR node, by the parser that made the IR:
- PyTorch (rosetta's subclass of MMdnn's parser): the IR records each node's position in the ONNX-level graph
  it parsed; the same graph exported to ONNX (same exporter flags) gives every node's value in float32 (ONNX
  Runtime) and float64 (ONNX's reference evaluator), and its exporter scope names the torch module;
- Keras: a layer's output (Runner.layer_values); MMdnn's Keras parser splits a layer's activation into a node
  "LAYER_activation", which gets the layer's output, and the node before it (pre-activation) none;
- MXNet: the symbol's internal output of the node (the IR records Gluon's names where rosetta renamed them).

Layouts are the ones the emitter recorded (manifest converter "layout"): a 4-D prefix output is transposed by
the runner like any output (emit.layouts); a Flatten or Reshape of a 4-D tensor is re-ordered from the
emitter's layout into the source's, so a flatten in NHWC of an NCHW model is not a false divergence.
"""

from __future__ import annotations

import shutil
from dataclasses import dataclass, field
from pathlib import Path
from typing import Callable

import numpy as np

from rosetta.errors import one_line
from rosetta.verify.locate import INHERITED, INTRODUCED, LocateReport, NodeRow, _bisect, fill_row
from rosetta.verify.tolerance import TolerancePolicy

KERAS_ACTIVATION = "_activation"  # the suffix of the node MMdnn's Keras parser splits a layer's activation into
FLATTENING = ("Flatten", "Reshape")


@dataclass
class IRReferences:
    """The source model's values of the IR's nodes on one set of feeds, by IR node name."""

    feeds: dict
    ref32: dict = field(default_factory=dict)
    ref64: dict = field(default_factory=dict)  # float64 values (the float32 ones where the source has none)
    # IR node -> (the source's tensor: an ONNX tensor of the PyTorch export, a Keras layer, an MXNet node; the
    # source layer: the torch module, the Keras layer, the MXNet node)
    names: dict = field(default_factory=dict)
    reason: str = ""  # why no node has a value


def torch_references(module, input_name: str, ir_manifest, feeds: dict) -> IRReferences:
    """The values of the IR nodes of a PyTorch source: the ONNX-level graph MMdnn's parser read (parse_torch),
    exported to ONNX with the same flags and evaluated in float32 and float64 (verify.locate.References),
    matched by position (IR manifest "source_nodes"; a node whose op differs in the export is left out)."""
    from rosetta.frameworks.torch_export import named_modules, onnx_as_mmdnn_reads
    from rosetta.verify.locate import References, source_layer

    model = onnx_as_mmdnn_reads(module, feeds[input_name][:1], input_name)
    modules = named_modules(module)
    references = References.of(model, feeds)
    found = IRReferences(feeds)
    nodes = model.graph.node
    for ir_name, (index, kind) in ir_manifest.converter.get("source_nodes", {}).items():
        if index < len(nodes) and f"onnx::{nodes[index].op_type}" == kind and nodes[index].output[0] in references.ref32:
            tensor = nodes[index].output[0]
            found.ref32[ir_name], found.ref64[ir_name] = references.ref32[tensor], references.values[tensor]
            found.names[ir_name] = (tensor, source_layer(nodes[index].name, modules) or nodes[index].name)
    if not found.ref32:
        found.reason = "the IR does not record the ONNX-level graph its PyTorch parser read"
    return found


def framework_references(runner: str, folder: Path, ir_manifest, ir_nodes: list[dict], feeds: dict,
                         float64: bool = True, trust_code: bool = False) -> IRReferences:
    """The values of the IR nodes of a Keras or MXNet source, read from its layers in its own framework's worker
    (float32, and float64 where the model runs in float64); see the module docstring for the names."""
    from rosetta.execution import Job, execute
    from rosetta.frameworks import isolation

    renamed = ir_manifest.converter.get("source_nodes", {})  # MXNet: IR name -> Gluon's name
    names = {node["name"] for node in ir_nodes}
    source = {}
    for node in ir_nodes:
        name = node["name"]
        if name + KERAS_ACTIVATION in names or node["op"] == "DataInput":
            continue  # a Keras layer's value before its activation, which Keras does not keep
        layer = name[: -len(KERAS_ACTIVATION)] if name.endswith(KERAS_ACTIVATION) else renamed.get(name, name)
        source[name] = layer
    found = IRReferences(feeds)
    values = {}
    for precision in ("float32", "float64") if float64 else ("float32",):
        argument = {"runner": runner, "folder": str(folder), "names": sorted(set(source.values())), "feeds": feeds,
                    "precision": precision, "trust_code": trust_code}
        values[precision] = execute(Job("rosetta.frameworks:layer_values_job", argument, isolation(runner),
                                        f"{runner} layer values")).result["values"]
    for name, layer in source.items():
        if layer in values["float32"]:
            found.ref32[name] = values["float32"][layer]
            found.ref64[name] = values.get("float64", {}).get(layer, values["float32"][layer])
            found.names[name] = (layer, layer)
    if not found.ref32:
        found.reason = f"no IR node is named as a layer of the {runner} model"
    return found


class IRProbe:
    """Reads the target's value of one IR node: cuts the IR after it, emits the cut with `convert` (IR folder,
    destination -> artifact), runs it with `load`'s runner, compares with the source's value; counts emissions."""

    def __init__(self, ir: Path, references: IRReferences, convert: Callable[[Path, Path], Path],
                 load: Callable[[Path], object], policy: TolerancePolicy, work: Path) -> None:
        from rosetta.convert.mmdnn.ir import ir_nodes
        from rosetta.manifest import Manifest

        self.ir, self.references, self.convert, self.load = Path(ir), references, convert, load
        self.policy, self.work = policy, Path(work)
        self.manifest = Manifest.read(self.ir)
        self.graph = ir_nodes(self.manifest.artifact_path(self.ir))
        self.by_name = {node["name"]: node for node in self.graph}
        self.nodes = [(index, node) for index, node in enumerate(self.graph)
                      if node["name"] in references.ref32 and node["op"] != "DataInput"]
        self.conversions, self.prefixes = 0, {}

    def position(self, name: str) -> int | None:
        return next((p for p, (_, node) in enumerate(self.nodes) if node["name"] == name), None)

    def prefix(self, position: int) -> NodeRow:
        """The row of node `position` (of self.nodes), from the IR cut after it, emitted and run (once)."""
        if position in self.prefixes:
            return self.prefixes[position]
        from rosetta.execution import Job, execute
        from rosetta.verify.compare import compare_output

        index, node = self.nodes[position]
        name = node["name"]
        row = NodeRow(index, name, node["op"], *self.references.names[name])
        reference32, reference64 = self.references.ref32[name], self.references.ref64[name]
        self.conversions += 1
        folder = self.work / f"probe-{self.conversions}"
        try:
            output = {"name": name, "shape": [None, *reference32.shape[1:]], "dtype": "float32"}
            execute(Job("rosetta.convert.mmdnn.ir:cut_ir_job", {"source": str(self.ir), "out": str(folder / "ir"),
                                                                "node": name, "output": output}, "mmdnn", "IR cut"))
            artifact = self.convert(folder / "ir", folder / "target")
            value = self.load(artifact).predict(self.references.feeds)[name]
            value = self.in_source_layout(node, value, artifact, reference32.shape)
        except Exception as error:  # noqa: BLE001 - the row says why it has no figures
            row.reason = one_line(error)
            value = None
        finally:
            shutil.rmtree(folder, ignore_errors=True)
        if value is not None:
            fill_row(row, compare_output(name, value, reference32, reference64, self.policy))
        self.prefixes[position] = row
        return row

    def in_source_layout(self, node: dict, value: np.ndarray, artifact: Path, shape: tuple) -> np.ndarray:
        """The emitted value in the source model's layout: a 4-D value the runner already transposed (emit.layouts);
        a Flatten/Reshape of a 4-D tensor re-ordered from the emitter's flatten order into the source's; a value
        of the reference's size reshaped to its shape (MMdnn's IR keeps dense outputs 4-D: N x 1 x 1 x C)."""
        from rosetta.manifest import Manifest

        emitted = Manifest.read(artifact).converter.get("layout", "")
        source = self.manifest.converter.get("layout", "channels_first")
        value = np.asarray(value)
        parent = self.by_name.get(node["input"][0].split(":")[0]) if node["input"] else None
        spatial = parent is not None and parent["shape"] and len(parent["shape"]) == 4 and \
            parent["shape"][1] * parent["shape"][2] > 1 and parent["shape"][3] > 1
        if node["op"] in FLATTENING and emitted and emitted != source and spatial and value.ndim == 2:
            _, height, width, channels = parent["shape"]
            if emitted == "channels_last":
                value = value.reshape(-1, height, width, channels).transpose(0, 3, 1, 2)
            else:
                value = value.reshape(-1, channels, height, width).transpose(0, 2, 3, 1)
            value = value.reshape(len(value), -1)
        if value.shape != tuple(shape) and value.size == int(np.prod(shape)):
            value = value.reshape(shape)
        return value


def locate_mmdnn(ir: Path, references: IRReferences, convert: Callable[[Path, Path], Path],
                 load: Callable[[Path], object], policy: TolerancePolicy, work: Path, target: str = "") -> LocateReport:
    """The first IR node whose value in the target fails `policy`, by bisection of IR prefixes (module docstring);
    whether it was introduced there: its inputs' prefixes, measured too, pass."""
    report = LocateReport(target, "not located", stage="conversion", mechanism="bisection", graph="mmdnn")
    probe = IRProbe(ir, references, convert, load, policy, work)
    if not probe.nodes:
        report.reason = references.reason or "no IR node has a value in the source model"
        return report
    found = _bisect(probe, None, [])
    report.conversions = probe.conversions
    if isinstance(found, str) or found is None:
        report.verdict = "not located" if isinstance(found, str) else "not reproduced"
        report.reason = found if isinstance(found, str) else "every IR prefix measured passes"
        return report
    good, bad = found
    first = probe.prefix(bad)
    report.first, report.verdict = first, "located"
    report.rows = [probe.prefixes[p] for p in sorted(probe.prefixes)]
    report.unread = [probe.nodes[p][1]["name"] for p in range(good + 1, bad)]
    if report.unread:
        report.unread_reason = probe.prefix(good + 1).reason
    inputs = [probe.position(name.split(":")[0]) for name in probe.by_name[first.node]["input"]
              if probe.by_name.get(name.split(":")[0], {}).get("op") != "DataInput"]
    measured = [probe.prefix(p).passed if p is not None else None for p in inputs]
    report.conversions = probe.conversions
    if all(passed is True for passed in measured):
        report.origin = INTRODUCED
    elif any(passed is False for passed in measured):
        report.origin = INHERITED
    else:
        report.reason = "an input of the node has no value in the source or did not emit or run"
    first.origin = report.origin
    return report


def locate_reference_cell(cell, target, store, work: Path, ir: Path | None = None) -> LocateReport:
    """`rosetta verify --locate` for a FAIL cell of the MMdnn route on a reference model: bisection of the IR the
    artifact was emitted from (`ir`: the store's, or a wrong model's), against the reference module's values."""
    from rosetta.convert.store import along
    from rosetta.frameworks import load_runner
    from rosetta.manifest import Manifest
    from rosetta.models import get_model
    from rosetta.verify.cells import reference_for

    spec = get_model(cell.model)
    ir = ir or store.get(spec, cell.seed, target.chain[:2], target.export_options(dict(cell.export)))
    feeds = reference_for(cell.model, cell.seed, cell.batch).feeds
    references = torch_references(spec.build(cell.seed), spec.inputs[0].name, Manifest.read(ir), feeds)
    load = lambda folder: load_runner(target.runner, folder, threads=cell.threads,  # noqa: E731
                                      **dict(target.verify_options))
    return locate_mmdnn(ir, references, along(target.chain[1:]), load, cell.tolerance, work, cell.target)

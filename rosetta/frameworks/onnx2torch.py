"""onnx2torch, as rosetta uses it: a converted `torch` artifact (the ONNX graph and the converted module's
state_dict, see convert.onnx.to_torch) is rebuilt with onnx2torch, which is deterministic, and its weights
loaded with torch.load(weights_only=True): no pickled code. What rosetta adds to onnx2torch, through its own
extension points:

1. onnx2torch imports torchvision at import time, for its NMS and RoiAlign converters only. On machines
   with CPU torch, torchvision is absent or its PyPI (CUDA) build fails to import ("operator
   torchvision::nms does not exist"). While onnx2torch imports, a stand-in `torchvision` whose `ops`
   functions raise a clear error is put in sys.modules, then removed: only a model with NMS/RoiAlign is
   affected, and it gets that error.
2. rosetta's converters (convert.onnx.to_torch: GRU, LSTM, GlobalMaxPool, GroupNormalization, Trilu, the
   opset-18 reductions, Split and Pad, opset-7 Dropout, and replacements of converters onnx2torch gets wrong),
   registered in onnx2torch's registry by their `install`, which `import_onnx2torch` calls before onnx2torch
   converts anything, by its registered name (INSTALL): they live in convert/, above this layer, and a torch
   artifact loaded here is rebuilt by onnx2torch with them.
3. Later opsets: onnx2torch looks a converter up by the opset at which the op's schema last changed, and
   registers none for the newest (Conv at 22 only widened its types). `register_later_opsets` registers each
   converter again for every later schema version whose inputs, outputs and attributes (with their defaults)
   are those of the version it was written for, the type constraints only widened: `opset_aliases` says which.
4. onnx2torch returns one value per graph-output *node*, not per graph output: an output of a node with
   several outputs (a GRU's Y_h, a TopK's indices) is returned as the node's whole tuple, and two outputs of
   one node collapse into one. `_outputs_per_value` rewrites the FX graph's output: one value per ONNX graph
   output, the node's own output taken by index.
"""

from __future__ import annotations

import importlib
import re
import sys
from pathlib import Path

from rosetta.errors import RosettaError, Unsupported, one_line
from rosetta.frameworks.onnx_graph import external_data_files
from rosetta.imports import stand_in_modules
from rosetta.registry import load_entry

GRAPH = "model.onnx"  # the files of a converted `torch` artifact (a folder)
WEIGHTS = "state_dict.pt"

# the torch bridge's converters, installed into onnx2torch's registry before it converts (2.): named, not imported,
# as the execution layer names its jobs, since they live in convert/, above this layer
INSTALL = "rosetta.convert.onnx.to_torch:install"


def _torchvision_stand_in() -> dict:
    import types

    def unavailable(*_args, **_kwargs):
        raise Unsupported("this model uses NMS/RoiAlign, whose onnx2torch converters need torchvision; "
                          "install a torchvision that matches your torch")

    package = types.ModuleType("torchvision")
    ops = types.ModuleType("torchvision.ops")
    for name in ("nms", "batched_nms", "box_convert", "roi_align"):
        setattr(ops, name, unavailable)
    package.ops = ops
    return {"torchvision": package, "torchvision.ops": ops}


def import_bare_onnx2torch():
    """onnx2torch alone, imported with the torchvision stand-in where torchvision does not import (1.)."""
    if sys.modules.get("onnx2torch") is not None:
        return sys.modules["onnx2torch"]
    try:
        importlib.import_module("torchvision")
        stand_in = {}
    except Exception:  # absent, or a build that does not match torch
        stand_in = _torchvision_stand_in()
    with stand_in_modules(stand_in):
        return importlib.import_module("onnx2torch")


def import_onnx2torch():
    """onnx2torch with rosetta's converters and the later opsets registered (once per process)."""
    onnx2torch = import_bare_onnx2torch()
    from onnx2torch.node_converters import registry

    if not getattr(registry, "_rosetta_installed", False):
        load_entry(INSTALL)()
        register_later_opsets()
        registry._rosetta_installed = True
    return onnx2torch


_ALIASES: dict[tuple[str, int], int] = {}  # (op, schema version) -> the version whose converter it reuses


# attributes a later schema added that change nothing for the types onnx2torch's converter takes: Cast's and
# CastLike's saturate (opset 19) and round_mode (24) apply to float8 targets only, which onnx2torch's Cast maps to
# no torch dtype (a refusal); without this, every Cast of an opset-19+ model had no converter
_FLOAT8_ONLY_ATTRIBUTES = {"Cast": {"saturate", "round_mode"}, "CastLike": {"saturate", "round_mode"}}


def _signature(schema) -> tuple:
    """What a schema version says an op is, apart from its types: inputs, outputs, attributes and defaults."""
    def formal(parameters):
        return tuple((p.name, p.option) for p in parameters)
    ignored = _FLOAT8_ONLY_ATTRIBUTES.get(schema.name, set())
    attributes = tuple(sorted((name, a.type, a.required, a.default_value.SerializeToString())
                              for name, a in schema.attributes.items() if name not in ignored))
    return formal(schema.inputs), formal(schema.outputs), attributes


def _types_widened(old, new) -> bool:
    allowed = lambda schema: {c.type_param_str: set(c.allowed_type_strs) for c in schema.type_constraints}  # noqa: E731
    before, after = allowed(old), allowed(new)
    return all(set().union(*after.values()) >= types for types in before.values()) if after else not before


def register_later_opsets() -> None:
    """onnx2torch's converters (and rosetta's) registered again for each later schema version of their op that
    changed only its types (see the module docstring, 3.)."""
    from onnx import defs
    from onnx2torch.node_converters.registry import add_converter, get_converter

    versions: dict[str, list] = {}
    for schema in defs.get_all_schemas_with_history():
        if schema.domain in ("", "ai.onnx"):
            versions.setdefault(schema.name, []).append(schema)
    for op, schemas in versions.items():
        registered = None
        for schema in sorted(schemas, key=lambda s: s.since_version):
            try:
                converter = get_converter(op, schema.since_version)
                registered = (schema, converter)
                continue
            except NotImplementedError:
                pass
            if registered and _signature(registered[0]) == _signature(schema) and _types_widened(registered[0], schema):
                add_converter(operation_type=op, version=schema.since_version)(registered[1])
                _ALIASES[(op, schema.since_version)] = registered[0].since_version
            else:
                registered = None


def opset_aliases(model) -> dict[str, int]:
    """{"Conv-22": 11, ...}: the ops of `model` converted by a converter registered for an earlier opset."""
    from onnx import defs

    opset = next((o.version for o in model.opset_import if o.domain in ("", "ai.onnx")), 1)
    found = {}
    for node in model.graph.node:
        try:
            version = defs.get_schema(node.op_type, opset).since_version
        except defs.SchemaError:
            continue
        if (node.op_type, version) in _ALIASES:
            found[f"{node.op_type}-{version}"] = _ALIASES[(node.op_type, version)]
    return dict(sorted(found.items()))


def exact_batchnorm_momentum(module) -> None:
    """ONNX keeps BatchNorm's momentum as a float32 attribute (torch's 0.1 is exported as 0.9, stored as
    0.899999976) and onnx2torch makes torch's momentum 1 - that (0.100000024, 2.4e-7 off, which float64
    training sees): the float32's shortest decimal is the value the exporter was given."""
    import numpy as np
    import torch

    for layer in module.modules():
        if isinstance(layer, torch.nn.modules.batchnorm._BatchNorm) and layer.momentum is not None:
            layer.momentum = 1.0 - float(np.format_float_positional(np.float32(1.0 - layer.momentum)))


def build_module(graph_path: Path):
    """The torch.fx.GraphModule onnx2torch makes of an ONNX file, with one-line errors."""
    import onnx

    onnx2torch = import_onnx2torch()
    try:
        model = onnx.load(str(graph_path), load_external_data=False)
        # with external data (e.g. over protobuf's 2 GB), onnx2torch infers shapes by path instead of in memory
        module = onnx2torch.convert(str(graph_path) if external_data_files(model) else onnx.load(str(graph_path)))
        _outputs_per_value(module, model)
        module.graph.eliminate_dead_code()  # e.g. the Shape nodes a ConstantOfShape no longer reads
        module.recompile()
        exact_batchnorm_momentum(module)
        return module
    except RosettaError:
        raise
    except NotImplementedError as error:  # onnx2torch: "Converter is not implemented (OperationDescription(...))"
        found = re.search(r"operation_type='(\w+)', version=(\d+)", str(error))
        if found:
            raise RosettaError(f"ONNX op {found.group(1)} (opset {found.group(2)}) cannot be converted to torch: "
                               "onnx2torch has no converter for it") from None
        raise RosettaError(f"onnx2torch cannot convert this model: {one_line(error)}") from None


def _outputs_per_value(module, model) -> None:
    """One FX output per ONNX graph output (see 4. above). onnx2torch's output list holds one FX node per
    producing ONNX node, in the order of their first graph output; a graph output that is a graph input or
    an initializer is left as onnx2torch returns it."""
    import operator

    producers = {name: node for node in model.graph.node for name in node.output if name}
    wanted = [producers.get(value.name) for value in model.graph.output]
    if None in wanted or all(len(node.output) == 1 for node in wanted):  # onnx2torch picks by index past 1
        return  # nothing onnx2torch gets wrong
    order = list(dict.fromkeys(id(node) for node in wanted))
    output = next(node for node in module.graph.nodes if node.op == "output")
    returned = output.args[0] if isinstance(output.args[0], (list, tuple)) else [output.args[0]]
    if len(returned) != len(order):
        return
    values = []
    with module.graph.inserting_before(output):
        for value, node in zip(model.graph.output, wanted):
            produced = returned[order.index(id(node))]
            if len(node.output) > 1:
                produced = module.graph.call_function(operator.getitem, (produced, list(node.output).index(value.name)))
            values.append(produced)
    output.args = (values if len(values) > 1 else values[0],)
    module.graph.lint()
    module.recompile()


def load_module(folder: Path, manifest):
    """The module of a converted `torch` artifact: its graph rebuilt by onnx2torch, its state_dict loaded."""
    import torch

    artifact = manifest.artifact_path(folder)
    module = build_module(artifact / GRAPH)
    state = torch.load(artifact / WEIGHTS, weights_only=True)
    module.load_state_dict(state, strict=True)
    return module.eval()

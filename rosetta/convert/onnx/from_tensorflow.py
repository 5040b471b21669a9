"""TensorFlow SavedModel -> ONNX with tf2onnx: the TF -> ONNX -> ONNX Runtime round trip.

Runs what tf2onnx's command line (`python -m tf2onnx.convert --saved-model`) runs, through its Python API
and in the TensorFlow worker that already has TensorFlow imported (a fresh interpreter cost 3.5 s a
conversion): tf_loader.from_saved_model freezes the serving signature, convert.from_graph_def converts it,
at the same opset as the ONNX the SavedModel came from. (Wrapping the loaded signature in a tf.function for
tf2onnx.convert.from_function leaves the captured constants as extra graph inputs.) Tensors that the TF
artifact holds channels-last (recorded in its manifest) are turned back to channels-first (inputs_as_nchw,
outputs_as_nchw); the ONNX tensors keep the signature's names, in the source model's case.
"""

from __future__ import annotations

import logging
import re
from pathlib import Path

import numpy as np

from rosetta.convert.targets import EXPORT_DEFAULTS
from rosetta.errors import RosettaError, cause_line
from rosetta.frameworks.onnx_graph import graph_inputs, load_checked, value_info_signature
from rosetta.manifest import Manifest, sha256_of

ARTIFACT = "model.onnx"


def convert(source: Path, staging: Path, options: dict) -> Manifest:
    from importlib.metadata import version

    previous = Manifest.read(source)
    opset = min(int(previous.opset or options.get("opset", EXPORT_DEFAULTS["opset"])), newest_tf2onnx_opset())
    layouts = previous.converter.get("layouts", {})
    target = Path(staging) / ARTIFACT
    # tf2onnx transposes channels-last tensors back to channels-first for rank 4 only (it ignores any other
    # rank with a warning): those it takes; any other layout change is kept in the manifest, for the runner
    rank4 = {e["name"] for e in previous.inputs + previous.outputs if len(e["shape"]) == 4}
    nchw = {kind: [e["name"] for e in entries if layouts.get(e["name"]) == "channels_last" and e["name"] in rank4]
            for kind, entries in (("inputs", previous.inputs), ("outputs", previous.outputs))}
    kept = {name: layout for name, layout in layouts.items() if name not in nchw["inputs"] + nchw["outputs"]}
    run_tf2onnx(previous.artifact_path(source), target, opset, nchw["inputs"], nchw["outputs"])
    restore_name_case(target, previous)
    restore_scalar_inputs(target, previous)
    signature_in, signature_out = check_tensor_names(load_checked(target), previous)
    # a tensor whose layout the runner changes is fed and returned as the source model's: its signature
    before = {entry["name"]: entry for entry in previous.inputs + previous.outputs}
    signature_in, signature_out = ([before[e["name"]] if e["name"] in kept else e for e in signature]
                                   for signature in (signature_in, signature_out))
    return Manifest(
        artifact=ARTIFACT, format="onnx", source=previous.source,
        converter={"name": "tf2onnx", "version": version("tf2onnx"), "framework_version": tensorflow_version(),
                   "options": {"opset": opset}, **({"layouts": kept} if kept else {})},
        inputs=signature_in, outputs=signature_out, sha256=sha256_of(target), opset=opset,
    )


def run_tf2onnx(saved_model: Path, target: Path, opset: int, nchw_inputs=(), nchw_outputs=(),
                without_optimizers=()) -> None:
    """tf2onnx on a SavedModel's serving signature, as its command line converts it, with rosetta's handlers
    for the ops it lacks (tf2onnx_ops), and without the named optimizers of its own; one-line error with
    tf2onnx's own reason. from_graph_def converts what it can and logs each op it cannot (the command line
    stops at the first): any error it logs refuses the conversion, naming every op it could not convert."""
    from tf2onnx import optimizer, tf_loader
    from tf2onnx.convert import from_graph_def

    from rosetta.convert.onnx.tf2onnx_ops import register_handlers

    register_handlers()
    errors = _ErrorRecords()
    logger = logging.getLogger("tf2onnx")
    logger.addHandler(errors)
    optimizers = optimizer._get_optimizers()  # tf2onnx's own ordered registry of graph optimizers, by name
    every_optimizer = dict(optimizers)
    try:
        for name in without_optimizers:
            optimizers.pop(name, None)
        graph_def, inputs, outputs, _, renamed = tf_loader.from_saved_model(
            str(saved_model), None, None, return_initialized_tables=True, return_tensors_to_rename=True)
        graph_def = inline_compiled_calls(graph_def, inputs, outputs)
        from_graph_def(graph_def, input_names=inputs, output_names=outputs, opset=opset, tensors_to_rename=renamed,
                       inputs_as_nchw=list(nchw_inputs) or None, outputs_as_nchw=list(nchw_outputs) or None,
                       output_path=str(target))
    except Exception as error:  # noqa: BLE001 - tf2onnx's and TensorFlow's own exceptions, reported in one line
        raise RosettaError(f"tf2onnx failed: {cause_line(str(error)) or type(error).__name__}"[:300]) from None
    finally:
        logger.removeHandler(errors)
        optimizers.clear()
        optimizers.update(every_optimizer)  # in their order
    if errors.messages or not target.is_file():
        target.unlink(missing_ok=True)
        raise RosettaError(f"tf2onnx failed: {(errors.messages or ['wrote no model'])[-1]}"[:300])


# The attributes that keep grappler's function inlining off a call: set on a tf.function(jit_compile=True)
# (Keras 3 wraps its grouped convolutions in one on the TensorFlow backend, ConvNeXt's depthwise Conv2D among them)
NOT_INLINED = ("_XlaMustCompile", "_noinline")


def inline_compiled_calls(graph_def, inputs: list[str], outputs: list[str]):
    """The frozen graph with every call of a function marked for XLA compilation inlined. tf2onnx's loader
    inlines nested functions with grappler, which leaves a function marked `_XlaMustCompile`/`_noinline` as a
    StatefulPartitionedCall node tf2onnx cannot convert; those marks only ask TensorFlow to compile the
    function with XLA, so they are dropped and grappler's inlining is run once more, as tf2onnx runs it."""
    from tf2onnx import tf_loader

    functions = graph_def.library.function
    calls = [n for n in [*graph_def.node, *(n for f in functions for n in f.node_def)]
             if n.op in ("PartitionedCall", "StatefulPartitionedCall")]  # a marked call may sit in a function
    marked = [x for x in [*functions, *calls] if any(a in x.attr for a in NOT_INLINED)]
    if not marked:
        return graph_def
    for item in marked:
        for attribute in NOT_INLINED:
            item.attr.pop(attribute, None)
    with tf_loader.tf_session():
        graph_def = tf_loader.tf_optimize(inputs, outputs, graph_def)
    tf_loader.tf_reset_default_graph()
    return graph_def


class _ErrorRecords(logging.Handler):
    """The messages of the errors tf2onnx logs while it converts ("Unsupported ops: Counter({'Igamma': 1})")."""

    def __init__(self):
        super().__init__(level=logging.ERROR)
        self.messages: list[str] = []

    def emit(self, record: logging.LogRecord) -> None:
        message = record.getMessage()
        counted = re.fullmatch(r"Unsupported ops: Counter\((\{.*\})\)", message)
        if counted:  # tf2onnx's summary of the ops it left unconverted
            message = "TensorFlow ops it cannot convert: " + ", ".join(sorted(re.findall(r"'([^']+)'", counted[1])))
        self.messages.append(cause_line(message) or message)


def newest_tf2onnx_opset() -> int:
    """The newest opset tf2onnx writes (a newer source opset is written at this one)."""
    from tf2onnx.constants import OPSET_TO_IR_VERSION

    return max(OPSET_TO_IR_VERSION)


def restore_name_case(path: Path, previous) -> None:
    """A SavedModel's signature names its tensors in lower case (TensorFlow lowers the argument names of a
    tf.function); the ONNX tf2onnx writes gets the source model's spelling back ("X", "InvStdDev") where only
    the case differs, every use of the tensor renamed with it."""
    import onnx

    model = onnx.load(str(path))
    wanted = {entry["name"].lower(): entry["name"] for entry in previous.inputs + previous.outputs}
    if len(wanted) != len(previous.inputs + previous.outputs):
        return  # two source names differ only in case: nothing to restore unambiguously
    renamed = {value.name: wanted[value.name.lower()] for value in list(model.graph.input) + list(model.graph.output)
               if value.name.lower() in wanted and value.name != wanted[value.name.lower()]}
    if not renamed:
        return
    for value in list(model.graph.input) + list(model.graph.output) + list(model.graph.value_info):
        value.name = renamed.get(value.name, value.name)
    for node in model.graph.node:
        node.input[:] = [renamed.get(name, name) for name in node.input]
        node.output[:] = [renamed.get(name, name) for name in node.output]
    onnx.save(model, str(path))


def restore_scalar_inputs(path: Path, previous) -> None:
    """A 0-d input of the source that the ONNX tf2onnx writes takes as a vector (onnx2tf declares it (None,) in
    the SavedModel, TensorFlow itself takes the 0-d tensor into it; ONNX Runtime refuses the source's 0-d
    array): declared 0-d again, and reshaped to the one-element vector the graph was converted for, so that the
    round trip takes the source's inputs."""
    import onnx
    from onnx import helper, numpy_helper

    model = onnx.load(str(path))
    scalars = {entry["name"] for entry in previous.inputs if entry["shape"] == []}
    restored = []
    for value in model.graph.input:
        dims = value.type.tensor_type.shape.dim
        if value.name in scalars and len(dims) == 1 and dims[0].dim_value in (0, 1):
            restored.append(value.name)
            dims.pop()
    if not restored:
        return
    vectors = {name: f"{name}__vector" for name in restored}
    for node in model.graph.node:
        node.input[:] = [vectors.get(name, name) for name in node.input]
    model.graph.initializer.append(numpy_helper.from_array(np.array([1], np.int64), "rosetta__one_element"))
    for index, name in enumerate(restored):
        model.graph.node.insert(index, helper.make_node("Reshape", [name, "rosetta__one_element"], [vectors[name]],
                                                        name=f"{name}__as_vector"))
    onnx.save(model, str(path))


def check_tensor_names(model, previous) -> tuple[list[dict], list[dict]]:
    """The ONNX signature, which must name the tensors as the source model did."""
    signature_in = value_info_signature(graph_inputs(model))
    signature_out = value_info_signature(model.graph.output)
    if sorted(s["name"] for s in signature_in) != sorted(e["name"] for e in previous.inputs) or \
            sorted(s["name"] for s in signature_out) != sorted(o["name"] for o in previous.outputs):
        raise RosettaError(f"tf2onnx named the tensors {[s['name'] for s in signature_in]} -> "
                           f"{[s['name'] for s in signature_out]}, not as the source model")
    return signature_in, signature_out


def tensorflow_version() -> str:
    """TensorFlow's version from its package metadata (the manifest is written without importing it)."""
    from importlib.metadata import PackageNotFoundError, version

    for distribution in ("tensorflow-cpu", "tensorflow"):
        try:
            return version(distribution)
        except PackageNotFoundError:
            continue
    return "unknown"

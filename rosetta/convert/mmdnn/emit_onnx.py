"""IR -> ONNX with MMdnn's ONNX emitter: the generated `KitModel()` builds an ONNX ModelProto with
onnx.helper, which rosetta brings to a model ONNX Runtime runs. The emitter's model is NHWC at the input
(MMdnn's IR layout; a Transpose follows it), which the manifest records for the runner.

What the generated model needs before ONNX Runtime 1.31 takes it (each a FAIL before):
- opset 6 and the installed onnx's newest IR version: "Unsupported model IR version" and, with only the IR
  version lowered, no kernels for opset-6 ops. onnx's version converter takes it to opset 13, and the IR
  version becomes the lowest that opset needs;
- weights listed as graph inputs too (pre-IR-4 style): they are dropped from the inputs, so ONNX Runtime
  treats them as constants and the model has only its real input;
- the IR's batch size -1 written as 1: the batch axis of inputs and outputs becomes symbolic again.
"""

from __future__ import annotations

from pathlib import Path

from rosetta.convert.mmdnn import compat
from rosetta.convert.mmdnn.emit import emitted_manifest, generate_code, ir_paths
from rosetta.errors import RosettaError
from rosetta.frameworks.base import import_generated
from rosetta.manifest import Manifest

ARTIFACT = "model.onnx"
CODE = "kit_onnx.py"
OPSET = 13


def rename_value(model, old: str, new: str) -> None:
    """Rename a value everywhere; a different value already named `new` (the emitter names the NCHW
    transpose of an input after the input) is renamed out of the way first."""
    if old == new:
        return
    if any(new in node.output for node in model.graph.node):
        rename_value(model, new, f"{new}_mmdnn")
    for node in model.graph.node:
        node.input[:] = [new if name == old else name for name in node.input]
        node.output[:] = [new if name == old else name for name in node.output]
    for value in list(model.graph.input) + list(model.graph.output):
        if value.name == old:
            value.name = new


def for_onnxruntime(model, inputs: list, outputs: list):
    """The emitted model made loadable (see the module's docstring), its input and output named as the
    reference model's."""
    import onnx
    from onnx import helper, version_converter

    weights = {t.name for t in model.graph.initializer}
    real_inputs = [value for value in model.graph.input if value.name not in weights]
    del model.graph.input[:]
    model.graph.input.extend(real_inputs)
    model = version_converter.convert_version(model, OPSET)  # before the batch axis is symbolic: it needs ints
    model.ir_version = helper.find_min_ir_version_for(list(model.opset_import))
    # shapes as the reference declares them (the IR pads 2-D outputs to NHWC rank), the batch axis symbolic
    for value, entry in list(zip(model.graph.input, inputs)) + list(zip(model.graph.output, outputs)):
        shape = value.type.tensor_type.shape
        sizes = [d.dim_value for d in shape.dim]
        shape.ClearField("dim")
        dims = entry["shape"] if value in model.graph.output else sizes
        for index, size in enumerate(dims):
            dim = shape.dim.add()
            if index == 0:
                dim.dim_param = "batch"
            else:
                dim.dim_value = int(size)
    del model.graph.value_info[:]
    for values, entries in ((model.graph.input, inputs), (model.graph.output, outputs)):
        if len(values) != len(entries):
            raise RosettaError(f"MMdnn's ONNX emitter wrote {len(values)} graph inputs/outputs; the model has "
                               f"{len(entries)}")
        for value, entry in zip(list(values), entries):
            rename_value(model, value.name, entry["name"])
    onnx.checker.check_model(model, full_check=True)
    return model


def convert(source: Path, staging: Path, options: dict) -> Manifest:
    from rosetta.frameworks.mxnet import install_onnx_mapping

    compat.apply()
    install_onnx_mapping()  # the generated code calls onnx.mapping.NP_TYPE_TO_TENSOR_TYPE
    import onnx
    from mmdnn.conversion.onnx.onnx_emitter import OnnxEmitter

    previous, graph, weights = ir_paths(source)
    emitter = OnnxEmitter(graph, weights)
    code = Path(staging) / CODE
    generate_code(emitter, code)
    generated = import_generated(code, "mmdnn_kit_onnx")
    generated.load_weights = lambda weight_file=None: emitter.weights_dict  # the IR's, as the emitter read them
    model = for_onnxruntime(generated.KitModel(None), previous.inputs, previous.outputs)
    onnx.save(model, str(Path(staging) / ARTIFACT))
    manifest = emitted_manifest(previous, Path(staging) / ARTIFACT, "onnx", "OnnxEmitter", onnx.__version__,
                                code=CODE, layout="channels_first", input_layout="channels_last")
    manifest.opset = OPSET
    return manifest

"""Small helpers over ONNX graphs shared by the paths that read or write ONNX."""

from __future__ import annotations

from pathlib import Path


def value_info_signature(values) -> list[dict]:
    """[{name, shape (ints, or strings for symbolic axes), dtype}] of graph inputs/outputs."""
    import onnx

    signature = []
    for value in values:
        tensor = value.type.tensor_type
        shape = [d.dim_param or d.dim_value if (d.dim_param or d.HasField("dim_value")) else None
                 for d in tensor.shape.dim]
        dtype = onnx.helper.tensor_dtype_to_np_dtype(tensor.elem_type).name
        signature.append({"name": value.name, "shape": shape, "dtype": dtype})
    return signature


def graph_inputs(model) -> list:
    """True inputs: graph inputs that are not also initializers (old exporters list weights as inputs)."""
    initializers = {init.name for init in model.graph.initializer}
    return [value for value in model.graph.input if value.name not in initializers]


def load_checked(path: Path):
    """Load an ONNX file and run the checker with shape inference; one-line errors for bad files."""
    import onnx

    from rosetta.errors import RosettaError

    path = Path(path)
    if not path.is_file():
        raise RosettaError(f"ONNX file {path} not found")
    try:
        model = onnx.load(str(path))
    except Exception as error:  # protobuf DecodeError and friends
        raise RosettaError(f"{path} is not a readable ONNX file ({type(error).__name__}: {error}); "
                           "export it again") from None
    try:
        onnx.checker.check_model(model, full_check=True)
    except Exception as error:
        first_line = str(error).strip().splitlines()[0] if str(error).strip() else type(error).__name__
        raise RosettaError(f"{path} fails the ONNX checker: {first_line}") from None
    return model


def training_mode_nodes(model) -> list[str]:
    """Nodes that compute differently in training mode, marked to do so in an inference graph: Dropout whose
    training_mode input is a true constant, BatchNormalization with training_mode=1. They mean the model was
    exported in training mode (DLF lesson: dropout must be off at inference)."""
    from onnx import numpy_helper

    constants = {init.name: numpy_helper.to_array(init) for init in model.graph.initializer}
    for node in model.graph.node:
        if node.op_type == "Constant" and node.attribute and node.attribute[0].name == "value":
            constants[node.output[0]] = numpy_helper.to_array(node.attribute[0].t)
    found = []
    for node in model.graph.node:
        if node.op_type == "Dropout" and len(node.input) > 2 and node.input[2]:
            flag = constants.get(node.input[2])
            if flag is None or bool(flag):  # unknown at export time counts: it may be true at run time
                found.append(f"Dropout {node.name or node.output[0]!r} with training_mode=true")
        if node.op_type == "BatchNormalization":
            if any(a.name == "training_mode" and a.i for a in node.attribute):
                found.append(f"BatchNormalization {node.name or node.output[0]!r} with training_mode=1")
    return found

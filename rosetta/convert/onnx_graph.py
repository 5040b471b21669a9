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

"""Small helpers over ONNX graphs shared by everything that reads or writes ONNX (runners, conversion paths,
readers of users' files, static checks), and `load_checked`: an ONNX file loaded with its checks (external
data inside the model's folder, the ONNX checker)."""

from __future__ import annotations

import shutil
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


_PASS_THROUGH = {"Cast", "Identity", "Unsqueeze", "Squeeze", "Reshape", "Flatten", "Transpose"}


def index_ranges(model) -> dict[str, int]:
    """{integer graph input: the rows of the smallest table it indexes}: an input that reaches a Gather's
    indices (an Embedding) through reshapes and casts only. Inputs drawn from [0, rows) then visit the table
    instead of its first rows, which would leave most of the embedding unchecked."""
    tables = {init.name: list(init.dims) for init in model.graph.initializer}
    producers = {output: node for node in model.graph.node for output in node.output}

    def source_input(name: str, inputs: set) -> str | None:
        while name not in inputs:
            node = producers.get(name)
            if node is None or node.op_type not in _PASS_THROUGH or not node.input:
                return None
            name = node.input[0]
        return name

    inputs = {value.name for value in graph_inputs(model)}
    ranges: dict[str, int] = {}
    for node in model.graph.node:
        if node.op_type != "Gather" or len(node.input) < 2 or node.input[0] not in tables:
            continue
        axis = next((a.i for a in node.attribute if a.name == "axis"), 0)
        dims = tables[node.input[0]]
        name = source_input(node.input[1], inputs)
        if name is not None and -len(dims) <= axis < len(dims) and dims[axis] > 0:
            ranges[name] = min(ranges.get(name, dims[axis]), dims[axis])
    return ranges


def graph_inputs(model) -> list:
    """True inputs: graph inputs that are not also initializers (old exporters list weights as inputs)."""
    initializers = {init.name for init in model.graph.initializer}
    return [value for value in model.graph.input if value.name not in initializers]


def external_data_files(model) -> list[str]:
    """The files (relative to the model's folder) that hold tensors stored outside the .onnx file."""
    from onnx.external_data_helper import ExternalDataInfo, _get_all_tensors, uses_external_data

    files = [ExternalDataInfo(t).location for t in _get_all_tensors(model) if uses_external_data(t)]
    return list(dict.fromkeys(files))


def load_checked(path: Path, label: str | None = None):
    """Load an ONNX file and run the checker with shape inference; one-line errors for bad files (naming
    `label`, the path the user gave). A model with external data is checked by path (the checker reads the
    data, so a model over protobuf's 2 GB limit is checked too) and returned without its data loaded; every
    data file must lie inside the model's folder."""
    import onnx

    from rosetta.errors import RosettaError, joined_lines
    from rosetta.trust import contained

    path, label = Path(path), label or str(path)
    if not path.is_file():
        raise RosettaError(f"ONNX file {label} not found")
    try:
        model = onnx.load(str(path), load_external_data=False)
        data_files = external_data_files(model)
    except Exception as error:  # protobuf DecodeError and friends
        raise RosettaError(f"{label} is not a readable ONNX file ({type(error).__name__}: {error}); "
                           "export it again") from None
    for name in data_files:
        data = contained(path.parent, name, "external data file")
        if not data.is_file():
            raise RosettaError(f"{label} keeps tensors in {name}, which is not beside it; copy {name} into "
                               f"{path.parent.name or '.'}/ with the model")
    try:
        if data_files:
            onnx.checker.check_model(str(path), full_check=True)
        else:
            model = onnx.load(str(path))
            onnx.checker.check_model(model, full_check=True)
    except Exception as error:  # its message goes on over lines (a node's dump): all of it, on one line
        raise RosettaError(f"{label} fails the ONNX checker: {joined_lines(error)}") from None
    return model


def copy_onnx(source: Path, target: Path) -> list[str]:
    """Copy an ONNX file and its external data files (same relative places beside it); the data files."""
    import onnx

    from rosetta.trust import contained

    shutil.copyfile(source, target)
    files = external_data_files(onnx.load(str(source), load_external_data=False))
    for name in files:
        destination = Path(target).parent / name
        destination.parent.mkdir(parents=True, exist_ok=True)
        shutil.copyfile(contained(Path(source).parent, name, "external data file"), destination)
    return files


def training_mode_nodes(model, base_dir: str = "") -> list[str]:
    """Nodes that compute differently in training mode, marked to do so in an inference graph: Dropout whose
    training_mode input is a true constant, BatchNormalization with training_mode=1. They mean the model was
    exported in training mode (DLF lesson: dropout must be off at inference)."""
    from onnx import numpy_helper

    flags = {node.input[2] for node in model.graph.node if node.op_type == "Dropout" and len(node.input) > 2}
    constants = {init.name: numpy_helper.to_array(init, base_dir) for init in model.graph.initializer
                 if init.name in flags}  # only these: the others may be gigabytes of external data
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


def edit_initializers(model, names, edit) -> None:
    """Rewrite the initializers called `names` of a ModelProto in place: edit(name, array) -> the new array (the
    ONNX counterpart of frameworks.keras.edit_keras_weights and frameworks.torch.edit_state_dict)."""
    import numpy as np
    from onnx import numpy_helper

    for init in model.graph.initializer:
        if init.name in names:
            new = edit(init.name, numpy_helper.to_array(init))
            init.CopyFrom(numpy_helper.from_array(np.ascontiguousarray(new), init.name))


def float64_model(model):
    """The same graph computing in float64: float32 weights, constants, casts and tensor types made float64
    (what ONNX's reference evaluator then runs in float64: the float64 reference of an ONNX model, and of
    every tensor `--locate` reads)."""
    import numpy as np
    import onnx
    from onnx import TensorProto, numpy_helper

    def widen(tensor):
        if tensor.data_type == TensorProto.FLOAT:
            tensor.CopyFrom(numpy_helper.from_array(numpy_helper.to_array(tensor).astype(np.float64), tensor.name))

    wide = onnx.ModelProto()
    wide.CopyFrom(model)
    graph = wide.graph
    for tensor in graph.initializer:
        widen(tensor)
    for value in [*graph.input, *graph.output, *graph.value_info]:
        if value.type.tensor_type.elem_type == TensorProto.FLOAT:
            value.type.tensor_type.elem_type = TensorProto.DOUBLE
    for node in graph.node:
        for attribute in node.attribute:
            if attribute.name in ("to", "dtype") and attribute.type == onnx.AttributeProto.INT \
                    and attribute.i == TensorProto.FLOAT:
                attribute.i = TensorProto.DOUBLE
            elif attribute.type == onnx.AttributeProto.TENSOR:
                widen(attribute.t)
    return wide


def float_tensors(model) -> dict[str, object]:
    """{name: value info} of every float32 tensor a node computes, by ONNX shape inference."""
    import onnx
    from onnx import TensorProto

    inferred = onnx.shape_inference.infer_shapes(model)
    known = {v.name: v for v in [*inferred.graph.value_info, *inferred.graph.output]}
    return {name: known[name] for node in model.graph.node if node.op_type != "Constant" for name in node.output
            if name in known and known[name].type.tensor_type.elem_type == TensorProto.FLOAT}


def with_outputs(model, names: list[str] | None = None):
    """The model with `names` (float32 tensors; None: every one) as its graph outputs, after the ones it has."""
    import onnx

    marked = onnx.ModelProto()
    marked.CopyFrom(model)
    infos = float_tensors(model)
    present = {o.name for o in marked.graph.output}
    marked.graph.output.extend(infos[name] for name in (infos if names is None else names) if name not in present)
    return marked


_ONNXRUNTIME_IR: list[int] = []


def onnxruntime_ir_version() -> int:
    """The newest ONNX IR version the installed ONNX Runtime reads (found once by loading a one-node model):
    models written by a newer onnx are given this one where their opsets allow it."""
    if not _ONNXRUNTIME_IR:
        import onnx
        import onnxruntime as ort
        from onnx import TensorProto, helper

        graph = helper.make_graph([helper.make_node("Identity", ["x"], ["y"])], "probe",
                                  [helper.make_tensor_value_info("x", TensorProto.FLOAT, [1])],
                                  [helper.make_tensor_value_info("y", TensorProto.FLOAT, [1])])
        for version in range(onnx.IR_VERSION, 6, -1):
            try:
                probe = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 13)], ir_version=version)
                ort.InferenceSession(probe.SerializeToString(), providers=["CPUExecutionProvider"])
                break
            except Exception:  # noqa: BLE001 - "Unsupported model IR version"
                continue
        _ONNXRUNTIME_IR.append(version)
    return _ONNXRUNTIME_IR[0]

"""The helpers over ONNX graphs, in one module, shared by everything that reads or writes ONNX (runners,
conversion paths and their graph rewrites, op mappers, readers of users' files, static checks): what a graph
holds (constants, shapes, element types, opsets, who makes and reads each tensor), ONNX's arithmetic that
several converters follow (Slice's clamping, constant folding, shapes traced back to what they are made of),
and `load_checked`: an ONNX file loaded with its checks (external data inside the model's folder, the ONNX
checker)."""

from __future__ import annotations

import shutil
from dataclasses import dataclass
from pathlib import Path

import numpy as np


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
    training_mode input is a true constant, BatchNormalization with training_mode=1 on activations (not on a
    weight: a weight-standardised convolution's). They mean the model was
    exported in training mode (DLF lesson: dropout must be off at inference)."""
    from onnx import numpy_helper

    flags = {node.input[2] for node in model.graph.node if node.op_type == "Dropout" and len(node.input) > 2}
    constants = {init.name: numpy_helper.to_array(init, base_dir) for init in model.graph.initializer
                 if init.name in flags}  # only these: the others may be gigabytes of external data
    for node in model.graph.node:
        if node.op_type == "Constant" and node.attribute and node.attribute[0].name == "value":
            constants[node.output[0]] = numpy_helper.to_array(node.attribute[0].t)
    # what depends on the graph's inputs: a training-mode BatchNormalization of a parameter (timm's StdConv2d,
    # NF-ResNet's ScaledStdConv2d standardise their weight with batch_norm(weight, training=True)) computes the
    # same in every mode; only one that normalises activations would use the batch's statistics
    initialized = {init.name for init in model.graph.initializer}
    activations = {value.name for value in model.graph.input if value.name not in initialized}
    for node in model.graph.node:
        if any(name in activations for name in node.input):
            activations.update(node.output)
    found = []
    for node in model.graph.node:
        if node.op_type == "Dropout" and len(node.input) > 2 and node.input[2]:
            flag = constants.get(node.input[2])
            if flag is None or bool(flag):  # unknown at export time counts: it may be true at run time
                found.append(f"Dropout {node.name or node.output[0]!r} with training_mode=true")
        if node.op_type == "BatchNormalization" and node.input[0] in activations:  # not a weight standardised
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


# ---- what a graph holds --------------------------------------------------------------------------------------
def outer_names_read(node) -> set[str]:
    """The names `node`'s subgraphs (If's branches, Loop's and Scan's bodies) read from the graphs around them:
    inputs of the node as much as its listed ones, though no edge says so. A name a subgraph makes or takes as its
    own input is not one."""
    from onnx import AttributeProto

    read: set[str] = set()
    for attribute in node.attribute:
        graphs = [attribute.g] if attribute.type == AttributeProto.GRAPH else \
            list(attribute.graphs) if attribute.type == AttributeProto.GRAPHS else []
        for graph in graphs:
            own = {value.name for value in graph.input} | {init.name for init in graph.initializer}
            for inner in graph.node:
                read.update(name for name in list(inner.input) + sorted(outer_names_read(inner))
                            if name and name not in own)
                own.update(inner.output)
            read.update(output.name for output in graph.output if output.name not in own)
    return read


def node_attributes(node) -> dict:
    """{name: value} of a node's attributes (strings as bytes, as onnx.helper gives them)."""
    from onnx import helper

    return {attribute.name: helper.get_attribute_value(attribute) for attribute in node.attribute}


def text(value) -> str:
    """A string attribute as str (onnx.helper gives bytes)."""
    return value.decode() if isinstance(value, bytes) else value


def constant_values(model) -> dict[str, np.ndarray]:
    """{name: array} of the graph's initializers and the outputs of its Constant nodes: the `value` form, and
    value_int(s) and value_float(s), which ONNX's function bodies and the dynamo exporter's optimiser write."""
    from onnx import numpy_helper

    values = {init.name: numpy_helper.to_array(init) for init in model.graph.initializer}
    for node in model.graph.node:
        if node.op_type == "Constant":
            attribute = node.attribute[0]
            if attribute.name == "value":
                values[node.output[0]] = numpy_helper.to_array(attribute.t)
            elif attribute.name in CONSTANT_ATTRIBUTE_FORMS:
                dtype, field = CONSTANT_ATTRIBUTE_FORMS[attribute.name]
                values[node.output[0]] = np.array(getattr(attribute, field), dtype)
    return values


# a Constant's other value forms: {attribute: (dtype, field of the AttributeProto)}
CONSTANT_ATTRIBUTE_FORMS = {"value_int": (np.int64, "i"), "value_ints": (np.int64, "ints"),
                            "value_float": (np.float32, "f"), "value_floats": (np.float32, "floats")}


def static_shapes(model, data_prop: bool = False) -> dict[str, list]:
    """Each tensor's shape after ONNX shape inference, None for an axis of unknown size; tensors of unknown
    rank are absent. `data_prop` also follows small shape tensors (Shape -> Gather -> Concat ...)."""
    return shapes_and_types(model, data_prop)[0]


def shapes_and_types(model, data_prop: bool = False) -> tuple[dict[str, list], dict[str, int]]:
    """(static_shapes, element_types) from one run of ONNX shape inference (seconds on a large graph)."""
    from onnx import shape_inference

    inferred = shape_inference.infer_shapes(model, data_prop=data_prop)
    shapes, types = {}, {}
    for value in list(inferred.graph.value_info) + list(inferred.graph.input) + list(inferred.graph.output):
        if value.type.tensor_type.HasField("shape"):
            shapes[value.name] = [d.dim_value if d.HasField("dim_value") else None
                                  for d in value.type.tensor_type.shape.dim]
        if value.type.tensor_type.elem_type:
            types[value.name] = value.type.tensor_type.elem_type
    types.update({init.name: init.data_type for init in model.graph.initializer})
    return shapes, types


def shape_of(name: str, shapes: dict, constants: dict) -> list | None:
    """A tensor's shape from a constant's value or from `static_shapes` (which lists no initializer), or None."""
    return list(constants[name].shape) if name in constants else shapes.get(name)


def element_types(model) -> dict[str, int]:
    """Each tensor's onnx.TensorProto element type, where shape inference knows it."""
    return shapes_and_types(model)[1]


def opset_versions(model) -> dict[str, int]:
    """{domain: version} of the model's opset imports, the default domain as ""."""
    return {("" if o.domain == "ai.onnx" else o.domain): o.version for o in model.opset_import}


def default_opset(model) -> int:
    """The version of the default (ai.onnx) domain the model imports."""
    return opset_versions(model).get("", 1)


@dataclass
class GraphView:
    """Who makes and who reads each tensor of a list of nodes, for recognising the multi-node patterns
    exporters write."""

    nodes: list
    constants: dict
    shapes: dict
    graph_outputs: set

    def __post_init__(self):
        self.producer = {name: node for node in self.nodes for name in node.output if name}
        self.readers = {}
        for node in self.nodes:
            for name in dict.fromkeys(node.input):
                if name:
                    self.readers.setdefault(name, []).append(node)

    def made_by(self, name: str, op_type: str):
        node = self.producer.get(name)
        return node if node is not None and node.op_type == op_type else None

    def sole_reader(self, name: str, op_type: str):
        """The one node reading `name`, if it is an `op_type` and `name` is not also a graph output."""
        readers = self.readers.get(name, [])
        if len(readers) == 1 and readers[0].op_type == op_type and name not in self.graph_outputs:
            return readers[0]
        return None

    def scalar(self, name: str):
        value = self.constants.get(name)
        return float(value.reshape(())) if value is not None and value.size == 1 else None

    @staticmethod
    def other_input(node, name: str):
        """The other operand of a binary node reading `name`."""
        if node is None or len(node.input) != 2 or name not in node.input:
            return None
        return node.input[1] if node.input[0] == name else node.input[0]


# ---- ONNX's arithmetic, followed at conversion time ------------------------------------------------------------
def onnx_slice(start: int, end: int, step: int, size: int) -> slice:
    """ONNX Slice's clamping of (start, end, step) on an axis of `size`, as a Python slice of the same elements
    (its stop None for a backward slice that runs through the first element)."""
    if step == 0:
        raise ValueError("Slice with step 0")
    start, end = start + size if start < 0 else start, end + size if end < 0 else end
    if step > 0:
        start, end = min(max(start, 0), size), min(max(end, 0), size)
        return slice(start, end, step)
    start, end = min(max(start, 0), size - 1), min(max(end, -1), size - 1)
    return slice(start, None if end == -1 else end, step)


SAMPLING_OPS = {"Bernoulli", "Multinomial", "RandomNormal", "RandomNormalLike", "RandomUniform", "RandomUniformLike"}


def fold_constants(nodes: list, constants: dict, opsets, keep=None) -> list:
    """Evaluate every node whose inputs are all constants (ONNX's reference evaluator), adding its outputs to
    `constants`; returns the nodes left. `opsets`: the model's opset imports; `keep(node, results)`: True to
    leave a node that could be folded (a float result another runtime would round otherwise). Nodes the
    evaluator cannot run, sampling ops, nodes with subgraphs and ops of other domains are left."""
    from onnx import AttributeProto, helper, numpy_helper
    from onnx.reference import ReferenceEvaluator

    opset_imports = [helper.make_opsetid(d, v) for d, v in opsets.items()] if isinstance(opsets, dict) else list(opsets)
    remaining = []
    for node in nodes:
        inputs = [name for name in node.input if name]
        if (node.op_type in SAMPLING_OPS or not all(name in constants for name in inputs)
                or (not inputs and node.op_type != "Constant") or node.domain not in ("", "ai.onnx")
                or any(a.type in (AttributeProto.GRAPH, AttributeProto.GRAPHS) for a in node.attribute)):
            remaining.append(node)
            continue
        if node.op_type == "Identity":
            results = [constants[inputs[0]]]
        elif node.op_type == "Constant" and node.attribute[0].name == "value":
            results = [numpy_helper.to_array(node.attribute[0].t)]
        else:
            signature = [helper.make_tensor_value_info(name, helper.np_dtype_to_tensor_dtype(constants[name].dtype),
                                                       constants[name].shape) for name in inputs]
            graph = helper.make_graph([node], "fold", signature,
                                      [helper.make_tensor_value_info(o, 0, None) for o in node.output if o])
            try:
                evaluator = ReferenceEvaluator(helper.make_model(graph, opset_imports=opset_imports))
                results = [np.asarray(r) for r in evaluator.run(None, {name: constants[name] for name in inputs})]
            except Exception:  # an op the reference evaluator lacks: left for the converter to name
                remaining.append(node)
                continue
        results = [np.asarray(r) for r in results]
        if keep is not None and keep(node, results):
            remaining.append(node)
            continue
        for name, value in zip([o for o in node.output if o], results):
            constants[name] = value
    return remaining


_SAME_SHAPE_OPS = ("Relu", "Identity", "Cast", "BatchNormalization", "Sigmoid", "Tanh", "Dropout", "LeakyRelu",
                   "Softmax", "LogSoftmax", "Erf", "Gelu", "Neg", "Exp", "Sqrt", "Abs", "Clip", "Elu", "Selu",
                   "HardSigmoid", "HardSwish", "Softplus", "LayerNormalization", "InstanceNormalization", "LRN")
# ops whose output's first axis (the batch) is their first input's: convolutions and pools (N, C, ...)
_SAME_BATCH_OPS = ("Conv", "ConvTranspose", "MaxPool", "AveragePool", "LpPool", "GlobalAveragePool",
                   "GlobalMaxPool", "GlobalLpPool")
_ELEMENTWISE_BINARY_OPS = ("Add", "Sub", "Mul", "Div", "Pow", "PRelu")
_MAX_FOLLOWED = 200  # ops one size is followed back through (Python's recursion limit is 1,000 frames)
_INTEGER_TYPES = {2, 3, 4, 5, 6, 7, 12, 13}  # onnx.TensorProto UINT8 ... INT64, UINT32, UINT64
# integer arithmetic on sizes (ONNX's integer Div truncates, as int() of the quotient does)
_SIZE_ARITHMETIC = {"Mul": lambda a, b: a * b, "Add": lambda a, b: a + b, "Sub": lambda a, b: a - b,
                    "Div": lambda a, b: int(a / b) if b else None}


def shape_tracer(model, follow_equal_sizes: bool = False, unknown_elements: bool = False):
    """(elements, dim) for following shape arithmetic back to what it is made of. `dim(tensor, axis)`: the
    size of that axis, an int when known, else the (tensor, axis) pair it is provably equal to (through
    Transpose and _SAME_SHAPE_OPS when `follow_equal_sizes`, else that very pair). `elements(tensor)`: the
    elements of a small 1-D integer tensor (a shape), as ints and such pairs, traced through Shape, Cast,
    Squeeze/Unsqueeze, Identity, Gather, Slice and Concat of constants; None where one is neither, or with
    `unknown_elements`, None for each element of a part of known length that is neither (a batch times heads
    computed by a Mul), the others still traced."""
    (static, types), constants = shapes_and_types(model), constant_values(model)
    producers = {output: node for node in model.graph.node for output in node.output}

    def rank(tensor: str) -> int | None:
        shape = static.get(tensor)
        return len(shape) if shape is not None else constants[tensor].ndim if tensor in constants else None

    followed: dict = {}  # (tensor, axis) -> its dim, each followed once
    depth = [0]  # how many dim() calls are open: a chain longer than _MAX_FOLLOWED stops there, as unknown

    def dim(tensor: str, axis: int):
        shape = static.get(tensor)
        if shape and axis < len(shape) and shape[axis]:
            return shape[axis]
        node = producers.get(tensor) if follow_equal_sizes else None
        followable = node is not None and (node.output[0] == tensor or node.op_type == "Split")  # Split: any piece
        if not followable or depth[0] >= _MAX_FOLLOWED:
            return (tensor, axis)
        if (tensor, axis) not in followed:
            depth[0] += 1
            try:
                source = _same_size_source(node, axis)
                followed[tensor, axis] = (dim(*source) if isinstance(source, tuple) else
                                          (tensor, axis) if source is None else source)
            finally:
                depth[0] -= 1
        return followed[tensor, axis]

    def _same_size_source(node, axis: int):
        """The size of `node`'s first output's `axis` as one of its inputs' (tensor, axis) it provably equals, or
        an int; None where neither is known."""
        given, ranks = node_attributes(node), [rank(name) if name else None for name in node.input]
        if node.op_type == "Transpose":
            perm = given.get("perm") or (list(range(ranks[0]))[::-1] if ranks[0] is not None else None)
            return None if perm is None or axis >= len(perm) else (node.input[0], perm[axis])
        if node.op_type in _SAME_SHAPE_OPS or (node.op_type in _SAME_BATCH_OPS and axis == 0):
            return node.input[0], axis
        if node.op_type == "Flatten" and axis == 0 and given.get("axis", 1) == 1:
            return node.input[0], 0
        if node.op_type == "Gemm" and axis == 0 and not given.get("transA", 0):
            return node.input[0], 0
        if node.op_type == "Split" and ranks[0] is not None and axis != given.get("axis", 0) % ranks[0]:
            return node.input[0], axis  # every piece: cut along one axis only
        if node.op_type in ("Squeeze", "Unsqueeze") and ranks[0] is not None:
            given_as_input = len(node.input) > 1 and node.input[1] in constants  # opset 13 on: axes as an input
            listed = given.get("axes") if "axes" in given else (
                constants[node.input[1]].ravel().tolist() if given_as_input else None)
            if listed is None:
                return None
            if node.op_type == "Squeeze":
                kept = [i for i in range(ranks[0]) if i not in {a % ranks[0] for a in listed}]
                return (node.input[0], kept[axis]) if axis < len(kept) else None
            added = {a % (ranks[0] + len(listed)) for a in listed}
            return 1 if axis in added else (node.input[0], axis - sum(a < axis for a in added))
        if node.op_type == "Gather" and node.input[1] in constants and constants[node.input[1]].ndim == 0:
            along = given.get("axis", 0) % ranks[0] if ranks[0] else None  # one index: that axis is dropped
            return None if along is None else (node.input[0], axis if axis < along else axis + 1)
        if node.op_type == "MatMul" and None not in ranks[:2] and min(ranks[:2]) >= 2:
            a, b, out = ranks[0], ranks[1], max(ranks[:2])
            if axis == out - 2:
                return node.input[0], a - 2
            if axis == out - 1:
                return node.input[1], b - 1
            if b == 2 and axis < a - 2:  # x @ W: the batch axes are x's
                return node.input[0], axis
            if a == b and dim(node.input[0], axis) == dim(node.input[1], axis):  # equal batch axes broadcast to it
                return node.input[0], axis
            return None
        if node.op_type in _ELEMENTWISE_BINARY_OPS and len(node.input) == 2:
            for kept, other in ((0, 1), (1, 0)):  # the one operand of run-time shape, against a constant
                if node.input[other] in constants and ranks[kept] is not None:
                    fixed = constants[node.input[other]].shape
                    offset = ranks[kept] - len(fixed)
                    if offset >= 0 and axis < ranks[kept] and (axis < offset or fixed[axis - offset] == 1):
                        return node.input[kept], axis
            return None
        if node.op_type == "Reshape" and not given.get("allowzero", 0):
            target = elements(node.input[1])
            element = target[axis] if target is not None and axis < len(target) else None
            if element == 0:  # ONNX Reshape copies the input's size
                return node.input[0], axis
            if isinstance(element, tuple) or (isinstance(element, int) and element > 0):
                return element  # the size of another axis, read with Shape, or a constant
        return None

    def elements(tensor: str):
        found = traced(tensor)
        if found is None and unknown_elements:
            shape = static.get(tensor)
            if shape == [] or (shape is not None and len(shape) == 1 and isinstance(shape[0], int) and shape[0] > 0):
                return [None] * (shape[0] if shape else 1)
        return found

    def traced(tensor: str):
        if tensor in constants:
            array = constants[tensor]
            return [int(v) for v in array.ravel()] if array.ndim <= 1 else None
        node = producers.get(tensor)
        if node is None:
            return None
        given = node_attributes(node)
        if node.op_type == "Shape" and static.get(node.input[0]) is not None:
            dims = [dim(node.input[0], axis) for axis in range(len(static[node.input[0]]))]
            return dims[given.get("start", 0): given.get("end", len(dims))]
        if node.op_type in ("Cast", "Squeeze", "Unsqueeze", "Identity"):
            return elements(node.input[0])
        if node.op_type == "Gather" and node.input[1] in constants and not given.get("axis", 0):
            data = elements(node.input[0])
            indices = constants[node.input[1]].ravel()
            if data is None or any(not -len(data) <= int(i) < len(data) for i in indices):
                return None
            return [data[int(i)] for i in indices]
        if node.op_type == "Slice" and len(node.input) >= 3 and all(n in constants for n in node.input[1:] if n):
            parameters = [constants[n].ravel() if n else None for n in list(node.input[1:]) + [""] * (5 - len(node.input))]
            if len(parameters[0]) != 1 or (parameters[2] is not None and int(parameters[2][0]) not in (0, -1)):
                return None
            data = elements(node.input[0])
            step = int(parameters[3][0]) if parameters[3] is not None else 1
            return None if data is None else data[slice(int(parameters[0][0]), int(parameters[1][0]), step)]
        if node.op_type == "Concat":
            parts = [elements(name) for name in node.input]
            return None if any(p is None for p in parts) else [e for p in parts for e in p]
        # sizes known here (h * w, C // heads); integers only: a float size, int(h * 0.5), is not computed here
        if node.op_type in _SIZE_ARITHMETIC and len(node.input) == 2 and types.get(node.output[0]) in _INTEGER_TYPES:
            parts = [elements(name) for name in node.input]
            if all(p is not None and len(p) == 1 and isinstance(p[0], int) for p in parts):
                found = _SIZE_ARITHMETIC[node.op_type](parts[0][0], parts[1][0])
                return None if found is None else [found]
        return None

    return elements, dim


# ---- Resize as per-axis gathers and matrix products ------------------------------------------------------------
@dataclass(frozen=True)
class AxisResize:
    """How one axis of a Resize maps n input positions to m output ones: `indices` (m,) where every output
    copies one input (nearest), else y = x . `matrix` (n, m) + `offset` (m,) along the axis (linear, cubic,
    antialias; the offset is tf_crop_and_resize's extrapolation_value outside the region)."""

    axis: int
    indices: np.ndarray | None = None
    matrix: np.ndarray | None = None
    offset: np.ndarray | None = None


def _resize_11_attributes(node, opset: int) -> dict | None:
    """The attributes of the Resize (opset 11 on) that computes what `node` (Resize or Upsample) computes; None
    where it has none. Upsample and Resize-10 sample asymmetrically, nearest by floor."""
    attributes = node_attributes(node)
    if node.op_type == "Upsample" or (node.op_type == "Resize" and opset < 11):
        mode = text(attributes.get("mode", "nearest"))
        return {"mode": mode, "coordinate_transformation_mode": "asymmetric", "nearest_mode": "floor"} \
            if mode in ("nearest", "linear") else None
    return {name: value for name, value in attributes.items() if name != "axes"}


def resize_axes(node, input_shape: list, constants: dict, opset: int) -> list[AxisResize] | None:
    """A Resize or Upsample node as one AxisResize per axis it changes, computed by ONNX's reference Resize
    on basis vectors: every mode is separable (nearest, linear and cubic are products of one-axis
    interpolations, antialias and exclude_outside act per axis, and an extrapolated point stays the
    extrapolation value through the other axes, whose weights sum to 1). None where that cannot be known
    when converting: scales, sizes or roi not constants, a resized axis of unknown size, or sizes with a
    keep_aspect_ratio_policy other than stretch (its scale is shared between axes)."""
    from onnx import helper
    from onnx.reference import ReferenceEvaluator

    attributes = _resize_11_attributes(node, opset)
    if attributes is None:
        return None
    rank = len(input_shape)
    given = node_attributes(node)
    if node.op_type == "Upsample" and "scales" in given:
        scales, sizes, roi = np.asarray(given["scales"], np.float32), None, None
    else:
        scale_index = 1 if node.op_type == "Upsample" or opset < 11 else 2
        named = list(node.input) + [""] * 4
        if any(name and name not in constants for name in named[1:4]):
            return None
        scales = constants[named[scale_index]] if named[scale_index] else None
        sizes = constants[named[3]] if scale_index == 2 and named[3] else None
        roi = constants[named[1]] if scale_index == 2 and named[1] else None
        scales = None if scales is not None and scales.size == 0 else scales
        roi = None if roi is not None and roi.size == 0 else roi
    if (scales is None) == (sizes is None) or sizes is not None and \
            text(attributes.get("keep_aspect_ratio_policy", "stretch")) != "stretch":
        return None
    axes = [int(a) % rank for a in given.get("axes", range(rank))] if node.op_type == "Resize" else list(range(rank))
    plans = []
    for index, axis in enumerate(axes):
        n = input_shape[axis]
        scale = float(np.ravel(scales)[index]) if scales is not None else None
        size = int(np.ravel(sizes)[index]) if sizes is not None else None
        if not isinstance(n, int) or n < 1:
            keeps = scale == 1.0 and text(attributes.get("coordinate_transformation_mode", "half_pixel")) not in (
                "tf_crop_and_resize", "tf_half_pixel_for_nn")
            if keeps:  # an axis of unknown size (the batch) the other modes map onto itself at scale 1
                continue
            return None
        # the resized axis second, the basis vectors and a zero row along the first
        inputs = {"X": np.vstack([np.eye(n), np.zeros((1, n))]).astype(np.float32)}
        names = ["X", "", "", ""]
        if roi is not None:
            span = np.ravel(roi)
            inputs["roi"] = np.array([0, span[index], 1, span[len(axes) + index]], np.float32)
            names[1] = "roi"
        if scale is not None:
            inputs["scales"], names[2] = np.array([1.0, scale], np.float32), "scales"
        else:
            inputs["sizes"], names[3] = np.array([n + 1, size], np.int64), "sizes"
        resize = helper.make_node("Resize", names, ["Y"], **attributes)
        try:
            values = ReferenceEvaluator(resize).run(None, inputs)[0].astype(np.float64)
        except Exception:  # an attribute value the reference does not know
            return None
        offset, matrix = values[n], values[:n] - values[n]
        picks = matrix.argmax(axis=0)
        if not offset.any() and np.array_equal(matrix, np.eye(n)[:, picks]):
            if not np.array_equal(picks, np.arange(n)):  # an axis whose positions all stay: nothing to do
                plans.append(AxisResize(axis, indices=picks.astype(np.int64)))
        else:
            plans.append(AxisResize(axis, matrix=matrix, offset=offset if offset.any() else None))
    return plans

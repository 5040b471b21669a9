"""Ops onnx2torch converts with tensors read back from the device at every call, made to compile and keep no
host sync.

- ConstantOfShape: onnx2torch builds `torch.Size(shape_tensor)` from its shape input at run time; under
  torch.compile that tensor is a FakeTensor and Dynamo fails ("torch.Size() takes an iterable of 'int'"), and on
  a GPU it reads the shape back to the host every step (torch's exporter writes a GRU's zero initial state that
  way, Shape -> Gather -> Unsqueeze -> Concat of the input). Where the shape is computed from one tensor's shape
  and constants alone (`_shape_terms`), `OnnxConstantOfShapeOf` takes that tensor and calls torch.full with sizes
  read from its `.shape`; the Shape nodes it no longer needs are dropped from the FX graph.
- Gather of one constant index and an opset-13+ Squeeze of constant axes: onnx2torch takes them as run-time
  tensors, which torch turns into Python ints by reading them back from the device at every call (a host sync
  per step on a GPU, which a CUDA graph cannot hold): `OnnxSelect` (torch.select) and onnx2torch's own
  static-axes Squeeze."""

from __future__ import annotations

from rosetta.convert.onnx.to_torch.nodes import constant
from rosetta.convert.onnx.to_torch.registry import add_converter


def _shape_terms(graph, name: str):
    """The value `name` as sizes of one tensor's shape, where the graph computes it from a Shape and constants
    only: (that tensor's name, or None for a constant; terms; whether it is a scalar). A term is an int, ("dim",
    i): the source's size i, or ("dims", start, end): its sizes start:end. None where it is computed otherwise."""
    known = constant(graph, name)
    if known is not None:
        return None, [int(value) for value in known.reshape(-1).tolist()], known.dim() == 0
    try:
        node, _ = graph.value_as_node_output(name)
    except KeyError:
        return None
    op, inputs, attributes = node.operation_type, node.input_values, node.attributes
    if op == "Shape":
        return inputs[0], [("dims", attributes.get("start", 0), attributes.get("end"))], False
    found = [_shape_terms(graph, value) for value in inputs if value]
    sources = {source for source, _, _ in filter(None, found)} - {None}
    if None in found or len(sources) > 1:
        return None
    source, terms, scalar = (sources.pop() if sources else None), found[0][1], found[0][2]
    if op == "Cast":
        return source, terms, scalar
    if op == "Concat" and not any(part[2] for part in found):
        return source, [term for part in found for term in part[1]], False
    axes = found[1][1] if len(found) > 1 else attributes.get("axes")  # an input from opset 13, else an attribute
    if op == "Unsqueeze" and scalar and axes == [0]:
        return source, terms, False
    if op == "Squeeze" and len(terms) == 1 and (isinstance(terms[0], int) or terms[0][0] == "dim"):
        return source, terms, True
    if op == "Gather" and attributes.get("axis", 0) == 0 and len(found) == 2 and found[1][0] is None:
        picked = [_pick(terms, index) for index in found[1][1]]
        return None if None in picked else (source, picked, found[1][2])
    return None


def _pick(terms: list, index: int):
    """Term `index` of a shape value (see _shape_terms), or None where its position is not known."""
    if all(not isinstance(term, tuple) or term[0] == "dim" for term in terms):
        return terms[index] if -len(terms) <= index < len(terms) else None
    if len(terms) == 1 and terms[0][2] is None:  # the source's sizes from `start` on: its rank is not known
        start = terms[0][1]
        if index >= 0 and (start >= 0 or start + index < 0):
            return "dim", start + index
        if index < 0 and start >= 0:  # the last sizes are the source's last
            return "dim", index
    return None


@add_converter("ConstantOfShape", 9, wraps=True)
def constant_of_shape_from_sizes(original):
    """ConstantOfShape of sizes of one tensor's shape (see the module docstring)."""
    import torch
    from onnx2torch.utils.common import OnnxMapping, OnnxToTorchModule, OperationConverterResult

    class OnnxConstantOfShapeOf(torch.nn.Module, OnnxToTorchModule):
        """ConstantOfShape whose shape is sizes of its input's shape (`terms`, see _shape_terms)."""

        def __init__(self, value, terms: list) -> None:
            super().__init__()
            self.register_buffer("value", value)  # the state_dict entry onnx2torch's module has
            self.fill, self.terms = value.reshape(-1)[0].item(), terms

        def forward(self, source=None):
            shape = () if source is None else source.shape
            sizes = []
            for term in self.terms:
                if isinstance(term, int):
                    sizes.append(term)
                elif term[0] == "dim":
                    sizes.append(shape[term[1]])
                else:
                    sizes.extend(shape[term[1]:term[2]])
            return torch.full(sizes, self.fill, dtype=self.value.dtype, device=self.value.device)

    def convert(node, graph):
        found = _shape_terms(graph, node.input_values[0])
        if found is None or found[2]:
            return original(node, graph)
        source, terms, _ = found
        value = node.attributes.get("value")
        value = value.to_torch() if value is not None else torch.tensor([0.0], dtype=torch.float32)
        return OperationConverterResult(torch_module=OnnxConstantOfShapeOf(value, terms),
                                        onnx_mapping=OnnxMapping(inputs=(source,) if source else (),
                                                                 outputs=node.output_values))

    return convert


@add_converter("Gather", 13, wraps=True)
@add_converter("Gather", 11, wraps=True)
@add_converter("Gather", 1, wraps=True)
def gather_of_a_constant_index(original):
    """A constant index or constant axes as ints (see the module docstring)."""
    import torch
    from onnx2torch.utils.common import OnnxMapping, OnnxToTorchModule, OperationConverterResult

    class OnnxSelect(torch.nn.Module, OnnxToTorchModule):
        """ONNX Gather of one constant index (numpy.take of a scalar: the axis goes): torch.select."""

        def __init__(self, axis: int, index: int) -> None:
            super().__init__()
            self.axis, self.index = axis, index

        def forward(self, data):
            return data.select(self.axis, self.index)

    def convert(node, graph):
        indices = constant(graph, node.input_values[1])
        if indices is None or indices.dim() != 0:
            return original(node, graph)
        return OperationConverterResult(torch_module=OnnxSelect(node.attributes.get("axis", 0), int(indices)),
                                        onnx_mapping=OnnxMapping(inputs=node.input_values[:1],
                                                                 outputs=node.output_values))

    return convert


@add_converter("Squeeze", 21, wraps=True)
@add_converter("Squeeze", 13, wraps=True)
def squeeze_of_constant_axes(original):
    """A constant index or constant axes as ints (see the module docstring)."""
    from onnx2torch.node_converters.squeeze import OnnxSqueezeStaticAxes
    from onnx2torch.utils.common import OnnxMapping, OperationConverterResult

    def convert(node, graph):
        given = len(node.input_values) > 1 and node.input_values[1]
        axes = constant(graph, node.input_values[1]) if given else None
        if axes is None:
            return original(node, graph)
        return OperationConverterResult(torch_module=OnnxSqueezeStaticAxes([int(axis) for axis in axes.reshape(-1)]),
                                        onnx_mapping=OnnxMapping(inputs=node.input_values[:1],
                                                                 outputs=node.output_values))

    return convert

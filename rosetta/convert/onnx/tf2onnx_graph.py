"""What tf2onnx writes for a Keras 3 model, made the plain ONNX that a torch export of the same layers is: each
rewrite computes the same function (tests run both graphs in ONNX Runtime) and removes a pattern that only
tf2onnx's reading of TensorFlow's graph put there, which the targets' converters then could not take.

1. `constant_reshape_targets` (dynamic_batch.py): the Reshape targets of tf2onnx's Einsum and Tensordot
   decompositions, which it computes from the input's shape (Shape -> Gather -> ReduceProd / Max -> Concat)
   only because the batch size is unknown, become constants (onnx2tf's layout guess added [N,32,16] to
   [N,16,32] on them, rosetta's Keras mapper has no ReduceProd or Max, MXNet's importer no run-time Concat).
2. `fused_layer_normalization`: Keras 3's LayerNormalization on TensorFlow is `moments` and arithmetic
   (x * inv + (beta - mean * inv), inv = gamma / sqrt(var + eps)), which tf2onnx writes as
   GlobalAveragePool / ReduceMean, Sub, Mul, Sqrt, Reciprocal, Neg, Mul, Add. Over the last axis it is ONNX's
   LayerNormalization (axis -1), which every target converts (and rosetta's Keras mapper makes a trainable
   LayerNormalization layer again).
3. `negation_in_constants`: Mul(Neg(x), c) with a constant c, as tf2onnx writes exact GELU's erfc(-x / sqrt 2),
   is Mul(x, -c): the same value, bit for bit. `erfc_as_one_plus_erf` then writes TensorFlow's GELU,
   0.5 x erfc(-x / sqrt 2) = 0.5 x (1 - erf(-x / sqrt 2)), as 0.5 x (1 + erf(x / sqrt 2)) (erf is odd), the
   form torch exports and rosetta's Keras mapper makes a GELU activation again.
4. `einsum_as_matmul`: MultiHeadAttention's two attention products are Einsums ("aecd,abcd->acbe",
   "acbe,aecd->abcd"). tf2onnx's own Einsum optimizer, turned off while rosetta converts a Keras model
   (`KEEP_EINSUM`), writes each as rank-5 Unsqueeze / Transpose / run-time Reshape chains that onnx2tf's layout
   guesses get wrong; an Einsum with batch axes, one contracted axis and one free axis on each side is a
   Transpose of each operand, a batched MatMul and a Transpose of the result, as torch exports attention.
   Other Einsums stay ONNX Einsum ops (a target without an Einsum converter refuses it by name).
5. `tensordot_as_matmul`: Dense on a sequence is `tf.tensordot`: Reshape(x, [-1, K]) -> MatMul(W) ->
   Reshape([-1, ..., M]); MatMul broadcasts over the leading axes itself, so it is MatMul(x, W), which
   rosetta's Keras mapper makes a Dense layer again."""

from __future__ import annotations

import numpy as np

from rosetta.convert.onnx.dynamic_batch import constant_reshape_targets

# tf2onnx's optimizers a Keras conversion runs without (see 4. above)
KEEP_EINSUM = ("einsum_optimizer",)


def plain_onnx(model):
    """All the rewrites, in the order they enable each other (constant shapes first: shape inference, which the
    others read ranks and sizes from, cannot follow the run-time ones)."""
    model = constant_reshape_targets(model)
    model = einsum_as_matmul(tensordot_as_matmul(model))
    return erfc_as_one_plus_erf(negation_in_constants(fused_layer_normalization(model)))


def erfc_as_one_plus_erf(model):
    """Sub(1, Erf(Mul(x, k))) with a negative constant k, as Add(Erf(Mul(x, -k)), 1) (3. above)."""
    from onnx import helper, numpy_helper

    graph = _Graph(model)
    replaced = {}
    for node in model.graph.node:
        one = graph.constants.get(node.input[0]) if node.op_type == "Sub" else None
        erf = graph.made_by(node.input[1], "Erf") if one is not None and one.size == 1 and one.ravel()[0] == 1 else None
        scaled = erf and graph.made_by(erf.input[0], "Mul")
        if not scaled:
            continue
        x, factor = graph.split_constant(scaled)
        if factor is None or factor.size != 1 or not factor.ravel()[0] < 0:
            continue
        names = {part: f"{node.output[0]}_{part}" for part in ("factor", "scaled", "erf")}
        model.graph.initializer.append(numpy_helper.from_array(-factor, names["factor"]))
        replaced[id(node)] = [helper.make_node("Mul", [x, names["factor"]], [names["scaled"]]),
                              helper.make_node("Erf", [names["scaled"]], [names["erf"]]),
                              helper.make_node("Add", [names["erf"], node.input[0]], [node.output[0]])]
    return _with_nodes_replaced(model, replaced)


def einsum_as_matmul(model):
    """Two-operand Einsums with batch axes, one contracted axis and one free axis per operand, as Transpose,
    MatMul, Transpose (4. above)."""
    from onnx import helper

    nodes = []
    for node in model.graph.node:
        equation = next((helper.get_attribute_value(a) for a in node.attribute if a.name == "equation"), b"")
        lowered = _einsum_plan(equation.decode().replace(" ", "")) if node.op_type == "Einsum" else None
        if lowered is None or len(node.input) != 2:
            nodes.append(node)
            continue
        first_order, second_order, result_order = lowered
        operands = []
        for index, (name, order) in enumerate(zip(node.input, (first_order, second_order))):
            if order != sorted(order):
                operands.append(f"{node.output[0]}_operand{index}")
                nodes.append(helper.make_node("Transpose", [name], [operands[-1]], perm=order,
                                              name=f"{node.name}_transpose{index}"))
            else:
                operands.append(name)
        product = node.output[0] if result_order == sorted(result_order) else f"{node.output[0]}_product"
        nodes.append(helper.make_node("MatMul", operands, [product], name=f"{node.name}_matmul"))
        if product != node.output[0]:
            nodes.append(helper.make_node("Transpose", [product], [node.output[0]], perm=result_order,
                                          name=f"{node.name}_transpose_result"))
    del model.graph.node[:]
    model.graph.node.extend(nodes)
    return model


def _einsum_plan(equation: str):
    """(first operand's perm, second's, the MatMul result's perm to the output) for an equation like
    "aecd,abcd->acbe": batch letters in both operands and the output, one letter in both operands only (the
    contracted axis), one letter in each operand and the output only; None for any other equation."""
    if "->" not in equation or "." in equation:
        return None
    inputs, output = equation.split("->")
    terms = inputs.split(",")
    if len(terms) != 2 or any(len(set(term)) != len(term) for term in (*terms, output)):
        return None
    first, second = terms
    batch = [letter for letter in output if letter in first and letter in second]
    contracted = [letter for letter in first if letter in second and letter not in output]
    free_first = [letter for letter in first if letter not in second]
    free_second = [letter for letter in second if letter not in first]
    if len(contracted) != 1 or len(free_first) != 1 or len(free_second) != 1 or \
            sorted(output) != sorted(batch + free_first + free_second):
        return None
    product = batch + free_first + free_second
    return ([first.index(letter) for letter in batch + free_first + contracted],
            [second.index(letter) for letter in batch + contracted + free_second],
            [product.index(letter) for letter in output])


def tensordot_as_matmul(model):
    """Reshape(x, [-1, K]) -> MatMul(W) -> Reshape to x's leading axes and M, as MatMul(x, W) (5. above)."""
    from onnx import helper

    from rosetta.frameworks.onnx_graph import static_shapes

    graph, shapes = _Graph(model), static_shapes(model)
    replaced = {}
    for node in model.graph.node:
        flatten = graph.made_by(node.input[0], "Reshape") if node.op_type == "MatMul" else None
        weight = graph.constants.get(node.input[1]) if flatten is not None else None
        readers = graph.consumers(node.output[0]) if weight is not None else []
        unflatten = readers[0] if len(readers) == 1 and readers[0].op_type == "Reshape" else None
        x_shape = shapes.get(flatten.input[0]) if unflatten is not None else None
        if x_shape is None or weight.ndim != 2 or len(x_shape) < 3 or None in x_shape[1:]:
            continue
        flat_target, target = (graph.constants.get(n.input[1]) for n in (flatten, unflatten))
        if flat_target is None or target is None or flat_target.tolist() != [-1, x_shape[-1]] or \
                target.tolist() != [-1, *x_shape[1:-1], weight.shape[1]]:
            continue
        replaced[id(unflatten)] = helper.make_node("MatMul", [flatten.input[0], node.input[1]], [unflatten.output[0]],
                                                   name=f"{node.name}_on_sequence")
    return _with_nodes_replaced(model, {key: [node] for key, node in replaced.items()})


def fused_layer_normalization(model):
    """Keras 3's LayerNormalization over the last axis, as tf2onnx writes it, as one ONNX LayerNormalization."""
    from onnx import helper, numpy_helper

    from rosetta.frameworks.onnx_graph import default_opset, static_shapes

    if default_opset(model) < 17:  # LayerNormalization is opset 17
        return model
    graph = _Graph(model)
    ranks = {name: len(shape) for name, shape in static_shapes(model).items()}
    fused = {}  # the Add that computes a normalisation's output -> the LayerNormalization node in its place
    for node in model.graph.node:
        if node.op_type == "Reciprocal" and (found := _layer_norm_at(graph, node, ranks)) is not None:
            x, output_add, gamma, beta, epsilon = found
            width = ranks.get(x) and static_shapes(model)[x][-1]
            scale, bias = (_as_vector(graph.constants.get(name), width, default)
                           for name, default in ((gamma, 1.0), (beta, 0.0)))
            if scale is None or bias is None:
                continue
            names = [f"{output_add.output[0]}_{part}" for part in ("scale", "bias")]
            model.graph.initializer.extend(numpy_helper.from_array(value, name)
                                           for value, name in zip((scale, bias), names))
            fused[id(output_add)] = helper.make_node("LayerNormalization", [x, *names], [output_add.output[0]],
                                                     name=f"{output_add.name}_layer_normalization", axis=-1,
                                                     epsilon=epsilon)
    return _with_nodes_replaced(model, {key: [node] for key, node in fused.items()})


def _layer_norm_at(graph: "_Graph", reciprocal, ranks: dict):
    """(x, the Add whose output is the normalised x, gamma's name or None, beta's name or None, epsilon) for
    the pattern `inv = Reciprocal(Sqrt(Add(mean((x - mean(x))^2), eps))) [* gamma]; y = x * inv + (-mean(x) *
    inv [+ beta])`, every mean over the last axis; None where the graph around `reciprocal` is anything else."""
    sqrt = graph.made_by(reciprocal.input[0], "Sqrt")
    add_epsilon = sqrt and graph.made_by(sqrt.input[0], "Add")
    if add_epsilon is None:
        return None
    variance, epsilon = graph.split_constant(add_epsilon)
    square = graph.made_by(graph.last_axis_mean(variance, ranks), "Mul")
    difference = square and square.input[0] == square.input[1] and graph.made_by(square.input[0], "Sub")
    if not difference or epsilon is None or epsilon.size != 1:
        return None
    x, mean = difference.input
    if graph.last_axis_mean(mean, ranks) != x:
        return None
    inv, gamma = reciprocal.output[0], None
    scaled = [n for n in graph.consumers(inv) if n.op_type == "Mul" and graph.split_constant(n, inv)[1] is not None]
    if len(scaled) == 1 and len(graph.consumers(inv)) == 1:
        inv, gamma = scaled[0].output[0], graph.other_input(scaled[0], inv)
    users = graph.consumers(inv)
    times_x = next((n for n in users if n.op_type == "Mul" and graph.other_input(n, inv) == x), None)
    times_mean = next((n for n in users if n.op_type == "Mul" and (negated := graph.made_by(graph.other_input(n, inv), "Neg"))
                       and negated.input[0] == mean), None)
    if times_x is None or times_mean is None:
        return None
    shift, beta = times_mean.output[0], None
    plus_beta = [n for n in graph.consumers(shift) if n.op_type == "Add" and graph.split_constant(n, shift)[1] is not None]
    if len(plus_beta) == 1:
        shift, beta = plus_beta[0].output[0], graph.other_input(plus_beta[0], shift)
    output_add = next((n for n in graph.consumers(shift) if n.op_type == "Add" and graph.other_input(n, shift) == times_x.output[0]), None)
    if output_add is None:
        return None
    return x, output_add, gamma, beta, float(epsilon.ravel()[0])


def _as_vector(value, width, default: float):
    """gamma or beta (broadcast to [1, ..., C]) as the [C] vector LayerNormalization takes; `default`'s where
    the layer has none (center or scale off); None where it is not one value per channel of the last axis."""
    if not width:
        return None
    if value is None:
        return np.full(width, default, np.float32)
    if value.size != width or any(d != 1 for d in value.shape[:-1]):
        return None
    return value.reshape(width).astype(np.float32)


def negation_in_constants(model):
    """Mul(Neg(x), c) or Mul(c, Neg(x)) with c a constant, as Mul(x, -c)."""
    from onnx import numpy_helper

    from rosetta.convert.onnx.rewrites import remove_dead_nodes

    graph = _Graph(model)
    for node in model.graph.node:
        if node.op_type != "Mul":
            continue
        for position, name in enumerate(node.input):
            negation, other = graph.made_by(name, "Neg"), node.input[1 - position]
            if negation is not None and other in graph.constants:
                negated = f"{other}_negated"
                if negated not in graph.constants:
                    model.graph.initializer.append(numpy_helper.from_array(-graph.constants[other], negated))
                    graph.constants[negated] = -graph.constants[other]
                node.input[position], node.input[1 - position] = negation.input[0], negated
                break
    return remove_dead_nodes(model)


def _with_nodes_replaced(model, replaced: dict):
    """The model with each node whose id() is a key of `replaced` replaced by those nodes, in its place, and
    what no longer feeds anything removed."""
    from rosetta.convert.onnx.rewrites import remove_dead_nodes

    if not replaced:
        return model
    nodes = [new for node in model.graph.node for new in replaced.get(id(node), [node])]
    del model.graph.node[:]
    model.graph.node.extend(nodes)
    return remove_dead_nodes(model)


class _Graph:
    """Who makes and who reads each tensor of a graph, and its constants: what the pattern matchers walk."""

    def __init__(self, model) -> None:
        from rosetta.frameworks.onnx_graph import constant_values

        self.constants = constant_values(model)
        self.producers = {output: node for node in model.graph.node for output in node.output}
        self.readers: dict[str, list] = {}
        for node in model.graph.node:
            for name in node.input:
                self.readers.setdefault(name, []).append(node)

    def made_by(self, name, op_type: str):
        node = self.producers.get(name) if name else None
        return node if node is not None and node.op_type == op_type else None

    def consumers(self, name: str) -> list:
        return self.readers.get(name, [])

    @staticmethod
    def other_input(node, name: str) -> str:
        return node.input[1] if node.input[0] == name else node.input[0]

    def split_constant(self, node, computed: str | None = None):
        """(the computed operand, the constant operand's value or None) of a binary node."""
        for position in (0, 1):
            constant = self.constants.get(node.input[position])
            if constant is not None and (computed is None or node.input[1 - position] == computed):
                return node.input[1 - position], constant
        return (computed or node.input[0]), None

    def last_axis_mean(self, name: str, ranks: dict) -> str | None:
        """x where `name` is the mean of x over its last axis, kept (GlobalAveragePool of a rank-3 x, or
        ReduceMean with that one axis); None otherwise."""
        from onnx import helper

        node = self.producers.get(name)
        if node is None or node.input[0] not in ranks:
            return None
        rank = ranks[node.input[0]]
        if node.op_type == "GlobalAveragePool":
            return node.input[0] if rank == 3 else None
        if node.op_type != "ReduceMean":
            return None
        attributes = {a.name: helper.get_attribute_value(a) for a in node.attribute}
        axes = attributes.get("axes")
        if axes is None and len(node.input) > 1 and node.input[1] in self.constants:
            axes = self.constants[node.input[1]].tolist()
        if attributes.get("keepdims", 1) != 1 or axes is None or [a % rank for a in axes] != [rank - 1]:
            return None
        return node.input[0]

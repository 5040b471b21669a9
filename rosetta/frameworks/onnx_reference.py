"""The float64 reference of an ONNX model, checked node by node before it is believed.

ONNX Runtime has no float64 Conv, so an ONNX model's float64 run is ONNX's reference evaluator on the graph made
float64 (onnx_graph.float64_model). The evaluator is a readable implementation of the spec, not a numerically
trusted one: some of its ops compute another function (docs/onnx-evaluator.md lists those found). A float64
run that computes another function inflates the noise floor |float32 - float64| and lets wrong models PASS.

So every node is checked where it stands: the evaluator runs it in float64 on ONNX Runtime's float32 values of
its inputs (made float64, which is exact), and the result is compared with ONNX Runtime's float32 value of its
output, in float32 ulps at the output's scale. Given the same inputs, the two can differ only by the float32
kernel's own rounding: a few ulps (LOCAL_ULPS_BOUND says how many were measured). A node that differs by more is
run by another float64 implementation that stands in for the evaluator's: ONNX Runtime's double kernel of that
op, where it has one. If the stand-in agrees with the float32 value, it computes the node from then on; if it
agrees with the evaluator instead (two float64 implementations against one float32 kernel), the evaluator is
kept; if nothing agrees, the references *part* at that node and the float64 run is not used (the caller falls
back to the float32-only rule and says why). Ops the evaluator is known to get wrong are replaced outright by
rosetta's own implementations from the spec (SPEC_OPS), each tested against the spec.

The run happens node by node in rosetta's own loop, so it can be bounded (`deadline`) and is meant to run in a
worker process (`float64_job`), where --timeout and Ctrl-C reach it.
"""

from __future__ import annotations

import math
import time

import numpy as np

from rosetta.errors import RosettaError, one_line
from rosetta.frameworks.reference_check import (FLOAT64_AGREEMENT, LOCAL_ULPS_BOUND, NodeCheck, ReferenceCheck,
                                                local_ulps, ulps_text)


# ---- rosetta's float64 implementations of the ops the evaluator gets wrong ----------------------------------
def spec_ops() -> list:
    """OpRun classes that replace the evaluator's (ReferenceEvaluator(new_ops=...)), each written from the spec
    (https://onnx.ai/onnx/operators/) and tested against ONNX Runtime and numpy in tests/frameworks."""
    from onnx.reference.op_run import OpRun
    from onnx.reference.ops.op_batch_normalization import _batchnorm_test_mode, _batchnorm_training_mode
    from onnx.reference.ops.op_conv import Conv as EvaluatorConv
    from onnx.reference.ops.op_max_pool import MaxPool as EvaluatorMaxPool

    class LRN(OpRun):
        """The evaluator sums squares over the window of the *batch* index, not the channel's (onnx 1.23)."""

        op_domain = ""

        def _run(self, x, alpha=None, beta=None, bias=None, size=None):
            square = np.square(x)
            channels = x.shape[1]
            before, after = (size - 1) // 2, math.ceil((size - 1) / 2)
            square_sum = np.zeros_like(x)
            for c in range(channels):
                square_sum[:, c] = square[:, max(0, c - before): min(channels, c + after + 1)].sum(axis=1)
            return ((x / (bias + (alpha / size) * square_sum) ** beta).astype(x.dtype),)

    class BatchNormalization(OpRun):
        """Before opset 14 the number of outputs says the mode (one: inference); the evaluator's opset-9 class
        computes batch statistics whenever `momentum` is set, which every exporter writes (onnx 1.23)."""

        op_domain = ""

        def _run(self, x, scale, bias, mean, var, epsilon=None, momentum=None, training_mode=None, is_test=None,
                 spatial=None):  # noqa: ARG002 - spatial is 1 in every model an exporter writes
            epsilon = 1e-5 if epsilon is None else epsilon
            outputs = len(self.onnx_node.output)
            training = bool(training_mode) if training_mode is not None else (outputs > 1 and not is_test)
            if not training:
                return (_batchnorm_test_mode(x, scale, bias, mean, var, epsilon=epsilon),)
            results = _batchnorm_training_mode(x, scale, bias, mean, var, momentum=0.9 if momentum is None
                                               else momentum, epsilon=epsilon)
            if training_mode is not None:  # opset 14+: Y, running_mean, running_var
                return (results[0], results[3], results[4])[:outputs]
            return (results[0], results[3], results[4], results[1], results[2])[:outputs]  # opset 7/9 order

    class MaxPool(EvaluatorMaxPool):
        """The evaluator's 2-D max pooling loops in Python over every output element (half of ResNet-50's float64
        run); this takes the maximum over the kernel's offsets as strided views. Padding, strides and dilations
        as the spec's; auto_pad SAME_*, ceil_mode and the Indices output are left to the evaluator."""

        op_domain = ""

        def _run(self, x, auto_pad=None, ceil_mode=None, dilations=None, kernel_shape=None, pads=None,
                 storage_order=None, strides=None):
            if len(self.onnx_node.output) > 1 or ceil_mode or auto_pad not in (None, "NOTSET", "VALID"):
                return super()._run(x, auto_pad=auto_pad, ceil_mode=ceil_mode, dilations=dilations,
                                    kernel_shape=kernel_shape, pads=pads, storage_order=storage_order, strides=strides)
            return (strided_max_pool(x, kernel_shape, strides, pads if auto_pad != "VALID" else None, dilations),)

    class LpNormalization(OpRun):
        """The evaluator takes x**p, not |x|**p: an L1 norm of negative values is wrong (onnx 1.23)."""

        op_domain = ""

        def _run(self, x, axis=None, p=None):
            axis, p = _attribute(self, "axis", -1), _attribute(self, "p", 2)
            norm = np.power(np.power(np.abs(x), p).sum(axis=axis, keepdims=True), 1.0 / p)
            with np.errstate(invalid="ignore", divide="ignore"):
                return (np.where(norm == 0, 0, x / norm).astype(x.dtype),)

    def over_axis(name: str, function):
        """Softmax, LogSoftmax and Hardmax before opset 13 see the input as 2-D, (product of the axes before
        `axis` (default 1), product of the rest), and work over all of the second; the evaluator works over `axis`
        alone at every opset (onnx 1.23). From opset 13 on: over `axis` (default -1)."""

        def _run(self, x, axis=None):
            opset = self.run_params["opsets"].get("", 13)
            if opset >= 13 or not x.ndim:
                return (function(x, _attribute(self, "axis", -1)).astype(x.dtype),)
            axis = _attribute(self, "axis", 1) % x.ndim
            flat = x.reshape(int(np.prod(x.shape[:axis], dtype=np.int64)), -1)
            return (function(flat, 1).reshape(x.shape).astype(x.dtype),)

        return type(name, (OpRun,), {"op_domain": "", "_run": _run, "__doc__": over_axis.__doc__})

    class Conv(EvaluatorConv):
        """The evaluator's convolution is an im2col in numpy (half of ResNet-50's float64 run with MaxPool's
        loops); PyTorch's float64 convolution computes the same (checked node by node like every op here).
        auto_pad SAME_*, and a machine without torch, are left to the evaluator."""

        op_domain = ""

        def _run(self, x, w, b=None, auto_pad=None, dilations=None, group=None, kernel_shape=None, pads=None,
                 strides=None):
            if auto_pad not in (None, "NOTSET", "VALID") or not 1 <= x.ndim - 2 <= 3:
                return super()._run(x, w, b, auto_pad=auto_pad, dilations=dilations, group=group,
                                    kernel_shape=kernel_shape, pads=pads, strides=strides)
            return (torch_conv(x, w, b, dilations, group or 1, pads if auto_pad != "VALID" else None, strides),)

    return [LRN, BatchNormalization, MaxPool, Conv, LpNormalization, over_axis("Softmax", _softmax),
            over_axis("LogSoftmax", _log_softmax), over_axis("Hardmax", _hardmax)]


def _attribute(op, name: str, default):
    """A node attribute's value as the node writes it, or the spec's default (not the evaluator's)."""
    from onnx import helper

    return next((helper.get_attribute_value(a) for a in op.onnx_node.attribute if a.name == name), default)


def _softmax(x: np.ndarray, axis: int) -> np.ndarray:
    exp = np.exp(x - x.max(axis=axis, keepdims=True))
    return exp / exp.sum(axis=axis, keepdims=True)


def _log_softmax(x: np.ndarray, axis: int) -> np.ndarray:
    shifted = x - x.max(axis=axis, keepdims=True)
    return shifted - np.log(np.exp(shifted).sum(axis=axis, keepdims=True))


def _hardmax(x: np.ndarray, axis: int) -> np.ndarray:
    """1 at the first largest value along `axis`, 0 elsewhere."""
    result = np.zeros_like(x)
    np.put_along_axis(result, np.expand_dims(np.argmax(x, axis=axis), axis), 1, axis=axis)
    return result


def torch_conv(x: np.ndarray, w: np.ndarray, b, dilations, group: int, pads, strides) -> np.ndarray:
    """ONNX's Conv by PyTorch in the inputs' dtype: explicit (begin..., end...) pads applied first."""
    import torch
    import torch.nn.functional as F

    spatial = x.ndim - 2
    pads = list(pads or [0] * (2 * spatial))
    writable = lambda a: torch.from_numpy(np.require(a, x.dtype, ["C", "W"]))  # noqa: E731 - initializers are read-only
    tensor = writable(x)
    # F.pad takes (last axis begin, end, the one before begin, end, ...)
    tensor = F.pad(tensor, [p for axis in reversed(range(spatial)) for p in (pads[axis], pads[axis + spatial])])
    convolve = (F.conv1d, F.conv2d, F.conv3d)[spatial - 1]
    with torch.no_grad():
        out = convolve(tensor, writable(w), None if b is None else writable(b),
                       stride=list(strides or [1] * spatial), dilation=list(dilations or [1] * spatial), groups=group)
    return out.numpy()


def strided_max_pool(x: np.ndarray, kernel: list, strides: list | None, pads: list | None,
                     dilations: list | None) -> np.ndarray:
    """Max pooling of an (N, C, D1, ...) array, padded with the lowest value, as the maximum of strided views."""
    import itertools

    spatial = x.ndim - 2
    strides, dilations = strides or [1] * spatial, dilations or [1] * spatial
    pads = pads or [0] * (2 * spatial)
    lowest = -np.inf if x.dtype.kind == "f" else np.iinfo(x.dtype).min
    padded = np.pad(x, [(0, 0), (0, 0)] + [(pads[i], pads[i + spatial]) for i in range(spatial)],
                    constant_values=lowest)
    sizes = [(padded.shape[2 + i] - dilations[i] * (kernel[i] - 1) - 1) // strides[i] + 1 for i in range(spatial)]
    result = None
    for offset in itertools.product(*(range(k) for k in kernel)):
        window = padded[(slice(None), slice(None)) + tuple(
            slice(o * d, o * d + (n - 1) * s + 1, s) for o, d, n, s in zip(offset, dilations, sizes, strides))]
        result = window.copy() if result is None else np.maximum(result, window, out=result)
    return result


# ---- the checked run --------------------------------------------------------------------------------------------
def float32_values(model, feeds: dict) -> dict[str, np.ndarray]:
    """ONNX Runtime's float32 value of every float tensor of the graph (optimiser off, as rosetta verifies)."""
    import onnxruntime as ort

    from rosetta.frameworks.onnx_graph import with_outputs

    options = ort.SessionOptions()
    options.graph_optimization_level = ort.GraphOptimizationLevel.ORT_DISABLE_ALL
    options.log_severity_level = 4  # its refusals come back as exceptions; its log would print them again
    marked = with_outputs(model)
    session = ort.InferenceSession(marked.SerializeToString(), options, providers=["CPUExecutionProvider"])
    names = [output.name for output in marked.graph.output]
    return dict(zip(names, session.run(names, feeds)))


class _Float64Node:
    """One node's float64 implementations: the evaluator's (or rosetta's spec op), and ONNX Runtime's double
    kernel built on demand as a one-node model."""

    def __init__(self, node, opsets: dict, ir_version: int) -> None:
        self.node, self.opsets, self.ir_version = node, opsets, ir_version
        self.onnxruntime = None

    def evaluator(self, inputs: list, context: dict) -> list:
        options = {"context": context} if self.node.need_context() else {}
        return list(self.node.run(*inputs, **options))

    def onnxruntime_double(self, inputs: list, output_dtypes: list) -> list | None:
        """ONNX Runtime's double kernel on `inputs` (outputs of `output_dtypes`, as the evaluator gave them), or
        None where it has none (or the node has a subgraph)."""
        import onnx
        import onnxruntime as ort
        from onnx import helper

        from rosetta.frameworks.onnx_graph import onnxruntime_ir_version

        proto = self.node.onnx_node
        if any(a.type in (onnx.AttributeProto.GRAPH, onnx.AttributeProto.GRAPHS) for a in proto.attribute):
            return None
        try:
            if self.onnxruntime is None:
                names = [f"i{n}" if name else "" for n, name in enumerate(proto.input)]
                node = helper.make_node(proto.op_type, names, [f"o{n}" for n in range(len(proto.output))],
                                        domain=proto.domain)
                node.attribute.extend(proto.attribute)
                graph = helper.make_graph(
                    [node], "stand_in",
                    [helper.make_tensor_value_info(name, helper.np_dtype_to_tensor_dtype(np.asarray(value).dtype), None)
                     for name, value in zip(names, inputs) if name],
                    [helper.make_tensor_value_info(f"o{n}", helper.np_dtype_to_tensor_dtype(np.dtype(dtype)), None)
                     for n, dtype in enumerate(output_dtypes)])
                model = helper.make_model(graph, opset_imports=[helper.make_opsetid(d, v) for d, v in self.opsets.items()],
                                          ir_version=min(self.ir_version, onnxruntime_ir_version()))
                options = ort.SessionOptions()
                options.log_severity_level = 4
                self.onnxruntime = ort.InferenceSession(model.SerializeToString(), options,
                                                        providers=["CPUExecutionProvider"])
            feeds = {f"i{n}": np.asarray(value) for n, value in enumerate(inputs) if proto.input[n]}
            return self.onnxruntime.run(None, feeds)
        except Exception:  # noqa: BLE001 - no double kernel (ORT's NOT_IMPLEMENTED) or another refusal
            self.onnxruntime = False
            return None


def checked_float64_run(model, feeds: dict[str, np.ndarray], output_names: list[str] | None = None,
                        deadline: float | None = None, replace: bool = True, every_node: list | None = None,
                        values32: dict | None = None) -> tuple[dict[str, np.ndarray], ReferenceCheck]:
    """The model's outputs in float64 (ONNX's reference evaluator, with spec_ops() and checked stand-ins) and the
    ReferenceCheck that says whether to believe them. `deadline`: time.monotonic() after which it stops;
    `replace`: False runs the evaluator's own ops (to measure them); `every_node`: gets every checked node's NodeCheck;
    `values32`: float32_values(model, feeds) where the caller has them (this run releases them as it goes)."""
    import onnx
    from onnx.reference import ReferenceEvaluator

    from rosetta.frameworks.onnx_graph import float64_model

    check = ReferenceCheck(implementation=f"ONNX reference evaluator (onnx {onnx.__version__}) in float64",
                           against=f"ONNX Runtime in float32 ({_onnxruntime_version()})")
    values32 = float32_values(model, feeds) if values32 is None else values32
    own = spec_ops() if replace else []
    evaluator = ReferenceEvaluator(float64_model(model), new_ops=own)
    replaced = {cls.__name__ for cls in own}
    opsets = {opset.domain: opset.version for opset in model.opset_import}
    exact = {"": None, **evaluator.rt_inits_,
             **{name: value.astype(np.float64) if value.dtype == np.float32 else value for name, value in feeds.items()}}
    results = dict(exact)  # the float64 run
    remaining = _consumers(evaluator)
    keep = set(output_names or evaluator.output_names)
    for rt_node in evaluator.rt_nodes_:
        if deadline is not None and time.monotonic() > deadline:
            raise RosettaError("the float64 reference run ran out of time; raise timeout=")
        node = _Float64Node(rt_node, opsets, model.ir_version)
        name = rt_node.onnx_node.name or rt_node.output[0]
        outputs = node.evaluator([results[i] for i in rt_node.input], results)
        checked = [(n, output) for n, output in enumerate(rt_node.output)
                   if output in values32 and values32[output].dtype.kind == "f"]
        local_inputs = [_local_input(i, values32, exact, results) for i in rt_node.input]
        # an omitted optional input ("": Resize's roi and scales) is None in both runs, not a value unread
        if checked and any(value is None for name, value in zip(rt_node.input, local_inputs) if name):
            check.unchecked += 1
        elif checked:
            local = node.evaluator(local_inputs, results)
            ulps = max(local_ulps(local[n], values32[output]) for n, output in checked)
            record = NodeCheck(name, rt_node.op_type, ulps, "rosetta" if rt_node.op_type in replaced else "evaluator")
            if every_node is not None:  # as the evaluator (or rosetta's op) computed it, before any stand-in
                every_node.append(NodeCheck(**vars(record)))
            if ulps > check.bound:
                record, outputs = _second_opinion(node, record, local, local_inputs, checked, values32, results,
                                                  outputs)
                if record.by == "parted" and check.parted is None:
                    check.parted = record
                elif record.by != "parted":
                    check.stand_ins.append(record)
            check.nodes += 1
            if record.by != "parted" and (check.worst is None or record.ulps > check.worst.ulps):
                check.worst = record
        for output, value in zip(rt_node.output, outputs):
            results[output] = value
        if rt_node.op_type == "Constant":  # the value the float32 run read too (float64_model widened it exactly)
            exact.update(zip(rt_node.output, outputs))
        _release(rt_node.input, remaining, results, values32, keep)
    missing = [name for name in keep if name not in results]
    if missing:
        raise RosettaError(f"the float64 run gives no value for {missing}")
    return {name: np.asarray(results[name]) for name in (output_names or evaluator.output_names)}, check


def _second_opinion(node: _Float64Node, record: NodeCheck, local: list, local_inputs: list, checked: list,
                    values32: dict, results: dict, outputs: list) -> tuple[NodeCheck, list]:
    """A node whose float64 and float32 values differ beyond rounding: ONNX Runtime's double kernel decides."""
    dtypes = [np.asarray(value).dtype for value in local]
    double = node.onnxruntime_double(local_inputs, dtypes)
    if double is None:
        record.by, record.note = "parted", "; ONNX Runtime has no double kernel of it to decide which is right"
        return record, outputs
    double_ulps = max(local_ulps(double[n], values32[output]) for n, output in checked)
    if double_ulps <= LOCAL_ULPS_BOUND:  # the evaluator was wrong: ORT's double kernel computes it from here
        stand_in = node.onnxruntime_double([results[i] for i in node.node.input], dtypes)
        return NodeCheck(record.node, record.op, double_ulps, "onnxruntime-double",
                         f"the evaluator differed by {ulps_text(record.ulps)} ulps"), list(stand_in)
    agree = max(float(np.max(np.abs(np.asarray(double[n], np.float64) - np.asarray(local[n], np.float64)), initial=0.0))
                / max(float(np.max(np.abs(np.asarray(local[n], np.float64)), initial=0.0)), 1e-300)
                for n, _ in checked)
    if agree <= FLOAT64_AGREEMENT:  # two float64 implementations agree: ONNX Runtime's float32 kernel is off
        record.note = f"ONNX Runtime's double kernel agrees with the evaluator ({agree:.2g}): its float32 kernel is off"
        return record, outputs
    record.by, record.note = "parted", f"; nor does ONNX Runtime's double kernel agree with either ({ulps_text(double_ulps)} ulps)"
    return record, outputs


def _local_input(name: str, values32: dict, exact: dict, results: dict):
    """A node input as the float32 run saw it, made float64: ORT's float32 value, a graph input or initializer
    (the same in both runs), or a non-float value; None for a float value only the float64 run has."""
    if name in values32:
        return values32[name].astype(np.float64)
    if name in exact:
        return exact[name]
    value = results[name]
    if isinstance(value, np.ndarray) and value.dtype.kind == "f":
        return None
    return value


def _consumers(evaluator) -> dict[str, int]:
    """How many nodes read each value; none is released in a graph whose subgraphs read outer values by name."""
    import onnx

    counts: dict[str, int] = {}
    for node in evaluator.rt_nodes_:
        if any(a.type in (onnx.AttributeProto.GRAPH, onnx.AttributeProto.GRAPHS) for a in node.onnx_node.attribute):
            return {}
        for name in node.input:
            counts[name] = counts.get(name, 0) + 1
    return counts


def _release(inputs, remaining: dict, results: dict, values32: dict, keep: set) -> None:
    """Drop values no later node reads (ResNet-50's activations in float64 and float32 would not all fit)."""
    for name in inputs if remaining else ():
        remaining[name] -= 1
        if remaining[name] == 0 and name and name not in keep:
            values32.pop(name, None)
            results.pop(name, None)


def _onnxruntime_version() -> str:
    import onnxruntime

    return f"onnxruntime {onnxruntime.__version__}"


ISOLATION = "onnx-reference"  # the worker family it runs in (rosetta.execution): --timeout and Ctrl-C reach it


def float64_outputs(path, feeds: dict[str, np.ndarray]) -> tuple[dict[str, np.ndarray], dict]:
    """The float64 outputs of the ONNX file at `path` and the JSON of their ReferenceCheck, computed in the
    onnx-reference worker; RosettaError where the evaluator cannot run the graph (the float32-only rule applies)."""
    from rosetta.execution import run_job

    result = run_job("rosetta.frameworks.onnx_reference:float64_job", {"path": str(path), "feeds": feeds},
                     ISOLATION, "the float64 reference run (ONNX's reference evaluator)")
    if "error" in result:
        raise RosettaError(f"ONNX's reference evaluator cannot run it in float64: {result['error']}")
    return result["outputs"], result["check"]


def float64_job(argument: dict) -> dict:
    """Job (rosetta.execution): an ONNX file's float64 outputs on argument["feeds"] and their ReferenceCheck, or
    {"error": ...} where the evaluator cannot run the graph."""
    import onnx

    model = onnx.load(str(argument["path"]))
    try:
        outputs, check = checked_float64_run(model, argument["feeds"])
    except RosettaError:
        raise
    except Exception as error:  # noqa: BLE001 - an op the evaluator lacks, a dtype it cannot run
        message = one_line(error)  # the evaluator's messages can list every value it holds
        return {"error": message if len(message) <= 200 else message[:200] + " ..."}
    return {"outputs": outputs, "check": check.to_json()}

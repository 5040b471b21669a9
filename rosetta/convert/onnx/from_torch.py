"""torch -> ONNX with torch.onnx.export.

Defaults: the TorchScript exporter at opset 17, the one every later target (onnx2tf, onnx2torch, MXNet's
importer) accepts; the dynamo exporter as an option (eval and preserve: its graph optimiser folds BatchNorm
into the convolution, so preserve turns the optimiser off, which keeps BatchNormalization as its own node;
it has no training-mode graph). `training` chooses what happens to BatchNorm/Dropout:
  eval      inference graph; BatchNorm folded into the preceding Conv (constant folding on)
  preserve  inference graph with BatchNorm kept as its own node (TrainingMode.PRESERVE): for artifacts that
            will be trained, whose BatchNorm must stay a trainable layer. Constant folding stays on: PRESERVE
            alone keeps BatchNorm, and without folding the GRU's weights become Slice/Concat subgraphs
            instead of initializers, which no importer reads as weights. Dropout is kept too, as an ONNX
            Dropout with its ratio and no training_mode (identity at inference, as the spec says): the
            exporter drops an eval-mode dropout, so the converted model would train without it and no
            check could see its rate (the TorchScript exporter only; see `dropout_kept`)
  train     training-mode graph (Dropout active, BatchNorm using batch statistics); used on purpose to show
            that verification catches a model exported in the wrong mode
The batch axis is dynamic. The result passes onnx.checker's full check (with shape inference). A Hugging Face
transformers model is exported with its attention masks and attention in plain ops (frameworks.transformers
plain_attention_masks), its mixture of experts as transformers' "batched_mm" (batched_experts: the default's
torch.histc exports to no ONNX op), and verified against the model as it was built. What the TorchScript
exporter computes from the input's shape only because the batch is free is made constant (dynamic_batch: a
view(x.size(0), ...) as Reshape(x, [-1, ...]), T5's relative position buckets from its sequence lengths), which MXNet's importer
(a run-time Concat), onnx2tf and rosetta's Keras mapper could not take; the outputs' declared shapes are
measured (a Resize to the input's size is declared with symbolic axes by the exporter, and a channels-last
target's output could not be told apart).

Where the user chose no exporter ("auto", EXPORT_DEFAULTS) the TorchScript exporter is tried first and, where it
refuses the model (an Unfold whose input size it cannot read, an adaptive max pooling whose output size does not
divide the input's; an adaptive average one is written as a MatMul, `adaptive_average_as_matmul`, and rms_norm
and expm1 as primitives, `primitive_forms`), the dynamo exporter is the second way in, at the same opset with the
same dynamic batch; the manifest names the exporter that made the artifact and, under `way_in`, why TorchScript's was
left. An exporter the user chose is the only one tried.
"""

from __future__ import annotations

import contextlib
import functools
import io
import warnings
from dataclasses import dataclass
from pathlib import Path

from rosetta.convert.targets import EXPORT_DEFAULTS
from rosetta.errors import RosettaError, one_line, plain
from rosetta.frameworks.onnx_graph import graph_inputs, load_checked, value_info_signature
from rosetta.manifest import Manifest, sha256_of, way_in_entry

ARTIFACT = "model.onnx"
EXPORTERS = ("torchscript", "dynamo")
AUTO = "auto"  # no exporter chosen: TorchScript's, then dynamo's where TorchScript's refuses the model
TRAINING_MODES = ("eval", "preserve", "train")


@dataclass
class TorchSource:
    """A PyTorch module to export, with the signature to export it with and where it came from."""

    module: object  # torch.nn.Module
    inputs: tuple  # TensorSpec
    outputs: tuple  # TensorSpec
    origin: dict  # e.g. {"model": "cnn", "seed": 0}


def example_inputs(source: TorchSource, batch: int = 2):
    import torch

    tensors = []
    for spec in source.inputs:
        shape = spec.concrete_shape(batch)
        if spec.dtype.startswith("int"):
            tensors.append(torch.zeros(shape, dtype=getattr(torch, spec.dtype)))
        else:
            tensors.append(torch.rand(shape, dtype=getattr(torch, spec.dtype)))
    return tuple(tensors)


def convert(source: TorchSource, staging: Path, options: dict) -> Manifest:
    import onnx
    import torch

    options = {**EXPORT_DEFAULTS, **options}
    opset, exporter, training = int(options["opset"]), options["exporter"], options["training"]
    if exporter not in (*EXPORTERS, AUTO):
        raise RosettaError(f"unknown exporter {exporter!r}; choose from {', '.join(EXPORTERS)}")
    if training not in TRAINING_MODES:
        raise RosettaError(f"unknown training mode {training!r}; choose from {', '.join(TRAINING_MODES)}")
    if exporter == "dynamo" and training == "train":
        raise RosettaError("the dynamo exporter has no training-mode graph; pass exporter='torchscript' "
                           "(or training='eval' or training='preserve' with dynamo)")

    module = source.module
    if isinstance(module, torch.export.ExportedProgram):  # a user's .pt2: its graph is fixed, export it as is
        if training == "train":
            raise RosettaError("a torch.export program cannot be exported in training mode")
        exporter, training = "dynamo", "eval"
    target = Path(staging) / ARTIFACT
    way_in = {}
    if exporter != AUTO:
        export(source, target, exporter, opset, training)
    else:
        try:
            exporter = "torchscript"
            export(source, target, exporter, opset, training)
        except ExportRefused as refused:
            if not Path(staging).is_dir():  # the folder went away under the exporter: not the model's doing
                raise
            if training == "train":  # dynamo has no training-mode graph: TorchScript's refusal is the answer
                raise RosettaError(f"{refused}; the dynamo exporter, the second way in, has no training-mode "
                                   "graph") from None
            target.unlink(missing_ok=True)
            try:
                exporter = "dynamo"
                export(source, target, exporter, opset, training)
            except ExportRefused as second:
                raise RosettaError(f"every way in failed: {refused}; {second}") from None
            way_in = way_in_entry("dynamo", ["torchscript", "dynamo"],
                                  f"the TorchScript exporter could not make it ({refused.reason}); "
                                  "the dynamo exporter's artifact kept")

    rewrites = {}
    # dynamic_batch's rewrites on TorchScript's graph only: on dynamo's (haloregnetz_b, alexnet at 64x64) they change
    # no target's verdict, fold one Range the Keras mapper lacks, and turn MXNet's named refusal (Expand) into a
    # KeyError inside its importer
    if exporter == "torchscript" and not isinstance(module, torch.export.ExportedProgram):
        from rosetta.frameworks.transformers import hugging_face_models
        from rosetta.convert.onnx.dynamic_batch import (batch_independent_constants, constant_reshape_targets,
                                                        static_output_shapes)

        rewritten = constant_reshape_targets(batch_independent_constants(onnx.load(str(target))))
        onnx.save(static_output_shapes(rewritten), str(target))
        rewrites = {"rewrites": ["dynamic_batch.batch_independent_constants", "dynamic_batch.constant_reshape_targets",
                                 "dynamic_batch.static_output_shapes"],
                    **({"attention": "rosetta.frameworks.transformers.plain_attention_masks"}
                       if hugging_face_models(module) else {}),
                    **({"experts": "rosetta.frameworks.transformers.batched_experts"}
                       if any(getattr(m, "_can_set_experts_implementation", lambda: False)()
                              for m in hugging_face_models(module)) else {})}
    model = load_checked(target)
    if training == "preserve" and not isinstance(module, torch.export.ExportedProgram):
        check_batchnorm_kept(module, model, example_inputs(source))
    actual_opset = next((o.version for o in model.opset_import if o.domain in ("", "ai.onnx")), opset)
    return Manifest(
        artifact=ARTIFACT, format="onnx", source=dict(source.origin),
        converter={"name": f"torch.onnx.export[{exporter}]", "version": torch.__version__,
                   "onnx": onnx.__version__, "options": {"opset": opset, "exporter": exporter, "training": training},
                   **rewrites, **way_in},
        inputs=value_info_signature(graph_inputs(model)), outputs=value_info_signature(model.graph.output),
        sha256=sha256_of(target), opset=actual_opset, chain=["torch", "onnx"],
    )


class ExportRefused(RosettaError):
    """torch.onnx.export raised: the exporter's refusal of this module, with its one-line reason."""

    def __init__(self, exporter: str, reason: str) -> None:
        super().__init__(f"torch.onnx.export ({exporter}) failed: {reason}")
        self.reason = reason


def export(source: TorchSource, target: Path, exporter: str, opset: int, training: str) -> None:
    """`source`'s module written to `target` by one torch.onnx exporter, its batch axis dynamic; raises
    ExportRefused where the exporter raises."""
    import torch

    module = source.module
    exported = isinstance(module, torch.export.ExportedProgram)
    if not exported:
        module.train(training == "train")
    args = example_inputs(source)
    input_names = [spec.name for spec in source.inputs]
    output_names = [spec.name for spec in source.outputs]
    log = io.StringIO()
    from rosetta.frameworks.transformers import batched_experts, plain_attention_masks

    masks = contextlib.nullcontext() if exported else plain_attention_masks(module)
    experts = contextlib.nullcontext() if exported else batched_experts(module)
    try:
        with warnings.catch_warnings(), contextlib.redirect_stdout(log), masks, experts:
            warnings.simplefilter("ignore")
            if exporter == "torchscript":
                mode = {"eval": torch.onnx.TrainingMode.EVAL, "preserve": torch.onnx.TrainingMode.PRESERVE,
                        "train": torch.onnx.TrainingMode.TRAINING}[training]
                dynamic_axes = {name: {0: "batch"} for name in input_names + output_names}
                with dropout_kept(opset) if training == "preserve" else contextlib.nullcontext(), \
                        adaptive_average_as_matmul(opset), primitive_forms(opset):
                    torch.onnx.export(module, args, str(target), dynamo=False, opset_version=opset,
                                      input_names=input_names, output_names=output_names,
                                      dynamic_axes=dynamic_axes, training=mode,
                                      do_constant_folding=(training != "train"))
            else:
                dynamic = None if exported else batch_dynamic_shapes(module, args)
                torch.onnx.export(module, args, str(target), dynamo=True, opset_version=opset,
                                  input_names=input_names, output_names=output_names,
                                  dynamic_shapes=dynamic, external_data=False, optimize=(training != "preserve"))
                if training == "preserve":
                    optimized_keeping_batch_normalization(target)
    except RosettaError:
        raise
    except Exception as error:
        raise ExportRefused(exporter, exporter_reason(error)) from None
    finally:
        if not exported:
            module.eval()


def optimized_keeping_batch_normalization(path: Path) -> None:
    """The dynamo exporter's graph optimised as its `optimize=True` does (onnxscript: constants folded, its
    default rewrite rules, unused nodes removed) but without the rules that fold BatchNormalization into the
    Conv or Gemm before it, which `preserve` keeps as its own node. Unoptimised, the graph kept what the
    exporter writes before its own clean-up (timm's HaloNet: SplitToSequence, SequenceAt and a Range over
    static sizes), which no target but ONNX Runtime converts."""
    import onnx_ir as ir
    import onnx_ir.passes.common as common_passes
    from onnxscript import rewriter
    from onnxscript.optimizer import _constant_folding
    from onnxscript.rewriter.rules.common import _fuse_batchnorm

    folding = {id(rule) for rule in _fuse_batchnorm.rules.rules}
    rules = [rule for rule in rewriter._DEFAULT_REWRITE_RULES if id(rule) not in folding]
    model = ir.load(str(path))
    folding_constants = _constant_folding.FoldConstantsPass(
        shape_inference=True, input_size_limit=_constant_folding.DEFAULT_CONSTANT_FOLD_INPUT_SIZE_LIMIT,
        output_size_limit=_constant_folding.DEFAULT_CONSTANT_FOLD_OUTPUT_SIZE_LIMIT)
    ir.passes.PassManager([folding_constants, rewriter.RewritePass(rules), common_passes.RemoveUnusedNodesPass()],
                          steps=2, early_stop=True)(model)
    ir.save(model, str(path))


def batch_dynamic_shapes(module, args) -> tuple:
    """torch.export's dynamic_shapes for axis 0 of every input, nested as forward takes them: a forward(*inputs)
    (frameworks.torch_outputs.TensorInterface, which a user's in-memory model is called through) takes the
    inputs as one tuple argument."""
    import inspect

    import torch

    batch = torch.export.Dim("batch")
    per_input = tuple({0: batch} for _ in args)
    parameters = list(inspect.signature(module.forward).parameters.values())
    if parameters and parameters[0].kind is inspect.Parameter.VAR_POSITIONAL:
        return (per_input,)
    return per_input


def exporter_reason(error: BaseException) -> str:
    """The line that says why: the dynamo exporter's message opens with three paragraphs of next steps and puts
    torch.export's own error under "## Exception summary" ("<class 'torch._dynamo.exc.UserError'>: ...")."""
    import re

    text = plain(str(error))
    summary = text.partition("## Exception summary")[2].strip()
    if not summary:
        return one_line(error)
    line = summary.splitlines()[0]
    found = re.match(r"<class '(?:[\w.]*\.)?(\w+)'>:\s*(.*)", line)
    return f"{found.group(1)}: {found.group(2)}" if found else line


@contextlib.contextmanager
def dropout_kept(opset: int):
    """While it lasts, the TorchScript exporter writes an eval-mode dropout (aten::dropout with train=False,
    which its own symbolic drops) as ONNX Dropout(x, ratio), training_mode omitted: identity at inference,
    and a Dropout layer of that rate in every converter that trains (onnx2torch, MXNet's importer, rosetta's
    Keras mapper). Registered as a custom symbolic for exactly this export's opset (12 or later: the
    ratio an input, training_mode as the module asks), and unregistered after."""
    import torch

    def dropout(g, x, p, train):
        from torch.onnx import symbolic_helper

        ratio = float(symbolic_helper._maybe_get_const(p, "f"))
        active = bool(symbolic_helper._maybe_get_const(train, "b"))  # F.dropout(training=True) in eval mode
        inputs = [x, g.op("Constant", value_t=torch.tensor(ratio, dtype=torch.float32))]
        if active:
            inputs.append(g.op("Constant", value_t=torch.tensor(True)))
        return g.op("Dropout", *inputs)

    if opset < 12:  # no training_mode input before opset 12: the exporter's own symbolic
        yield
        return
    torch.onnx.register_custom_op_symbolic("aten::dropout", dropout, opset)
    try:
        yield
    finally:
        torch.onnx.unregister_custom_op_symbolic("aten::dropout", opset)


def _dtype_of(value):
    """The torch dtype of a TorchScript graph value, float32 where the trace did not record it."""
    import torch

    return value.type().dtype() if value.type().dtype() is not None else torch.float32


def averaging_matrix(size: int, out: int):
    """The (out, size) matrix of an adaptive average along one axis, as torch computes it: output i averages
    input elements floor(i * size / out) to ceil((i + 1) * size / out), windows that overlap where out does
    not divide size."""
    import numpy as np

    matrix = np.zeros((out, size))
    for i in range(out):
        start, end = (i * size) // out, -((-(i + 1) * size) // out)
        matrix[i, start:end] = 1.0 / (end - start)
    return matrix


@contextlib.contextmanager
def adaptive_average_as_matmul(opset: int):
    """While it lasts, the TorchScript exporter writes an adaptive average pooling whose output size does not
    divide its input's (its own symbolic refuses those: AlexNet and VGG below 224x224, whose 6x6 and 7x7 pools
    then read 1x1 or 2x2 maps) as the linear map it is: the spatial axes flattened, one MatMul by the
    Kronecker product of the per-axis averaging matrices, and the output's shape; the dynamo exporter, the
    second way in, wrote a GatherND and a ReduceMean over run-time axes that the Keras mapper, MXNet and
    onnx2torch refuse. Every other adaptive pooling keeps the exporter's own symbolic (GlobalAveragePool,
    AveragePool), as do inputs of unknown spatial size or channels."""
    import numpy as np
    import torch
    from torch.onnx import symbolic_opset9

    def symbolic(rank: int):
        builtin = getattr(symbolic_opset9, f"adaptive_avg_pool{rank}d")

        def adaptive_average(g, x, output_size):
            from torch.onnx import symbolic_helper

            try:
                out = [int(o) for o in symbolic_helper._parse_arg(output_size, "is")]
            except Exception:  # noqa: BLE001 - a size computed at run time, or None (keep): the exporter's own
                return builtin(g, x, output_size)
            sizes = symbolic_helper._get_tensor_sizes(x) or []
            spatial = sizes[2:]
            if (len(sizes) != rank + 2 or sizes[1] is None or any(s is None for s in spatial) or len(out) != rank
                    or all(s % o == 0 for s, o in zip(spatial, out))):
                return builtin(g, x, output_size)
            kernel = np.ones((1, 1))
            for size, o in zip(spatial, out):
                kernel = np.kron(kernel, averaging_matrix(size, o))
            dtype = _dtype_of(x)
            flat = g.op("Reshape", x, _int64s(g, [-1, sizes[1], int(np.prod(spatial))]))
            pooled = g.op("MatMul", flat, g.op("Constant", value_t=torch.tensor(kernel.T, dtype=dtype)))
            return g.op("Reshape", pooled, _int64s(g, [-1, sizes[1], *out]))
        return adaptive_average

    names = [f"aten::adaptive_avg_pool{rank}d" for rank in (1, 2, 3)]
    for rank, name in enumerate(names, start=1):
        torch.onnx.register_custom_op_symbolic(name, symbolic(rank), opset)
    try:
        yield
    finally:
        for name in names:
            torch.onnx.unregister_custom_op_symbolic(name, opset)


def _int64s(g, values: list):
    """A Constant of int64 values in a TorchScript symbolic's graph (a shape, axes, bounds, repeats)."""
    import torch

    return g.op("Constant", value_t=torch.tensor(values, dtype=torch.int64))


def _static_ints(value) -> list[int] | None:
    """The ints of a TorchScript list argument where each is known at export (`_static_int`); None otherwise."""
    from torch.onnx import symbolic_helper

    node = value.node()
    if node.kind() != "prim::ListConstruct":
        try:
            return [int(v) for v in symbolic_helper._parse_arg(value, "is")]
        except Exception:  # noqa: BLE001 - computed at run time
            return None
    found = [_static_int(element) for element in node.inputs()]
    return None if None in found else found


_ARITHMETIC = {"onnx::Div": lambda a, b: a // b, "onnx::Mul": lambda a, b: a * b, "onnx::Add": lambda a, b: a + b,
               "onnx::Sub": lambda a, b: a - b}


def _static_int(value, depth: int = 0) -> int | None:
    """An int the graph computes from constants and static axes' sizes read at run time (VOLO's fold to x.shape's
    H and W, DINOv2's positions resized to height // patch): a Constant, a Gather of a Shape (the size as traced,
    `_traced_size`), integer arithmetic on two such, and casts and squeezes of one. None for anything else."""
    from torch.onnx import symbolic_helper

    producer, kind = value.node(), value.node().kind()
    inputs = list(producer.inputs())
    if depth > 12:
        return None
    if kind == "onnx::Constant":
        constant = symbolic_helper._node_get(producer, "value")
        return int(constant) if constant.numel() == 1 and not constant.is_floating_point() else None
    if kind == "onnx::Gather" and len(inputs) == 2 and inputs[0].node().kind() == "onnx::Shape":
        index = _static_int(inputs[1], depth + 1)
        return None if index is None else _traced_size(next(inputs[0].node().inputs()), index)
    if kind in _ARITHMETIC and len(inputs) == 2:
        left, right = (_static_int(v, depth + 1) for v in inputs)
        if left is None or right is None or (kind == "onnx::Div" and (right == 0 or left < 0 or right < 0)):
            return None  # ONNX's integer Div truncates: the same as // for operands >= 0 only
        return _ARITHMETIC[kind](left, right)
    if kind in ("onnx::Cast", "onnx::Squeeze", "onnx::Unsqueeze", "onnx::Identity") and inputs:
        return _static_int(inputs[0], depth + 1)
    return None


def _fold_as_transposed_convolution(g, x, out: list, kernel, dilation, padding, stride):
    """F.fold (aten::col2im) of x (N, C * kh * kw, L) to (N, C, *out): each column's patch summed back into place,
    which is a ConvTranspose of the columns (as maps of the blocks' grid) by one-hot kernels (the adjoint of
    F.unfold, a Conv by the same kernels). The channels are moved into the batch, (N * C, kh * kw, *grid), so the
    ConvTranspose has one group (the Keras mapper and onnx2tf take no other), and back."""
    import numpy as np
    import torch

    kh, kw = kernel
    blocks = [(o + 2 * p - d * (k - 1) - 1) // s + 1 for o, p, d, k, s in zip(out, padding, dilation, kernel, stride)]
    weight = np.zeros((kh * kw, 1, kh, kw), dtype=np.float32)
    for index in range(kh * kw):
        weight[index, 0, index // kw, index % kw] = 1.0
    ints = functools.partial(_int64s, g)
    grid = g.op("Reshape", x, ints([-1, kh * kw, *blocks]))
    # `out` is the full transposed convolution from `padding` on, with zeros where `out` runs past its end; cut and
    # padded by their own nodes (onnx2torch takes symmetric pads only, and tf2onnx writes a Keras output_padding
    # as negative pads)
    full = [(b - 1) * s + d * (k - 1) + 1 for b, s, d, k in zip(blocks, stride, dilation, kernel)]
    folded = g.op("ConvTranspose", grid, g.op("Constant", value_t=torch.tensor(weight, dtype=_dtype_of(x))),
                  strides_i=list(stride), dilations_i=list(dilation))
    ends = [min(p + o, f) for p, o, f in zip(padding, out, full)]
    if list(padding) != [0, 0] or ends != full:
        folded = g.op("Slice", folded, ints(list(padding)), ints(ends), ints([2, 3]))
    if any(p + o > f for p, o, f in zip(padding, out, full)):
        folded = g.op("Pad", folded, ints([0] * 6 + [max(p + o - f, 0) for p, o, f in zip(padding, out, full)]))
    columns = _traced_size(x, 1)
    if columns is not None and columns % (kh * kw) == 0:  # a constant shape
        return g.op("Reshape", folded, ints([-1, columns // (kh * kw), *out]))
    batch = g.op("Slice", g.op("Shape", x), ints([0]), ints([1]))
    return g.op("Reshape", folded, g.op("Concat", batch, ints([-1, *out]), axis_i=0))


def _traced_size(value, axis: int) -> int | None:
    """The size of one axis of a TorchScript value: from its type, or where the exporter's shape inference lost it
    (a Reshape by sizes read at run time: VOLO) from the strides the trace recorded. A tensor laid out densely in
    some axis order (contiguous, or a permuted view of one) has strides that, sorted, are each the product of the
    sizes after it; the outermost axis's size is not in them. Where they are not so (a size-1 axis, a slice), the
    size is not read. A view's strides can say a wrong size only where they look dense; the graph then fails at
    run time on it (a Reshape or an Add of the wrong size)."""
    from torch.onnx import symbolic_helper

    size = symbolic_helper._get_tensor_dim_size(value, axis)
    if size is not None:
        return int(size)
    try:
        strides = list(value.type().strides() or [])
    except (RuntimeError, AttributeError):  # not a complete tensor type, or not a tensor
        return None
    order = sorted(range(len(strides)), key=lambda i: strides[i], reverse=True)
    if not strides or strides[order[-1]] != 1 or len(set(strides)) != len(strides) or not -len(strides) <= axis < \
            len(strides):
        return None
    position = order.index(axis % len(strides))
    if position == 0 or strides[order[position - 1]] % strides[axis]:
        return None
    return strides[order[position - 1]] // strides[axis]


def _antialiased_resize(mode: str):
    """F.interpolate(x, size, mode, antialias=True) of a 4-D x of static spatial size (aten::_upsample_*_aa: no
    TorchScript symbolic; ONNX's Resize has antialias from opset 18 only): a linear map along each spatial axis,
    written as one MatMul per axis by the matrix torch's own kernel makes of the identity (the same weights,
    whatever the mode's details). DINOv2 with registers resizes its position embeddings so."""
    def symbolic(g, x, output_size, align_corners, *scales):
        import torch
        from torch.onnx import symbolic_helper

        sizes = [_traced_size(x, axis) for axis in (2, 3)]
        out = _static_ints(output_size) if not symbolic_helper._is_none(output_size) else None
        corners = bool(symbolic_helper._maybe_get_const(align_corners, "b"))
        if out is None or None in sizes or symbolic_helper._get_tensor_rank(x) != 4:
            return symbolic_helper._unimplemented(f"_upsample_{mode}2d_aa", "sizes known only at run time", x)
        dtype = _dtype_of(x)

        def along(size: int, target: int):  # (size, target): torch's resize of each unit vector along one axis
            # (the other axis kept at 4: at 1, torch's antialiased kernels give every output row the first's)
            basis = torch.eye(size, dtype=torch.float64)[:, None, :, None].expand(size, 1, size, 4)
            resized = torch.nn.functional.interpolate(basis.contiguous(), size=(target, 4), mode=mode,
                                                      antialias=True, align_corners=corners)
            return resized[:, 0, :, 0].to(dtype).contiguous()

        # each a MatMul by a matrix on the right, as a linear layer is (MXNet's importer refuses a 2-D left
        # operand of a 4-D right one): the rows through a transpose
        columns = g.op("Transpose", x, perm_i=[0, 1, 3, 2])
        rows = g.op("MatMul", columns, g.op("Constant", value_t=along(sizes[0], out[0])))
        rows = g.op("Transpose", rows, perm_i=[0, 1, 3, 2])
        return g.op("MatMul", rows, g.op("Constant", value_t=along(sizes[1], out[1])))
    return symbolic


@contextlib.contextmanager
def primitive_forms(opset: int):
    """While it lasts, the TorchScript exporter writes ops it has no symbolic for at the export's opset as the
    primitives they are: aten::rms_norm (torch.nn.RMSNorm, F.rms_norm: Hugging Face's DiffLlama, timm's RmsNorm;
    ONNX has RMSNormalization from opset 23) as x / sqrt(mean(x * x over the normalized axes) + eps) * weight, eps
    torch's default (the dtype's machine epsilon) where none is given; aten::expm1 (Apertus' xIELU) as
    exp(x) - 1. And one it has a wrong symbolic for: aten::repeat_interleave by a constant count along an axis,
    whose opset-13 symbolic writes a wrong shape where an axis is dynamic (Cohere's rotary embedding: ONNX
    Runtime refused the export), as Unsqueeze after the axis, Tile by the count and Reshape merging the two.
    Before opset 18 (Col2Im), aten::col2im (F.fold: timm's VOLO) as a transposed convolution; an antialiased
    bilinear or bicubic resize (no symbolic at any opset) as MatMuls (`_antialiased_resize`)."""
    import torch

    def rms_norm(g, x, normalized_shape, weight, eps):
        from torch.onnx import symbolic_helper

        shape = symbolic_helper._parse_arg(normalized_shape, "is")
        dtype = _dtype_of(x)
        epsilon = torch.finfo(dtype).eps if symbolic_helper._is_none(eps) else \
            float(symbolic_helper._maybe_get_const(eps, "f"))
        axes = list(range(-len(shape), 0))
        if opset >= 18:
            mean = g.op("ReduceMean", g.op("Mul", x, x), g.op("Constant", value_t=torch.tensor(axes)), keepdims_i=1)
        else:
            mean = g.op("ReduceMean", g.op("Mul", x, x), axes_i=axes, keepdims_i=1)
        scale = g.op("Sqrt", g.op("Add", mean, g.op("Constant", value_t=torch.tensor(epsilon, dtype=dtype))))
        normalized = g.op("Div", x, scale)
        return normalized if symbolic_helper._is_none(weight) else g.op("Mul", normalized, weight)

    def expm1(g, x):  # exp(x) - 1: off by a float32 ulp of 1 near 0, within the float32 noise of any output
        dtype = _dtype_of(x)
        return g.op("Sub", g.op("Exp", x), g.op("Constant", value_t=torch.tensor(1.0, dtype=dtype)))

    def repeat_interleave(g, x, repeats, dim=None, output_size=None):
        from torch.onnx import symbolic_helper, symbolic_opset13

        sizes = symbolic_helper._get_tensor_sizes(x)
        try:
            times = symbolic_helper._maybe_get_const(repeats, "i")
        except Exception:  # noqa: BLE001 - a count per element (a tensor of several): the exporter's own
            times = None
        if not isinstance(times, int) or symbolic_helper._is_none(dim) or sizes is None:
            return symbolic_opset13.repeat_interleave(g, x, repeats, dim, output_size)
        rank = len(sizes)
        axis = symbolic_helper._get_const(dim, "i", "dim") % rank
        ints = functools.partial(_int64s, g)
        tiled = g.op("Tile", g.op("Unsqueeze", x, ints([axis + 1])),
                     ints([1] * (axis + 1) + [times] + [1] * (rank - axis - 1)))
        shape = g.op("Shape", x)
        parts = ([g.op("Slice", shape, ints([0]), ints([axis]))] if axis else []) + [ints([-1])] + \
            ([g.op("Slice", shape, ints([axis + 1]), ints([rank]))] if axis + 1 < rank else [])
        return g.op("Reshape", tiled, g.op("Concat", *parts, axis_i=0) if len(parts) > 1 else parts[0])

    def col2im(g, x, output_size, kernel_size, dilation, padding, stride):
        from torch.onnx import symbolic_helper

        kernel, dilation, padding, stride = (symbolic_helper._parse_arg(v, "is")
                                             for v in (kernel_size, dilation, padding, stride))
        out = _static_ints(output_size)
        if out is None or symbolic_helper._get_tensor_rank(x) != 3:
            return symbolic_helper._unimplemented("col2im", "an output size known only at run time, or no batch", x)
        return _fold_as_transposed_convolution(g, x, out, kernel, dilation, padding, stride)

    forms = {"aten::rms_norm": rms_norm, "aten::expm1": expm1, "aten::repeat_interleave": repeat_interleave,
             "aten::_upsample_bicubic2d_aa": _antialiased_resize("bicubic"),
             "aten::_upsample_bilinear2d_aa": _antialiased_resize("bilinear")}
    if opset < 18:  # Col2Im from opset 18
        forms["aten::col2im"] = col2im
    for name, symbolic in forms.items():
        torch.onnx.register_custom_op_symbolic(name, symbolic, opset)
    try:
        yield
    finally:
        for name in forms:
            torch.onnx.unregister_custom_op_symbolic(name, opset)


def check_batchnorm_kept(module, model, inputs: tuple | None = None) -> None:
    """A graph exported to be trained keeps every BatchNorm of the module as a BatchNormalization node: one
    folded into its convolution would leave the target with nothing to train or to update statistics in.
    With the export's `inputs`, the BatchNorm calls its forward makes are counted, not the modules it holds:
    a branch the forward does not run (GoogLeNet's and Inception-v3's auxiliary heads in eval mode) has no
    node to keep, and a module called twice has two."""
    import torch

    layers = [m for m in module.modules() if isinstance(m, torch.nn.modules.batchnorm._BatchNorm)]
    expected = len(layers)
    counted = f"the module's {expected} BatchNorm layers"
    if inputs is not None and layers:
        calls = []
        hooks = [layer.register_forward_hook(lambda *_: calls.append(1)) for layer in layers]
        try:
            with torch.no_grad():
                module(*inputs)
            expected, counted = len(calls), f"the {len(calls)} BatchNorm calls of its forward"
        except Exception:  # noqa: BLE001 - a forward the export ran but this call cannot: count the modules
            pass
        finally:
            for hook in hooks:
                hook.remove()
    nodes = sum(node.op_type == "BatchNormalization" for node in model.graph.node)
    if nodes < expected:
        raise RosettaError(f"the exported graph keeps {nodes} of {counted} as "
                           "BatchNormalization nodes; the rest were folded, so it cannot be trained like the module")

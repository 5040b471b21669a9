"""ONNX -> TensorFlow SavedModel with onnx2tf (an inference artifact: onnx2tf's weights are constants).

Image inputs (float, rank 3-5) are kept channels-first (onnx2tf's keep_ncw_or_nchw_or_ncdhw_input_names),
so users feed the same arrays as to PyTorch; onnx2tf's option asserts on other inputs (the GRU's integer
tokens), which need no layout change. onnx2tf is asked for the Keras model only (disable_model_save) and
rosetta saves the SavedModel itself, with a serving signature named after the ONNX inputs and outputs: that
skips onnx2tf's TFLite export, which fails on the GRU graph after the SavedModel is already written. Any
remaining layout difference is detected from the shapes and recorded in the manifest for the runner.
onnx2tf reads the graph after rewrite_for_onnx2tf's semantics-preserving rewrites (rewrites.py), which work
around the places it fails on torch.onnx graphs with a dynamic batch size.
"""

from __future__ import annotations

import contextlib
import io
from pathlib import Path

from rosetta.convert.onnx import rewrites as rw
from rosetta.errors import RosettaError, cause_line
from rosetta.manifest import Manifest, sha256_of

ARTIFACT = "saved_model"


def _layout(onnx_shape: list, tf_shape: list) -> str:
    """'as_onnx' when shapes agree, 'channels_last' when TF has the channel axis moved last (an unknown
    ONNX size agrees with any)."""
    fixed = lambda shape: [d if isinstance(d, int) and d else None for d in shape]  # noqa: E731
    onnx_dims, tf_dims = fixed(onnx_shape), fixed(tf_shape)
    agree = lambda a, b: len(a) == len(b) and all(x is None or y is None or x == y for x, y in zip(a, b))  # noqa: E731
    if len(onnx_dims) != len(tf_dims) or agree(onnx_dims[1:], tf_dims[1:]):
        return "as_onnx"
    if len(onnx_dims) >= 3 and agree(tf_dims[1:], onnx_dims[2:] + onnx_dims[1:2]):
        return "channels_last"
    raise RosettaError(f"onnx2tf changed a tensor's shape from {onnx_shape} to {tf_shape}")


# The rewrites onnx2tf needs, in order: the ops it lacks or gets wrong (auto_pad SAME_LOWER, Resize, Trilu,
# DepthToSpace/SpaceToDepth, GroupNormalization, LayerNormalization's statistics) in primitives; constant shape
# arithmetic folded (as onnxsim, absent here, would), then the parts of Shape that are static, folded again, so
# that symbolic shape inference can follow the Reshapes; their shapes made static; a Linear's bias moved to the
# second operand; non-overlapping ConvTranspose as Conv + DepthToSpace (that one left to onnx2tf, which gets it
# right in DCR mode).
REWRITES = (rw.scope_safe_node_names, rw.resize_sizes_as_scales, rw.explicit_pads, rw.resize_except_upsampling_as_gathers_and_matmuls, rw.trilu_as_where,
            rw.depth_to_space_as_reshapes,
            rw.group_normalization_as_instance_normalization, rw.layer_normalization_statistics_as_primitives,
            rw.fold_constant_subgraphs, rw.static_shape_parts, rw.fold_constant_subgraphs, rw.symbolic_reshape_shapes,
            rw.constant_operands_second, rw.scalar_constants_as_vectors, rw.conv_transpose_as_depth_to_space)


def rewrite_for_onnx2tf(model):
    return rw.apply(REWRITES, model)


def refuse_resize(model) -> None:
    """A Resize or Upsample left after REWRITES other than an upsampling by integer factors (its scales or sizes
    computed at run time, or its resized axes of unknown size) is refused by name: onnx2tf's own computes 29 of
    ONNX's backend-test Resize cases wrongly without complaint (nearest modes, half_pixel_symmetric, cubic,
    antialias, downsampling)."""
    plans_of = rw.resize_plans(model)
    left = sorted({node.op_type for node in model.graph.node
                   if node.op_type in ("Resize", "Upsample") and not rw.resize_is_upsampling(node, plans_of(node))})
    if left:
        raise RosettaError(f"ONNX op {left[0]} with scales or sizes computed at run time, or of an input of unknown "
                           "size, cannot be converted to tensorflow: onnx2tf's Resize differs from ONNX's in several "
                           "modes, and rosetta writes it as what ONNX computes only where the scales are known")


def convert(source: Path, staging: Path, options: dict) -> Manifest:
    from importlib.metadata import version

    from rosetta.frameworks.tensorflow import import_tensorflow

    tf = import_tensorflow()
    import onnx
    import onnx2tf

    previous = Manifest.read(source)
    Path(staging).mkdir(parents=True, exist_ok=True)
    rewritten = Path(staging) / "onnx2tf-input.onnx"
    model = rewrite_for_onnx2tf(onnx.load(str(previous.artifact_path(source))))
    refuse_resize(model)
    onnx.save(model, str(rewritten))
    keep_nchw = [i["name"] for i in previous.inputs if i["dtype"].startswith("float") and 3 <= len(i["shape"]) <= 5]
    log = io.StringIO()
    try:
        with contextlib.redirect_stdout(log), contextlib.redirect_stderr(log):
            model = onnx2tf.convert(input_onnx_file_path=str(rewritten),
                                    output_folder_path=str(Path(staging) / "onnx2tf-work"),
                                    keep_ncw_or_nchw_or_ncdhw_input_names=keep_nchw or None,
                                    disable_model_save=True, non_verbose=True, verbosity="error")
    except (Exception, SystemExit) as error:  # onnx2tf calls sys.exit(1) on some failures, after logging why
        missing = getattr(error, "name", None) or ""
        if isinstance(error, ModuleNotFoundError) and missing.startswith("onnx2tf.ops."):  # one module per op
            raise RosettaError(f"ONNX op {missing.rsplit('.', 1)[-1]} cannot be converted to tensorflow: onnx2tf "
                               "has no converter for it") from None
        if isinstance(error, Exception) and str(error).strip():  # the cause, not Keras's "when calling layer"
            cause = f"{type(error).__name__}: {cause_line(str(error))}"
        else:
            cause = ([line for line in log.getvalue().splitlines() if "error" in line.lower()] or [type(error).__name__])[-1]
        raise RosettaError(f"onnx2tf failed: {cause.strip()[:300]}") from None
    layouts = {}
    for entry, tensor in zip(previous.inputs, model.inputs):
        layouts[entry["name"]] = _layout(entry["shape"], list(tensor.shape))
    for entry, tensor in zip(previous.outputs, model.outputs):
        layouts[entry["name"]] = _layout(entry["shape"], list(tensor.shape))

    target = Path(staging) / ARTIFACT
    save_saved_model(tf, model, target, [e["name"] for e in previous.inputs], [e["name"] for e in previous.outputs])
    import shutil

    shutil.rmtree(Path(staging) / "onnx2tf-work", ignore_errors=True)
    rewritten.unlink()
    return Manifest(
        artifact=ARTIFACT, format="tensorflow", source=previous.source,
        converter={"name": "onnx2tf", "version": version("onnx2tf"), "framework_version": tf.__version__,
                   "options": {"keep_ncw_or_nchw_or_ncdhw_input_names": keep_nchw, "rewrites": rw.names(REWRITES)},
                   "layouts": layouts},
        inputs=previous.inputs, outputs=previous.outputs, sha256=sha256_of(target), opset=previous.opset,
    )


def save_saved_model(tf, model, target: Path, input_names: list[str], output_names: list[str]) -> None:
    """Save a Keras model as a SavedModel whose serving_default signature takes and returns tensors by these
    names (Keras' own export names them after its layers)."""

    @tf.function(input_signature=[tf.TensorSpec(t.shape, t.dtype, name=n) for t, n in zip(model.inputs, input_names)])
    def serve(*tensors):
        result = model(list(tensors) if len(tensors) > 1 else tensors[0], training=False)
        result = result if isinstance(result, (list, tuple)) else [result]
        return dict(zip(output_names, result))

    # onnx2tf's op layers create variables Keras does not track (MobileNetV2's, EfficientNet's): a SavedModel
    # refuses a function that captures an untracked one, so every variable the function uses is kept here. The
    # Keras model itself is not: its legacy metadata serialises every constant of onnx2tf's op layers as JSON
    # (ResNet-50: 175 s of a 177 s save), and the serving function needs none of it
    holder = tf.Module()
    holder.captured = list(serve.get_concrete_function().variables)
    tf.saved_model.save(holder, str(target), signatures={"serving_default": serve})

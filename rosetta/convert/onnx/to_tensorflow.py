"""ONNX -> TensorFlow SavedModel with onnx2tf (an inference artifact: onnx2tf's weights are constants).

Inputs keep the layout ONNX gives them, so users feed the same arrays as to PyTorch: an input that reaches an op
reading a channel axis (Conv, pooling, normalisation, Resize) is declared channels-first to onnx2tf
(keep_ncw_or_nchw_or_ncdhw_input_names), any other kept exactly as it is (keep_shape_absolutely_input_names);
each alone got the other kind wrong without complaint (channels_first_inputs). onnx2tf's strict mode, its search
for the axis order that reproduces ONNX Runtime's values, stays on within a time limit (STRICT_MODE_SECONDS).

onnx2tf is asked for the Keras model only (disable_model_save) and rosetta saves the SavedModel itself, with a
serving signature named after the ONNX inputs and outputs: that skips onnx2tf's TFLite export, which fails on the
GRU graph after the SavedModel is already written. Any remaining layout difference is detected from the shapes
(or, where a shape fits two layouts, by running the model once beside ONNX Runtime: onnx2tf_layouts) and recorded
in the manifest for the runner. onnx2tf reads the graph after REWRITES, semantics-preserving rewrites
(the rewrites package) of what it fails on or computes otherwise; what none makes right is refused by name
(onnx2tf_refusals). onnx2tf fetches sample images from GitHub for some models; synthetic ones stand in
(offline_sample_images).
"""

from __future__ import annotations

import contextlib
import io
from pathlib import Path

import numpy as np

from rosetta.convert.onnx import rewrites as rw
from rosetta.convert.onnx.onnx2tf_layouts import agrees, layouts_of
from rosetta.convert.onnx.onnx2tf_refusals import refuse_known_wrong
from rosetta.errors import RosettaError, cause_line
from rosetta.manifest import Manifest, sha256_of

ARTIFACT = "saved_model"


# The rewrites onnx2tf needs, in order: a model below opset 11 brought to 13 (onnx2tf reads several ops by their
# later schema only); node names TensorFlow takes; a 5-D input's batch axis unnamed (onnx2tf passes the name to Keras
# as a size); Constants as initializers in their tensor form (onnx2tf takes a Constant node's output for a run-time
# tensor, GroupNorm's InstanceNormalization scale among them, and reads no value_float) and CastLike as Cast (none in
# onnx2tf; ONNX's function bodies, the "_expanded" cases, write both); what onnx2tf computes otherwise than ONNX
# (Clip with bounds computed at run time or min > max, reductions over run-time axes that are empty, LpNormalization
# of a zero vector, Shape's start/end, shifts out of range, unsigned Div, integer fmod, OneHot indices out of range)
# and the ops it lacks or gets wrong (auto_pad SAME_LOWER, an AveragePool counting its pads, Resize, Trilu,
# DepthToSpace/SpaceToDepth, GroupNormalization, LayerNormalization's statistics) in primitives; constant shape
# arithmetic folded (as onnxsim, absent here, would), then the parts of Shape that are static, folded again, so that
# symbolic shape inference can follow the Reshapes; their shapes made static; a Linear's bias moved to the second
# operand; non-overlapping ConvTranspose as Conv + DepthToSpace (that one left to onnx2tf, which gets it right in
# DCR mode).
REWRITES = (rw.old_opsets_upgraded, rw.scope_safe_node_names, rw.unnamed_batch_of_5d_inputs,
            rw.constant_attributes_as_tensors, rw.constants_to_initializers, rw.cast_like_as_cast,
            rw.clip_bounds_as_max_min, rw.empty_axes_as_every_axis, rw.lp_normalization_as_primitives,
            rw.shape_bounds_as_slice, rw.shifts_out_of_range_as_where, rw.unsigned_divisions_as_int64,
            rw.integer_fmod_as_magnitudes, rw.one_hot_out_of_range_as_off, rw.resize_sizes_as_scales,
            rw.explicit_pads, rw.counted_pads_as_pad, rw.resize_except_upsampling_as_gathers_and_matmuls,
            rw.trilu_as_where, rw.depth_to_space_as_reshapes, rw.group_normalization_as_instance_normalization,
            rw.layer_normalization_statistics_as_primitives, rw.fold_constant_subgraphs, rw.static_shape_parts,
            rw.fold_constant_subgraphs, rw.symbolic_reshape_shapes, rw.constant_operands_second,
            rw.scalar_constants_as_vectors, rw.conv_transpose_as_depth_to_space)


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


# The sample onnx2tf downloads (20 MS-COCO images, NHWC, values in [0, 1]) for its check inference when every input
# is a 4-D tensor with 3 channels last
SAMPLE_IMAGES_SHAPE = (20, 128, 128, 3)


@contextlib.contextmanager
def offline_sample_images():
    """onnx2tf fetches its sample images from GitHub (download_test_image_data) while converting a model whose
    inputs all look like small RGB batches; rosetta runs offline (a ConnectionError made such models CANNOT), so
    synthetic images of the same shape and range stand in. They only feed onnx2tf's own check inference of the
    ONNX graph, which picks no weights and writes nothing into the model."""
    import importlib

    module = importlib.import_module("onnx2tf.onnx2tf")
    original = module.download_test_image_data
    module.download_test_image_data = lambda: np.random.default_rng(0).random(SAMPLE_IMAGES_SHAPE, dtype=np.float32)
    try:
        yield
    finally:
        module.download_test_image_data = original


# ops that read a channel axis: an input that reaches one through elementwise ops holds its channels first (an
# image, a signal, a volume)
CHANNEL_OPS = {"Conv", "ConvTranspose", "MaxPool", "AveragePool", "LpPool", "GlobalAveragePool", "GlobalMaxPool",
               "GlobalLpPool", "BatchNormalization", "InstanceNormalization", "GroupNormalization", "LRN", "Resize",
               "Upsample", "DepthToSpace", "SpaceToDepth"}
ELEMENTWISE_OPS = {"Add", "Sub", "Mul", "Div", "Pow", "Max", "Min", "Neg", "Abs", "Sqrt", "Exp", "Log", "Erf", "Cast",
                   "Identity", "Dropout", "Relu", "LeakyRelu", "Elu", "Selu", "Sigmoid", "HardSigmoid", "HardSwish",
                   "Tanh", "Softplus", "Clip"}


def channels_first_inputs(model, previous) -> list[str]:
    """The float inputs of rank 3-5 that reach an op reading a channel axis (CHANNEL_OPS) through elementwise ops
    only: onnx2tf is told they are channels-first (keep_ncw_or_nchw_or_ncdhw_input_names), and keeps every other
    input as it is (keep_shape_absolutely_input_names). Either alone is wrong for the other kind: an (N, 8, 8, 8)
    image kept as it is came out of an SE block, a channel softmax or a Concat wrong, and a (3, 2, 2) input
    declared channels-first was reduced, concatenated or multiplied on the wrong axes."""
    consumers: dict[str, list] = {}
    for node in model.graph.node:
        for position, name in enumerate(node.input):
            consumers.setdefault(name, []).append((node, position))

    def reaches_channel_op(name: str) -> bool:
        frontier, seen = [name], set()
        while frontier:
            tensor = frontier.pop()
            seen.add(tensor)
            for node, position in consumers.get(tensor, []):
                if node.op_type in CHANNEL_OPS and position == 0:
                    return True
                if node.op_type in ELEMENTWISE_OPS and node.output and node.output[0] not in seen:
                    frontier.append(node.output[0])
        return False

    return [name for name in either_layout_inputs(previous) if reaches_channel_op(name)]


def either_layout_inputs(previous) -> list[str]:
    """The inputs onnx2tf may read channels-first or as they are: float, of rank 3-5."""
    return [entry["name"] for entry in previous.inputs
            if entry["dtype"].startswith("float") and 3 <= len(entry["shape"]) <= 5]


# onnx2tf's strict mode searches the orders of a tensor's axes (of two tensors', for Expand or Concat) for the one
# whose values match ONNX Runtime's on sample data: it makes tensors whose sizes after the first are equal ((N, 16,
# 16) tokens) come out right, but the search grows as rank!^2 and ran past 300 s on attention graphs. Past
# STRICT_MODE_SECONDS plus STRICT_MODE_SECONDS_PER_NODE of the graph (ResNet-50 converts in 27 s with it, on an idle
# 2-core machine), or where the search itself fails, the conversion is made again without it, and the manifest says
# so (options.disable_strict_mode).
STRICT_MODE_SECONDS, STRICT_MODE_SECONDS_PER_NODE = 60.0, 0.25
# onnx2tf's search builds a Keras model for every pair of axis orders of an Expand's or Tile's operands: 576 of them
# at rank 4 (minutes: attention masks); such graphs are converted without strict mode from the start
QUADRATIC_SEARCH_OPS, QUADRATIC_SEARCH_RANK = ("Expand", "Tile"), 4


# onnx2tf runs the `onnxsim` command found on PATH, three times per conversion, when there is one: the same
# model then converted otherwise in an activated virtual environment than through .venv/bin/rosetta, and onnxsim
# 0.8 imports torch each time (15 s of a Relu's 20 s conversion). Its constant folding is done by the rewrites
# above (fold_constant_subgraphs, static_shape_parts), so it is never run
ONNX2TF_FIXED_OPTIONS = {"not_use_onnxsim": True}


def strict_mode_affordable(model) -> bool:
    """Whether no Expand or Tile of rank QUADRATIC_SEARCH_RANK or more (or of unknown rank) is in the graph."""
    from rosetta.frameworks.onnx_graph import static_shapes

    shapes = static_shapes(model)
    ranks = {name: len(shape) for name, shape in shapes.items()}
    return not any(node.op_type in QUADRATIC_SEARCH_OPS
                   and ranks.get(node.output[0], QUADRATIC_SEARCH_RANK) >= QUADRATIC_SEARCH_RANK
                   for node in model.graph.node)


class StrictModeTooSlow(BaseException):
    """onnx2tf's strict mode ran past STRICT_MODE_SECONDS (a BaseException: onnx2tf's ops catch Exception)."""


@contextlib.contextmanager
def _time_limit(seconds: float | None):
    """StrictModeTooSlow raised in this thread after `seconds`, and every second after until it is out of onnx2tf
    (some of its ops swallow any exception); nothing off the main thread, where no signal can be delivered."""
    import signal
    import threading

    if not seconds or threading.current_thread() is not threading.main_thread():
        yield
        return

    def interrupt(signum, frame):
        raise StrictModeTooSlow()

    previous = signal.signal(signal.SIGALRM, interrupt)
    signal.setitimer(signal.ITIMER_REAL, seconds, 1.0)
    try:
        yield
    finally:
        signal.setitimer(signal.ITIMER_REAL, 0)
        signal.signal(signal.SIGALRM, previous)


def run_onnx2tf(onnx2tf, onnx_path: Path, work: Path, options: dict, seconds: float | None = None):
    """onnx2tf's Keras model of the ONNX file, its output silenced; one-line RosettaError with its reason."""
    log = io.StringIO()
    try:
        with _time_limit(seconds), contextlib.redirect_stdout(log), contextlib.redirect_stderr(log), \
                offline_sample_images():
            return onnx2tf.convert(input_onnx_file_path=str(onnx_path), output_folder_path=str(work),
                                   disable_model_save=True, non_verbose=True, verbosity="error", **options)
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


def _onnx2tf_in_layouts(onnx2tf, model, previous, rewritten: Path, staging: Path, channels_first: list[str]):
    """onnx2tf's Keras model with `channels_first` inputs declared channels-first and every other input kept as
    it is: (Keras model, onnx2tf options, strict mode used, layouts, layouts probed). Strict mode first, within
    its time limit; without it where it is too slow or its search fails."""
    kept = [entry["name"] for entry in previous.inputs]
    options = {**ONNX2TF_FIXED_OPTIONS, "keep_ncw_or_nchw_or_ncdhw_input_names": channels_first or None,
               "keep_shape_absolutely_input_names": [name for name in kept if name not in channels_first] or None}
    work = Path(staging) / "onnx2tf-work"
    try:
        if not strict_mode_affordable(model):
            raise StrictModeTooSlow()
        limit = STRICT_MODE_SECONDS + STRICT_MODE_SECONDS_PER_NODE * len(model.graph.node)
        keras_model, strict = run_onnx2tf(onnx2tf, rewritten, work, options, limit), True
    except (StrictModeTooSlow, RosettaError):  # too slow, or its search failed where the plain conversion may not
        keras_model, strict = run_onnx2tf(onnx2tf, rewritten, work, {**options, "disable_strict_mode": True}), False
    layouts, probed = layouts_of(keras_model, previous, rewritten, kept)
    return keras_model, options, strict, layouts, probed


def convert(source: Path, staging: Path, options: dict) -> Manifest:
    from importlib.metadata import version

    from rosetta.frameworks.tensorflow import import_tensorflow

    tf = import_tensorflow()
    import onnx
    import onnx2tf

    previous = Manifest.read(source)
    Path(staging).mkdir(parents=True, exist_ok=True)
    rewritten = Path(staging) / "onnx2tf-input.onnx"
    model = onnx.load(str(previous.artifact_path(source)))
    refuse_known_wrong(model)  # named as the model has them, before the rewrites write some in primitives
    model = rewrite_for_onnx2tf(model)
    refuse_resize(model)
    onnx.save(model, str(rewritten))
    channels_first = channels_first_inputs(model, previous)
    keras_model, options, strict, layouts, probed = _onnx2tf_in_layouts(onnx2tf, model, previous, rewritten, staging,
                                                                        channels_first)
    # the rule that says which inputs are channels-first is a guess from the graph: where onnx2tf's model does not
    # give ONNX Runtime's numbers, the other reading of the inputs that could be either is tried once, and kept
    # only if it does (a reduction over a (3, 2, 2) input that no channel op reads is one onnx2tf computes right
    # only with the input declared channels-first)
    either = either_layout_inputs(previous)
    retried = False
    if either and agrees(keras_model, previous, rewritten, layouts) is False:
        other = [name for name in either if name not in channels_first]
        try:
            second = _onnx2tf_in_layouts(onnx2tf, model, previous, rewritten, staging, other)
        except RosettaError:
            second = None
        if second is not None and agrees(second[0], previous, rewritten, second[3]):
            (keras_model, options, strict, layouts, probed), retried = second, True

    target = Path(staging) / ARTIFACT
    save_saved_model(tf, keras_model, target, [e["name"] for e in previous.inputs], [e["name"] for e in previous.outputs])
    import shutil

    shutil.rmtree(Path(staging) / "onnx2tf-work", ignore_errors=True)
    rewritten.unlink()
    return Manifest(
        artifact=ARTIFACT, format="tensorflow", source=previous.source,
        converter={"name": "onnx2tf", "version": version("onnx2tf"), "framework_version": tf.__version__,
                   "options": {**options, "disable_strict_mode": not strict, "rewrites": rw.names(REWRITES),
                               **({"inputs_read_otherwise": True} if retried else {})},
                   "layouts": layouts, **({"layouts_probed": probed} if probed else {})},
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

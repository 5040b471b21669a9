"""ONNX -> MXNet 1.9.1 with MXNet's own importer (mx.contrib.onnx.import_model), bridged where it stops short:
graph rewrites before the import (REWRITES: rosetta.convert.onnx.rewrites and the MXNet-only ones of this
package), rosetta's entries in the importer's operator table (registry.py: one module per op family,
`recurrent`, `tensors`, `arithmetic`, `pooling`, `conv`), and the patterns MXNet computes otherwise refused by
name before the import (refusals.py).

The rewrites, each semantics-preserving (tested in ONNX Runtime): zero initial GRU/LSTM states built at run time
are omitted (MXNet cannot express the Shape -> ConstantOfShape chain); auto_pad becomes explicit pads (the
importer ignores it); Resize/Upsample, Trilu, DepthToSpace/SpaceToDepth, GroupNormalization, LayerNormalization
ConstantOfShape (of a static shape), CastLike, Gelu and Flatten at an axis other than 1, which it lacks, become the primitives they are defined by; Shape's
start/end become a Slice, and the Shape (or Size) of a tensor of static shape the constant it is; negative constant Gather indices become positive and Slice bounds are brought within
the axis; Div of integers is marked (MXNet carries integers as float32) and Split gets its parts' sizes;
Constant nodes become initializers and every initializer is also a graph input; Squeeze/Unsqueeze/Reduce axes
move back from inputs to attributes and BatchNormalization's default training_mode=0 attribute is dropped (it
reads opset-11 style and passes unknown attributes on). Omitted optional inputs: the importer looks every input
up by name, "" included; GRU's and LSTM's are named (recurrent.name_omitted_inputs), any other op with one is
refused before the import.
"""

from __future__ import annotations

import re
from pathlib import Path

from rosetta.convert.onnx import rewrites as rw
from rosetta.convert.onnx.to_mxnet import arithmetic, conv, pooling, recurrent, tensors  # noqa: F401 - registers
from rosetta.convert.onnx.to_mxnet.refusals import refuse_known_wrong, refuse_omitted_inputs
from rosetta.convert.onnx.to_mxnet.registry import install
from rosetta.errors import RosettaError
from rosetta.frameworks.onnx_graph import default_opset
from rosetta.manifest import Manifest, sha256_of

ARTIFACT = "model"
FLOAT_TYPES = (1, 10, 11, 16)  # onnx.TensorProto FLOAT, FLOAT16, DOUBLE, BFLOAT16

# In order: torch.onnx's expand(batch, -1, -1) shapes made traceable first (a Reshape of a vector, a Where of
# two), then ConstantOfShape after the zero initial states (built with it) are dropped; the ops the importer lacks
# or gets wrong, and the MXNet-only marks, while shapes can still be inferred; LayerNormalization before the axes
# move to attributes (its ReduceMeans take them as inputs from opset 18); shapes_as_references before too, as it
# infers shapes (an opset-17 Unsqueeze with its axes as an attribute fails inference); Shape's bounds before the
# Slice bounds are brought within the axis.
REWRITES = (rw.constant_attributes_as_tensors, rw.batch_normalization_of_constants, rw.vector_reshapes_as_identity,
            rw.vector_wheres_as_gathers,
            rw.constant_reshape_shapes, rw.axis_ranges, rw.tile_as_expand,
            rw.drop_zero_initial_states, rw.static_shapes_as_constants,
            rw.explicit_pads, rw.cast_like_as_cast,
            rw.gelu_as_primitives, rw.flatten_as_reshape, rw.einsum_as_matmul, rw.matmul_batch_broadcast_as_tile,
            rw.explicit_default_axes, rw.resize_of_a_filled_tensor, rw.resize_sizes_as_scales,
            rw.resize_as_gathers_and_matmuls, rw.trilu_as_where, rw.depth_to_space_as_reshapes,
            rw.group_normalization_as_instance_normalization, rw.constant_of_shape_as_initializers,
            rw.decompose_layer_normalization, rw.shape_bounds_as_slice, rw.gather_elements_of_a_vector,
            rw.gather_nd_as_gather,
            rw.positive_gather_indices,
            rw.bounded_slices, arithmetic.same_shape_adds, arithmetic.integer_divisions,
            tensors.split_sizes_as_attribute, tensors.shapes_as_references, tensors.scalar_gather_indices,
            rw.axes_inputs_to_attributes, rw.drop_default_training_mode, rw.bypass_identity_of_initializers,
            recurrent.name_omitted_inputs, rw.constants_to_initializers, rw.initializers_as_inputs)


def rewrite_for_mxnet(model):
    return rw.apply(REWRITES, model)


def convert(source: Path, staging: Path, options: dict) -> Manifest:
    import onnx

    from rosetta.frameworks.mxnet import PARAMS_FILE, SYMBOL_FILE, import_mxnet, install_onnx_mapping

    mx = import_mxnet()
    install_onnx_mapping()
    previous = Manifest.read(source)
    model = onnx.load(str(previous.artifact_path(source)))
    converters = install(default_opset(model))
    weights = {i.name for i in model.graph.initializer if i.data_type in FLOAT_TYPES}
    refuse_known_wrong(model)
    model = rewrite_for_mxnet(model)
    refuse_omitted_inputs(model)
    # initializers that were graph constants (Constant nodes, rewritten indices), not weights: a trainer
    # must not train them, although MXNet holds every initializer as a parameter
    constants = sorted(i.name for i in model.graph.initializer if i.name not in weights)
    artifact = Path(staging) / ARTIFACT
    artifact.mkdir()
    fixed = Path(staging) / "mxnet-input.onnx"
    onnx.save(model, str(fixed))
    try:
        symbol, arg_params, aux_params = mx.contrib.onnx.import_model(str(fixed))
    except RosettaError:
        raise
    except NotImplementedError as error:  # "Operator X not implemented."
        found = re.search(r"Operator (\w+) not implemented", str(error))
        if found:
            raise RosettaError(f"ONNX op {found.group(1)} cannot be converted to mxnet: MXNet's ONNX importer has no "
                               "converter for it") from None
        raise RosettaError(f"MXNet's ONNX importer: {error}") from None
    finally:
        fixed.unlink()
    mx.model.save_checkpoint(str(artifact / "model"), 0, symbol, arg_params, aux_params)
    assert (artifact / SYMBOL_FILE).is_file() and (artifact / PARAMS_FILE).is_file()
    return Manifest(
        artifact=ARTIFACT, format="mxnet", source=previous.source,
        converter={"name": "mxnet.contrib.onnx.import_model", "version": mx.__version__, "framework_version": mx.__version__,
                   "options": {"rewrites": rw.names(REWRITES),
                               "converters": {op: f"{f.__module__}.{f.__qualname__}" for op, f in converters.items()}},
                   "constant_parameters": constants},
        inputs=previous.inputs, outputs=previous.outputs, sha256=sha256_of(artifact), opset=previous.opset,
    )

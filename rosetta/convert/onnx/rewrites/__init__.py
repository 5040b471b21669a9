"""Semantics-preserving ONNX graph rewrites that let older or partial importers read rosetta's exports.

Each rewrite takes and returns a ModelProto, changes nothing the ONNX spec would compute differently, and
says which importer needs it. Each target lists the rewrites it needs, in order, as a pipeline (REWRITES in
to_mxnet, to_tensorflow, to_keras) that `apply` runs and its manifest records by `names`; tests run the
rewritten graph in ONNX Runtime to show it still computes the same function.

One module per family (`graph`, `recurrent`, `constants`, `shapes`, `axes`, `slices`, `normalization`, `resize`,
`convolution`, `arithmetic`), each rewrite registered by `@rewrite` (registry.py); every name is importable from
this package, as the pipelines name them (`rewrites.explicit_pads`).
"""

from rosetta.convert.onnx.rewrites.registry import apply, names, registered, rewrite  # noqa: F401
from rosetta.convert.onnx.rewrites.graph import (bypass_identity_of_initializers, constant_weights_as_initializers,
                                                 drop_default_training_mode,
                                                 FLOAT_TYPES, identity_of_initializers_as_initializers,
                                                 initializers_as_inputs, old_opsets_upgraded,
                                                 OLDEST_OPSET_KEPT, remove_dead_nodes, replace_nodes,
                                                 scope_safe_node_names, unnamed_batch_of_5d_inputs,
                                                 UPGRADED_OPSET)  # noqa: F401
from rosetta.convert.onnx.rewrites.recurrent import (drop_zero_initial_states)  # noqa: F401
from rosetta.convert.onnx.rewrites.constants import (constant_attributes_as_tensors, constant_of_shape_as_initializers,
                                                     constant_operands_second, constants_to_initializers,
                                                     fold_constant_subgraphs, scalar_constants_as_vectors,
                                                     static_shapes_as_constants)  # noqa: F401
from rosetta.convert.onnx.rewrites.shapes import (_symbolic_shapes, allowzero_without_zeros, axis_ranges,
                                                  constant_reshape_shapes,
                                                  depth_to_space_as_reshapes, flatten_as_reshape,
                                                  shape_bounds_as_slice, static_shape_parts, tile_as_expand,
                                                  symbolic_reshape_shapes, vector_reshapes_as_identity,
                                                  vector_wheres_as_gathers)  # noqa: F401
from rosetta.convert.onnx.rewrites.axes import (axes_inputs_to_attributes, empty_axes_as_every_axis,
                                                explicit_default_axes, REDUCTIONS,
                                                run_time_axes_of_unknown_count)  # noqa: F401
from rosetta.convert.onnx.rewrites.slices import (bounded_slices, gather_elements_of_a_vector, gather_nd_as_gather,
                                                  one_hot_out_of_range_as_off, positive_gather_indices,
                                                  SLICE_BOUND)  # noqa: F401
from rosetta.convert.onnx.rewrites.normalization import (batch_normalization_of_constants,
                                                         decompose_layer_normalization,
                                                         group_normalization_as_instance_normalization,
                                                         layer_normalization_statistics_as_primitives,
                                                         lp_normalization_as_primitives)  # noqa: F401
from rosetta.convert.onnx.rewrites.resize import (resize_as_gathers_and_matmuls, resize_of_a_filled_tensor,
                                                  resize_except_upsampling_as_gathers_and_matmuls,
                                                  resize_is_upsampling, resize_plans,
                                                  resize_sizes_as_scales)  # noqa: F401
from rosetta.convert.onnx.rewrites.convolution import (conv_transpose_as_depth_to_space,  # noqa: F401
                                                       counted_pads_as_pad, explicit_pads)
from rosetta.convert.onnx.rewrites.arithmetic import (cast_like_as_cast, clip_bounds_as_max_min, einsum_as_matmul,
                                                      gelu_as_primitives,
                                                      integer_fmod_as_magnitudes, matmul_batch_broadcast_as_tile,
                                                      shifts_out_of_range_as_where,
                                                      trilu_as_where, unsigned_divisions_as_int64)  # noqa: F401

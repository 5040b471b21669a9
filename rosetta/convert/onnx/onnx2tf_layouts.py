"""Which layout onnx2tf gave each input and output of the model it built, recorded in the manifest for the runner.

onnx2tf moves the channel axis of tensors of rank 3-5 last, and keeps some tensors as ONNX has them; it does not
say which. The shapes tell where they differ ((2, 3, 8, 8) became (2, 8, 8, 3)). Where a tensor's shape fits
either layout (channels equal to the spatial sizes: AvgPool2d's (2, 3, 3, 3), or unknown sizes), ONNX Runtime
and the Keras model are run once on the same seeded inputs and the layout in which the model's output equals
ONNX Runtime's is the one recorded (`probe`). When no layout, or more than one, gives ONNX Runtime's numbers,
the first that fits the shape stands, and verification says what the model computes.
"""

from __future__ import annotations

import itertools
from pathlib import Path

import numpy as np

from rosetta.errors import RosettaError

AS_ONNX, CHANNELS_LAST = "as_onnx", "channels_last"
PROBE_COMBINATIONS = 16  # input layouts tried together at most (2 ** ambiguous inputs)
PROBE_SIZE = 3  # an axis of unknown size, in the probe's inputs


def _fixed(shape: list) -> list:
    return [d if isinstance(d, int) and d else None for d in shape]


def _agree(a: list, b: list) -> bool:
    return len(a) == len(b) and all(x is None or y is None or x == y for x, y in zip(a, b))


def fitting_layouts(onnx_shape: list, tf_shape: list) -> list[str]:
    """The layouts in which a TF tensor of `tf_shape` can hold the ONNX tensor of `onnx_shape` (an unknown size
    agrees with any), in order of preference."""
    onnx_dims, tf_dims = _fixed(onnx_shape), _fixed(tf_shape)
    if len(onnx_dims) != len(tf_dims):
        return [AS_ONNX]  # a 0-d input onnx2tf declares (None,), which takes the 0-d tensor as it is; else the
        # runner's shape check says what changed
    fitting = [AS_ONNX] if _agree(onnx_dims[1:], tf_dims[1:]) else []
    if len(onnx_dims) >= 3 and _agree(tf_dims[1:], onnx_dims[2:] + onnx_dims[1:2]):
        fitting.append(CHANNELS_LAST)
    if not fitting:
        raise RosettaError(f"onnx2tf changed a tensor's shape from {onnx_shape} to {tf_shape}")
    return fitting


def layouts_of(keras_model, previous, onnx_path: Path, kept: list[str]) -> tuple[dict, list[str]]:
    """({tensor: layout} of the model's inputs and outputs, the tensors whose layout was probed); `kept`: the
    inputs onnx2tf was told to keep as ONNX has them."""
    fitting = {}
    for entry, tensor in zip(previous.inputs, keras_model.inputs):
        fitting[entry["name"]] = [AS_ONNX] if entry["name"] in kept else \
            fitting_layouts(entry["shape"], list(tensor.shape))
    for entry, tensor in zip(previous.outputs, keras_model.outputs):
        fitting[entry["name"]] = fitting_layouts(entry["shape"], list(tensor.shape))
    layouts = {name: choices[0] for name, choices in fitting.items()}
    ambiguous = sorted(name for name, choices in fitting.items() if len(choices) > 1)
    if ambiguous:
        layouts.update(probe(keras_model, previous, onnx_path, fitting))
    return layouts, ambiguous


def _probe_inputs(previous) -> dict[str, np.ndarray]:
    rng = np.random.default_rng(0)
    feeds = {}
    for entry in previous.inputs:
        shape = [d if isinstance(d, int) and d > 0 else PROBE_SIZE for d in entry["shape"]]
        dtype = np.dtype(entry["dtype"])
        feeds[entry["name"]] = (rng.integers(0, 2, size=shape).astype(dtype) if dtype.kind in "iub"
                                else rng.standard_normal(size=shape).astype(dtype))
    return feeds


def _reading(array: np.ndarray, layout: str) -> np.ndarray:
    """A TF output read back in the ONNX layout, as the runner will."""
    from rosetta.frameworks.base import from_layouts

    return from_layouts({"x": array}, {"x": layout})["x"]


def _same(actual: np.ndarray, expected: np.ndarray) -> bool:
    if actual.shape != expected.shape:
        return False
    scale = float(np.max(np.abs(expected))) if expected.size else 0.0
    return bool(np.allclose(actual.astype(np.float64), expected.astype(np.float64), rtol=1e-3, atol=1e-4 * scale + 1e-6,
                            equal_nan=True))


def _onnx_outputs(onnx_path: Path, feeds: dict) -> dict | None:
    """The ONNX model's outputs on the probe's inputs: ONNX Runtime's, or where it does not read the model (an
    opset newer than it knows) ONNX's reference evaluator's; None where neither runs it."""
    import onnx
    import onnxruntime
    from onnx.reference import ReferenceEvaluator

    from rosetta.frameworks.onnx_graph import onnxruntime_ir_version

    model = onnx.load(str(onnx_path))
    names = [output.name for output in model.graph.output]
    try:
        model.ir_version = min(model.ir_version, onnxruntime_ir_version())  # onnx writes its newest
        session = onnxruntime.InferenceSession(model.SerializeToString(), providers=["CPUExecutionProvider"])
        return dict(zip(names, session.run(names, feeds)))
    except Exception:  # noqa: BLE001 - not a model ONNX Runtime reads, or not inputs this model takes
        pass
    try:
        return dict(zip(names, ReferenceEvaluator(model).run(names, feeds)))
    except Exception:  # noqa: BLE001 - the probe's inputs are not ones this model takes: no probe
        return None


def _keras_outputs(keras_model, previous, feeds: dict, layouts: dict) -> dict | None:
    from rosetta.frameworks.base import to_layouts

    arranged = to_layouts(feeds, layouts)
    try:
        arrays = [arranged[entry["name"]] for entry in previous.inputs]
        result = keras_model(arrays if len(arrays) > 1 else arrays[0], training=False)
    except Exception:  # noqa: BLE001 - inputs in a layout the model does not take
        return None
    result = result if isinstance(result, (list, tuple)) else [result]
    return {entry["name"]: np.asarray(value) for entry, value in zip(previous.outputs, result)}


def probe(keras_model, previous, onnx_path: Path, fitting: dict) -> dict[str, str]:
    """{ambiguous tensor: the layout in which the Keras model gives ONNX Runtime's numbers}, for those that one
    layout alone explains; {} where either model cannot run on the probe's inputs."""
    feeds = _probe_inputs(previous)
    expected = _onnx_outputs(onnx_path, feeds)
    if expected is None:
        return {}
    input_names = [entry["name"] for entry in previous.inputs]
    ambiguous_inputs = [name for name in input_names if len(fitting[name]) > 1]
    choices = list(itertools.product(*(fitting[name] for name in ambiguous_inputs)))[:PROBE_COMBINATIONS]
    for choice in choices:
        chosen = {name: fitting[name][0] for name in input_names} | dict(zip(ambiguous_inputs, choice))
        outputs = _keras_outputs(keras_model, previous, feeds, chosen)
        if outputs is None:
            continue
        matching = {name: [layout for layout in fitting[name]
                           if name in expected and _same(_reading(outputs[name], layout), expected[name])]
                    for name in outputs}
        # every ambiguous output explained by one layout alone; with inputs tried in a layout, every output too
        if all(len(matching[name]) == 1 for name in outputs if len(fitting[name]) > 1) and \
                (not ambiguous_inputs or all(matching.values())):
            return dict(zip(ambiguous_inputs, choice)) | {name: found[0] for name, found in matching.items()
                                                          if len(fitting[name]) > 1}
    return {}


def agrees(keras_model, previous, onnx_path: Path, layouts: dict) -> bool | None:
    """Whether the Keras model, read in `layouts`, gives ONNX Runtime's numbers on the probe's seeded inputs;
    None where either cannot run on them (nothing learnt)."""
    feeds = _probe_inputs(previous)
    expected = _onnx_outputs(onnx_path, feeds)
    outputs = None if expected is None else _keras_outputs(keras_model, previous, feeds, layouts)
    if outputs is None:
        return None
    return all(name in expected and _same(_reading(outputs[name], layouts[name]), expected[name]) for name in outputs)

"""IR -> TensorFlow with MMdnn's TensorFlow emitter: the generated TF1 code (kept in the artifact folder) is
run in graph mode through tf.compat.v1 (compat.tensorflow_v1) and saved as a SavedModel whose
`serving_default` signature takes and returns the reference's names. The emitted graph is NHWC (MMdnn's IR
layout), which the manifest records, so the TensorFlow runner transposes at the boundary. The SavedModel is
TF1-style (variables restored into a graph); TF 2's tf.saved_model.load runs it eagerly."""

from __future__ import annotations

import os
from pathlib import Path

from rosetta.convert.mmdnn import compat
from rosetta.convert.mmdnn.emit import emitted_manifest, generate_code, ir_paths
from rosetta.errors import RosettaError
from rosetta.execution import retire_this_worker
from rosetta.frameworks.base import import_generated
from rosetta.manifest import Manifest

ARTIFACT = "saved_model"
CODE = "kit_tensorflow.py"


def convert(source: Path, staging: Path, options: dict) -> Manifest:
    os.environ["TF_USE_LEGACY_KERAS"] = "1"  # this job only: tf.compat.v1.layers needs tf-keras
    # TensorFlow 1 behaviour (below) is process-wide and cannot be switched back: no job after this one here
    retire_this_worker("MMdnn's TensorFlow emitter turned TensorFlow 2 behaviour off")
    compat.apply()
    from rosetta.frameworks.tensorflow import import_tensorflow

    tf = import_tensorflow()
    v1 = tf.compat.v1
    v1.disable_v2_behavior()
    from mmdnn.conversion.tensorflow.tensorflow_emitter import TensorflowEmitter

    previous, graph_file, weights = ir_paths(source)
    if len(previous.inputs) != 1 or len(previous.outputs) != 1:
        raise RosettaError("MMdnn's TensorFlow emitter builds one input and one output")
    code = Path(staging) / CODE
    emitter = TensorflowEmitter((graph_file, weights))
    generate_code(emitter, code)
    generated = import_generated(code, "mmdnn_kit_tensorflow")
    generated.tf = compat.tensorflow_v1()
    generated.load_weights = lambda weight_file=None: emitter.weights_dict  # the IR's, as the emitter read them
    graph = v1.Graph()
    with graph.as_default():
        x, y = generated.KitModel(None)
        if len(y.shape) != len(previous.outputs[0]["shape"]):  # the IR keeps 2-D outputs as (N, 1, 1, C)
            y = v1.reshape(y, [-1] + [int(d) for d in previous.outputs[0]["shape"][1:]])
        with v1.Session(graph=graph) as session:
            session.run(v1.global_variables_initializer())
            signature = v1.saved_model.signature_def_utils.predict_signature_def(
                inputs={previous.inputs[0]["name"]: x}, outputs={previous.outputs[0]["name"]: y})
            builder = v1.saved_model.Builder(str(Path(staging) / ARTIFACT))
            builder.add_meta_graph_and_variables(session, [v1.saved_model.tag_constants.SERVING],
                                                 signature_def_map={"serving_default": signature},
                                                 strip_default_attrs=True)
            builder.save()
    return emitted_manifest(previous, Path(staging) / ARTIFACT, "tensorflow", "TensorflowEmitter", tf.__version__,
                            code=CODE, layout="channels_last")

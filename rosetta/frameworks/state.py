"""A diagnostic job that reports, and on request changes, the process-wide state frameworks keep (threads,
Keras's dtype policy, environment): how the isolation between jobs in a warm worker is checked."""

from __future__ import annotations

import os


def process_job(argument: dict) -> dict:
    """{"report": [NAME, ...]}: which process ran the job and what its environment holds, no framework imported:
    what the pool's own tests need (reuse, retirement, a changed environment, the memory budget), at the cost of a
    bare Python process rather than TensorFlow's import."""
    return {"pid": os.getpid(), "environment": {name: os.environ.get(name) for name in argument.get("report", [])}}


def process_state_job(argument: dict) -> dict:
    """{"threads": N, "keras_policy": NAME, "environment": {NAME: VALUE}}: set those (each optional), then
    report what this process holds, after the change."""
    from rosetta.frameworks.keras import import_keras
    from rosetta.frameworks.tensorflow import import_tensorflow, set_threads

    tf = import_tensorflow()
    keras = import_keras()
    if argument.get("threads"):
        set_threads(argument["threads"])
    if argument.get("keras_policy"):
        keras.config.set_dtype_policy(argument["keras_policy"])
    os.environ.update(argument.get("environment", {}))
    return {"pid": os.getpid(), "intra_op_threads": tf.config.threading.get_intra_op_parallelism_threads(),
            "keras_policy": keras.config.dtype_policy().name, "floatx": keras.config.floatx(),
            "environment": {name: os.environ.get(name) for name in argument.get("report", [])}}

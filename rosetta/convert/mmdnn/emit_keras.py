"""IR -> Keras with MMdnn's Keras emitter: the generated Keras 2 code (kept in the artifact folder) builds
the model with tf-keras (compat.keras_is_tf_keras), which is saved as HDF5 and read back by Keras 3's
legacy-HDF5 loader into a native `.keras` file of built-in layers (rosetta.frameworks.keras runs it, with
safe_mode). The generated code defines its own `my_add` layer for Add, which Keras 3 cannot load (a custom
class); it is rebound to the built-in layers.Add (the same sum). Where Keras 3 rejects a Keras 2 config
(DepthwiseConv2D's `groups`), the tf-keras HDF5 is the artifact (rosetta.frameworks.keras.load_keras2_h5
runs it, its config checked for code first; inference only). The model is NHWC (MMdnn's IR layout),
recorded in the manifest for the runner."""

from __future__ import annotations

from pathlib import Path

from rosetta.convert.mmdnn import compat
from rosetta.convert.mmdnn.emit import emitted_manifest, generate_code, ir_paths
from rosetta.frameworks.base import import_generated
from rosetta.manifest import Manifest

ARTIFACT = "model.keras"
LEGACY_ARTIFACT = "model.h5"  # the tf-keras HDF5 itself, where Keras 3 cannot read it: run through tf-keras
CODE = "kit_keras.py"


def convert(source: Path, staging: Path, options: dict) -> Manifest:
    compat.apply()
    previous, graph_file, weights = ir_paths(source)
    legacy = Path(staging) / "tf-keras.h5"
    with compat.keras_is_tf_keras():
        from mmdnn.conversion.keras.keras2_emitter import Keras2Emitter

        emitter = Keras2Emitter((graph_file, weights))
        generate_code(emitter, Path(staging) / CODE)
        generated = import_generated(Path(staging) / CODE, "mmdnn_kit_keras")
        generated.load_weights_from_file = lambda weight_file=None: emitter.weights_dict
        if hasattr(generated, "my_add"):
            generated.my_add = lambda **kwargs: generated.layers.Add(**kwargs)
        generated.KitModel("weights").save(str(legacy))
    from rosetta.frameworks.keras import import_keras

    keras = import_keras()
    try:
        model = keras.saving.load_model(str(legacy), compile=False, safe_mode=True)
    except (TypeError, ValueError):  # a Keras 2 config Keras 3 rejects (DepthwiseConv2D's `groups`, ...)
        artifact = Path(staging) / LEGACY_ARTIFACT
        legacy.rename(artifact)
        return emitted_manifest(previous, artifact, "keras", "Keras2Emitter", keras.__version__, code=CODE,
                                layout="channels_last")
    legacy.unlink()
    model.save(str(Path(staging) / ARTIFACT))
    return emitted_manifest(previous, Path(staging) / ARTIFACT, "keras", "Keras2Emitter", keras.__version__,
                            code=CODE, layout="channels_last")

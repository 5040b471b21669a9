"""Everything MMdnn 0.3.1 needs to run on this stack (protobuf 7, numpy 1.26, torch 2.x, TensorFlow 2.21,
tf-keras, onnx 1.23), in one place. Each shim says what it bridges. Every MMdnn step runs in a worker process
(rosetta.execution) except the PyTorch parser, which needs the in-memory module: there, `apply()` touches only
MMdnn's own modules (its rebuilt graph_pb2, its emitter base class), and the torchvision stand-in exists only
while MMdnn's parser is imported. The framework shims (`tensorflow_v1`, `keras_is_tf_keras`, `keras_parser`)
are used by the worker steps that need them, the Keras ones only for the duration of a block.
"""

from __future__ import annotations

import ast
import contextlib
import importlib.util
import sys
import types

from rosetta.imports import stand_in_modules

_APPLIED = False


def rebuild_protobuf_module(name: str) -> None:
    """protobuf >= 4 refuses MMdnn's generated `*_pb2` modules (written by protoc 3.x: "Descriptors cannot be
    created directly"). Build the module again from the serialized file descriptor it embeds, with
    protobuf's own builder, and put it in sys.modules before anything imports the original."""
    if name in sys.modules:
        return
    from google.protobuf import descriptor_pool
    from google.protobuf.internal import builder

    spec = importlib.util.find_spec(name)
    tree = ast.parse(open(spec.origin, encoding="utf-8").read())
    serialized = next(ast.literal_eval(node.value.args[0]).encode("latin1") for node in ast.walk(tree)
                      if isinstance(node, ast.keyword) and node.arg == "serialized_pb")
    module = types.ModuleType(name)
    module.__file__ = spec.origin
    module.DESCRIPTOR = descriptor_pool.Default().AddSerializedFile(serialized)
    builder.BuildMessageAndEnumDescriptors(module.DESCRIPTOR, module.__dict__)
    builder.BuildTopDescriptorsAndMessages(module.DESCRIPTOR, name, module.__dict__)
    sys.modules[name] = module


def read_weights_without_pickle() -> None:
    """MMdnn's emitters load IR weights with np.load(allow_pickle=True) on a pickled dict. rosetta's IR keeps
    them in a plain .npz (rosetta.convert.mmdnn.ir); emitters given one read it without pickle."""
    from mmdnn.conversion.common.DataStructure.emitter import Emitter

    from rosetta.frameworks.base import weights_dict

    original = Emitter._load_weights

    def load_weights(self, file_name=None):
        if file_name is None or not str(file_name).endswith(".npz"):
            return original(self, file_name)
        from pathlib import Path

        self.weight_loaded = True
        self.weights_dict = weights_dict(Path(file_name).parent, Path(file_name).name)

    Emitter._load_weights = load_weights


def apply() -> None:
    """Install every shim (idempotent). Framework-specific shims are installed by the step that needs the
    framework, so that a Keras conversion does not import torch and the other way round."""
    global _APPLIED
    if _APPLIED:
        return
    rebuild_protobuf_module("mmdnn.conversion.common.IR.graph_pb2")
    read_weights_without_pickle()
    _APPLIED = True


@contextlib.contextmanager
def torch_parser():
    """MMdnn's pytorch_parser imports torchvision and never uses it; torchvision's PyPI build here is a CUDA
    build that fails to import beside CPU torch (and rosetta does not install it). An empty stand-in
    module exists only while the parser is imported, then is removed again."""
    stand_in = {} if "torchvision" in sys.modules else {"torchvision": types.ModuleType("torchvision")}
    with stand_in_modules(stand_in):
        yield


def tensorflow_v1():
    """MMdnn's TensorFlow emitter writes TF1 code (tf.placeholder, tf.layers.dense, tf.contrib.layers.flatten,
    variables run in a Session); TF 2.21's top-level `tf` has none of them ("module 'tensorflow' has no
    attribute 'placeholder'"), and tf.contrib is gone since TF 2.0. The generated module's global `tf` is
    rebound to this namespace: tf.compat.v1, plus contrib.layers.flatten = tf.compat.v1.layers.flatten (the
    same row-major flatten). It needs graph mode (disable_v2_behavior) and TF_USE_LEGACY_KERAS=1, which the
    step sets before TensorFlow is imported (tf.compat.v1.layers is implemented by tf-keras)."""
    import tensorflow as tf

    v1 = tf.compat.v1

    class TF1(types.ModuleType):
        contrib = types.SimpleNamespace(layers=types.SimpleNamespace(flatten=v1.layers.flatten))

        def __getattr__(self, name):
            return getattr(v1, name)

    return TF1("tensorflow_v1_for_mmdnn")


_KERAS_MODULES = ("keras", "keras.backend", "keras.models", "keras.layers", "keras.applications",
                  "keras.applications.mobilenet")


# Keras 2.2 modules MMdnn's Keras code imports from, gone from tf-keras: the members it takes from them
_KERAS_2_2_MODULES = {"keras.engine": ("Layer", "InputSpec"), "keras.layers.core": ("Lambda",)}


@contextlib.contextmanager
def keras_is_tf_keras():
    """MMdnn's Keras parser, emitter and generated code `import keras` and use Keras 2 API (layer.output_shape,
    _inbound_nodes, ...); `import keras` is Keras 3 here even with TF_USE_LEGACY_KERAS=1 ("'Conv2D' object
    has no attribute 'output_shape'"). While the block runs, `keras` and its submodules are tf-keras (Keras
    2.21), and MMdnn's already-imported Keras modules see it too."""
    import importlib

    import tf_keras

    stand_ins = {name: importlib.import_module("tf_keras" + name[len("keras"):]) for name in _KERAS_MODULES}
    for name, members in _KERAS_2_2_MODULES.items():
        stand_ins[name] = types.ModuleType(name)
        for member in members:
            setattr(stand_ins[name], member, getattr(tf_keras.layers, member))
    with stand_in_modules(stand_ins):
        for name in ("mmdnn.conversion.keras.keras2_parser", "mmdnn.conversion.keras.keras2_graph",
                     "mmdnn.conversion.keras.keras2_emitter"):
            module = sys.modules.get(name)
            if module is not None:
                module._keras = tf_keras
                if hasattr(module, "_K"):
                    module._K = tf_keras.backend
        yield tf_keras


@contextlib.contextmanager
def _patched(owner, name: str, replacement):
    original = owner.__dict__[name]
    setattr(owner, name, replacement(original))
    try:
        yield
    finally:
        setattr(owner, name, original)


@contextlib.contextmanager
def keras_parser():
    """MMdnn's Keras parser on tf-keras 2.21, for the block only (on top of keras_is_tf_keras):
    - Keras2Graph accepts only `type(model) in (Model, Sequential)`; tf-keras loads a Functional ("Keras
      layer of type <class '...Functional'> is not supported"): any tf_keras.Model is accepted;
    - tf-keras' Node.inbound_layers is the bare layer when a node has one input ("'InputLayer' object is
      not iterable"): always a list;
    - tf-keras' Layer.output_shape of an InputLayer is a one-element list of shapes ("'tuple' object cannot
      be interpreted as an integer"): the shape itself;
    - BatchNormalization.axis is a ListWrapper([3]) ("'ListWrapper' object cannot be interpreted as an
      integer"): its single axis while the parser reads it (several axes: refused);
    - a plain ReLU has max_value=None ("AttrValue cannot be of <class 'NoneType'>"): parsed as unbounded,
      and ReLUs with a negative slope or threshold, which MMdnn would drop silently, are refused."""
    with keras_is_tf_keras() as tf_keras:
        from mmdnn.conversion.common.DataStructure.graph import Graph
        from mmdnn.conversion.keras import keras2_graph
        from mmdnn.conversion.keras.keras2_parser import Keras2Parser
        from tf_keras.src.engine import base_layer
        from tf_keras.src.engine import node as node_module

        def graph_init(original):
            def __init__(self, model):
                if not isinstance(model, tf_keras.Model):
                    raise NotImplementedError(f"Keras layer of type {type(model)} is not supported.")  # MMdnn's refusal
                Graph.__init__(self, model)
                self.model = model
            return __init__

        def listed(original):
            return property(lambda self: (lambda r: r if isinstance(r, list) else [r])(original.fget(self)))

        def single_shape(original):
            return property(lambda self: (lambda r: r[0] if isinstance(r, list) and len(r) == 1 else r)(
                original.fget(self)))

        def batchnorm(original):
            def rename_BatchNormalization(self, node):
                layer = node.keras_layer
                axis = layer.axis
                if not isinstance(axis, int):
                    if len(axis) != 1:
                        raise NotImplementedError(f"BatchNormalization over several axes {list(axis)}")
                    layer.axis = int(axis[0])
                try:
                    return original(self, node)
                finally:
                    layer.axis = axis
            return rename_BatchNormalization

        def relu(original):
            def rename_ReLU(self, node):
                layer = node.keras_layer
                if float(getattr(layer, "negative_slope", 0.0) or 0.0) or float(getattr(layer, "threshold", 0.0) or 0.0):
                    raise NotImplementedError("ReLU with a negative slope or threshold (MMdnn would drop them)")
                if layer.max_value is not None:
                    return original(self, node)
                layer.max_value = float("inf")
                try:
                    original(self, node)
                finally:
                    layer.max_value = None
                del self.IR_graph.node[-1].attr["max_value"]
            return rename_ReLU

        with _patched(keras2_graph.Keras2Graph, "__init__", graph_init), \
                _patched(node_module.Node, "inbound_layers", listed), \
                _patched(base_layer.Layer, "output_shape", single_shape), \
                _patched(Keras2Parser, "rename_BatchNormalization", batchnorm), \
                _patched(Keras2Parser, "rename_ReLU", relu):
            yield Keras2Parser

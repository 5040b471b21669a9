"""Everything MMdnn 0.3.1 needs to run on this stack (protobuf 7, numpy 1.26, torch 2.x, TensorFlow 2.21,
tf-keras, onnx 1.23), in one place. Each shim says what it bridges. `apply()` installs them; it is called
only inside the worker processes that run MMdnn conversions (rosetta.worker), so no other part of rosetta
ever sees a patched module.
"""

from __future__ import annotations

import ast
import contextlib
import importlib.util
import sys
import types

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

    from rosetta.convert.mmdnn.ir import weights_dict

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
    added = "torchvision" not in sys.modules
    if added:
        sys.modules["torchvision"] = types.ModuleType("torchvision")
    try:
        yield
    finally:
        if added:
            sys.modules.pop("torchvision", None)

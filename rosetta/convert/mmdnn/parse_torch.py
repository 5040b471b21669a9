"""torch -> MMdnn IR with MMdnn's PyTorch parser (PytorchParser151), driven on an in-memory module.

MMdnn's parser loads a pickled module file and reads the TorchScript graph of torch 1.5. rosetta keeps its
parser (op table, weight layout, NHWC shapes) and replaces only how the graph is obtained, in subclasses
here: the module is given directly (nothing is unpickled), the ONNX-level graph comes from torch's
TorchScript exporter in PRESERVE mode without constant folding (BatchNorm stays a node of its own instead of
being folded into the convolution), and node names, shapes, attributes and the node -> weight-scope map are
read through torch 2.x's graph API instead of parsing the printed graph. This step runs in-process (the
module lives here); `compat.torch_parser()` scopes the only import-time shim it needs.
"""

from __future__ import annotations

import re
from pathlib import Path

from rosetta.convert.mmdnn import compat
from rosetta.convert.mmdnn.ir import save_ir
from rosetta.errors import RosettaError
from rosetta.manifest import Manifest
from rosetta.models.registry import signature_of

ONNX_KIND = {"GRU": "onnx::GRU", "LSTM": "onnx::LSTM", "RNN_TANH": "onnx::RNN", "RNN_RELU": "onnx::RNN"}  # RNNBase.mode


def parser_lacks(kinds: list[str]) -> str:
    """The reason MMdnn's PyTorch parser cannot take these graph ops: its op table has no entry for them (its
    Keras parser does read GRU and LSTM; a Keras 2 source gets MMdnn's own attempt, see parse_keras)."""
    return f"MMdnn's PyTorch parser has no converter for {', '.join(kinds)} (no entry in PytorchParser151.layer_map)"


def _classes():
    """The parser subclasses, defined once MMdnn's PyTorch parser can be imported."""
    with compat.torch_parser():
        from mmdnn.conversion.common.DataStructure.graph import Graph, GraphNode
        from mmdnn.conversion.common.DataStructure.parser import Parser
        from mmdnn.conversion.pytorch.pytorch_graph import PytorchGraph151, PytorchGraphNode151
        from mmdnn.conversion.pytorch.pytorch_parser import PytorchParser151

    class Node(PytorchGraphNode151):
        """A graph node named by rosetta (see `ModuleGraph.names`); attributes read with torch 2.x's API
        (`node[k]` is gone: `node.<kind>(k)`)."""

        def __init__(self, layer, name: str) -> None:
            import torch

            self._node_name, self._name, self._kind, self.version = name, "node", layer.kind(), torch.__version__
            GraphNode.__init__(self, layer)
            self.attrs = {key: getattr(layer, layer.kindOf(key))(key) for key in layer.attributeNames()}

        @property
        def name(self) -> str:
            return self._node_name

    class ModuleGraph(PytorchGraph151):
        def build(self, shape) -> None:
            import torch
            from torch.onnx import TrainingMode
            from torch.onnx._internal.torchscript_exporter.utils import _model_to_graph

            graph, params, _ = _model_to_graph(self.model, (torch.zeros(shape),), do_constant_folding=False,
                                               training=TrainingMode.PRESERVE)
            nodes = list(graph.nodes())
            unsupported = sorted({n.kind() for n in nodes} - set(PytorchParser151.layer_map))
            if unsupported:
                raise RosettaError(f"MMdnn cannot convert {', '.join(unsupported)}: {parser_lacks(unsupported)}; "
                                   f"it supports only {', '.join(sorted(PytorchParser151.layer_map))}")
            names = self.names(nodes, set(params))
            # each IR node's position in the ONNX-level graph and its op: the same graph exported to ONNX
            # (locate_mmdnn.torch_references) gives its reference values
            self.source_nodes = {names[node]: [index, node.kind()] for index, node in enumerate(nodes)}
            for node in nodes:
                name = names[node]
                self.shape_dict[name] = list(node.output().type().sizes())
                self.layer_map[name] = Node(node, name)
                self.layer_name_map[name] = name
                for value in node.inputs():
                    if value.node() in names:
                        self._make_connection(names[value.node()], name)
            Graph.build(self)

        def names(self, nodes, params: set) -> dict:
            """Each node named after the module that owns its weights ("layer1_0_conv1"), or after its op
            ("relu_3"); the weight scope goes into layer_weight_map for the parser's weight lookups."""
            names, used = {}, set()
            for index, node in enumerate(nodes):
                scope = next((v.debugName()[: -len(".weight")] for v in node.inputs()
                              if v.debugName() in params and v.debugName().endswith(".weight")), None)
                base = re.sub(r"\W", "_", scope) if scope else f"{node.kind().split('::')[-1].lower()}_{index}"
                name = base if base not in used else f"{base}_{index}"
                used.add(name)
                names[node] = name
                if scope:
                    self.layer_weight_map[name] = scope
            return names

    class ModuleParser(PytorchParser151):
        def __init__(self, module, input_shape: list) -> None:  # not MMdnn's: no torch.load of a pickle
            Parser.__init__(self)
            self.weight_loaded, self.model = True, module
            self.pytorch_graph = ModuleGraph(module)
            self.build_graph(input_shape)

    return ModuleParser


def convert(source, staging: Path, options: dict) -> Manifest:
    """TorchSource -> IR artifact. MMdnn's parser takes one image input (C, H, W) and one output."""
    import torch

    compat.apply()
    parser_class = _classes()
    # refused before tracing (the recurrent models' token inputs would be refused first, for a lesser reason),
    # but only where the parser's own op table says it cannot take them
    recurrent = {type(m).__name__: ONNX_KIND[m.mode] for m in source.module.modules() if isinstance(m, torch.nn.RNNBase)}
    lacking = sorted(name for name, kind in recurrent.items() if kind not in parser_class.layer_map)
    if lacking:
        raise RosettaError(f"MMdnn cannot convert {', '.join(lacking)}: "
                           f"{parser_lacks(sorted({recurrent[name] for name in lacking}))}")
    if len(source.inputs) != 1 or len(source.inputs[0].shape) != 4 or source.inputs[0].dtype != "float32":
        shapes = ", ".join(f"{s.name} {s.dtype}{list(s.shape)}" for s in source.inputs)
        raise RosettaError(f"MMdnn's PyTorch parser takes one float32 image input (N, C, H, W); this model has {shapes}")
    module = source.module.eval()
    with torch.no_grad():
        parser = parser_class(module, list(source.inputs[0].shape[1:]))
    return save_ir(parser, staging, dict(source.origin), signature_of(source.inputs), signature_of(source.outputs),
                   torch.__version__, "channels_first", parser.pytorch_graph.source_nodes)

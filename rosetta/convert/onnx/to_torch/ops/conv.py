"""ConvTranspose: onnx2torch's reads neither output_shape nor auto_pad; refused by name where given."""

from __future__ import annotations

from rosetta.convert.onnx.to_torch.registry import add_converter
from rosetta.errors import RosettaError


@add_converter("ConvTranspose", 11, wraps=True)
@add_converter("ConvTranspose", 1, wraps=True)
def conv_transpose_without_output_shape(original):
    """onnx2torch's ConvTranspose reads neither output_shape nor auto_pad: refused by name where given."""
    def convert(node, graph):
        if "output_shape" in node.attributes or node.attributes.get("auto_pad", "NOTSET") != "NOTSET":
            raise RosettaError(f"ConvTranspose node {node.name!r} with output_shape or auto_pad cannot be converted to "
                               "torch: onnx2torch's converter computes the size of pads and output_padding alone")
        return original(node, graph)
    return convert

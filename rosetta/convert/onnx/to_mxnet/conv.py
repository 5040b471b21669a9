"""Conv: MXNet's own converter, given the kernel_shape ONNX leaves optional (the importer read it, and raised
KeyError 'kernel' on a graph without it). ConvTranspose -> MXNet's Deconvolution: kernel size and output channels
from the weight (the importer reads a kernel_shape attribute the exporters leave out: "0D deconvolution not
supported"), ONNX's output_padding as Deconvolution's `adj` (which the importer dropped: a silently wrong output
size). Pads that differ at the two ends, output_shape and auto_pad are refused by name: Deconvolution pads both
ends alike and knows no target size."""

from __future__ import annotations

from rosetta.convert.onnx.to_mxnet.registry import add_converter, mxnet_own, symbols, text
from rosetta.errors import RosettaError


@add_converter("Conv", 1)
def conv(attrs, inputs, importer):
    if "kernel_shape" not in attrs:
        weight = importer._params.get(inputs[1].name)
        if weight is None:
            raise RosettaError("Conv without kernel_shape, its weights computed at run time, cannot be converted to "
                               "mxnet: its Convolution needs the kernel size")
        attrs = {**attrs, "kernel_shape": tuple(weight.shape[2:])}
    return mxnet_own("Conv")(attrs, inputs, importer)


@add_converter("ConvTranspose", 1)
def conv_transpose(attrs, inputs, importer):
    weight = importer._params.get(inputs[1].name)
    if weight is None:
        raise RosettaError("ConvTranspose with weights computed at run time cannot be converted to mxnet")
    kernel = tuple(weight.shape[2:])
    spatial, group = len(kernel), int(attrs.get("group", 1))
    pads = tuple(attrs.get("pads", (0,) * 2 * spatial))
    if pads[:spatial] != pads[spatial:] or "output_shape" in attrs or text(attrs.get("auto_pad", "NOTSET")) != "NOTSET":
        raise RosettaError("ConvTranspose with pads that differ at the two ends, output_shape or auto_pad cannot be "
                           "converted to mxnet: its Deconvolution pads both ends alike and takes no output size")
    return symbols().Deconvolution(
        inputs[0], *inputs[1:3], kernel=kernel, stride=tuple(attrs.get("strides", (1,) * spatial)),
        pad=pads[:spatial], adj=tuple(attrs.get("output_padding", (0,) * spatial)),
        dilate=tuple(attrs.get("dilations", (1,) * spatial)), num_filter=weight.shape[1] * group, num_group=group,
        no_bias=len(inputs) < 3), attrs, inputs

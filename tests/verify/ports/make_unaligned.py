"""Keras ports of unaligned_nets.py whose layers do not line up one to one with the PyTorch modules (split
padding, a fused activation, BatchNorm folded into the conv, a transformer block as one layer, a bottleneck with
its stride elsewhere); each correctly, and with the bugs a person makes writing them.

    python make_unaligned.py FOLDER     (FOLDER holds unaligned_nets.py and unaligned_layers.py; run in a
                                         process of its own: TensorFlow and PyTorch in one process is slow to tear down)
"""

from __future__ import annotations

import sys
from pathlib import Path

import numpy as np

FOLDER = Path(sys.argv[1])
sys.path.insert(0, str(FOLDER))
import unaligned_nets  # noqa: E402


def state(module) -> dict:
    return {k: v.detach().numpy() for k, v in module.state_dict().items()}


def hwc_rows(weight, channels, height, width):
    """A Dense weight (out, C*H*W in NCHW flatten order) for an NHWC flatten: its columns in H, W, C order."""
    order = np.arange(channels * height * width).reshape(channels, height, width).transpose(1, 2, 0).ravel()
    return weight[:, order]


def hwio(weight):
    return weight.transpose(2, 3, 1, 0)


def split_padding(keras) -> None:
    """a. ZeroPadding2D + 'valid' Conv2D for each PyTorch conv with padding=1."""
    w = state(unaligned_nets.padded_cnn())

    def port(name, flatten_bug=False):
        image = keras.Input((16, 16, 3), name="input_1")
        x = keras.layers.ZeroPadding2D(1, name="pad1")(image)
        x = keras.layers.Conv2D(8, 3, name="conv1")(x)
        x = keras.layers.BatchNormalization(epsilon=1e-5, name="bn1")(x)
        x = keras.layers.ReLU(name="relu1")(x)
        x = keras.layers.MaxPooling2D(2, name="pool")(x)
        x = keras.layers.ZeroPadding2D(1, name="pad2")(x)
        x = keras.layers.Conv2D(16, 3, strides=2, name="conv2")(x)
        x = keras.layers.ReLU(name="relu2")(x)
        x = keras.layers.Flatten(name="flatten")(x)
        model = keras.Model(image, keras.layers.Dense(10, name="fc")(x))
        model.get_layer("conv1").set_weights([hwio(w["conv1.weight"]), w["conv1.bias"]])
        model.get_layer("bn1").set_weights([w["bn1.weight"], w["bn1.bias"], w["bn1.running_mean"],
                                            w["bn1.running_var"]])
        model.get_layer("conv2").set_weights([hwio(w["conv2.weight"]), w["conv2.bias"]])
        dense = w["fc.weight"] if flatten_bug else hwc_rows(w["fc.weight"], 16, 4, 4)
        model.get_layer("fc").set_weights([dense.T, w["fc.bias"]])
        model.save(FOLDER / f"{name}.keras")

    port("split-padding")
    port("split-padding-flatten", flatten_bug=True)  # Dense rows in NCHW order after an NHWC Flatten


def fused_tanh(keras) -> None:
    """b. Conv1D(activation="tanh") for Conv1d + torch.tanh, channels-last."""
    w = state(unaligned_nets.conv_tanh())

    def port(name, epsilon=1e-5, flip=False):
        signal = keras.Input((12, 4), name="signal")
        x = keras.layers.Conv1D(8, 3, padding="same", activation="tanh", name="conv")(signal)
        x = keras.layers.LayerNormalization(epsilon=epsilon, name="norm")(x)
        x = keras.layers.Flatten(name="flatten")(x)  # (N, 12, 8) flattens as PyTorch's (N, 12, 8) does
        model = keras.Model(signal, keras.layers.Dense(3, name="fc")(x))
        kernel = w["conv.weight"][:, :, ::-1] if flip else w["conv.weight"]
        model.get_layer("conv").set_weights([kernel.transpose(2, 1, 0), w["conv.bias"]])
        model.get_layer("norm").set_weights([w["norm.weight"], w["norm.bias"]])
        model.get_layer("fc").set_weights([w["fc.weight"].T, w["fc.bias"]])
        model.save(FOLDER / f"{name}.keras")

    port("fused-tanh")
    port("fused-tanh-epsilon", epsilon=1e-3)  # Keras's default LayerNormalization epsilon, 1e-5 in PyTorch
    port("fused-tanh-flipped", flip=True)  # the kernel reversed in time (convolution against correlation)


def folded_bn(keras) -> None:
    """c. Each BatchNorm folded into its Conv2D, each ReLU fused: 9 PyTorch modules in 5 Keras layers."""
    w = state(unaligned_nets.bn_cnn())

    def fold(conv, bn, epsilon=1e-5):
        scale = w[f"{bn}.weight"] / np.sqrt(w[f"{bn}.running_var"] + epsilon)
        kernel = hwio(w[f"{conv}.weight"] * scale[:, None, None, None])
        return [kernel, (w[f"{conv}.bias"] - w[f"{bn}.running_mean"]) * scale + w[f"{bn}.bias"]]

    def port(name, fold_epsilon=1e-5, head_bias=True, activation="relu", same_padding=False):
        image = keras.Input((16, 16, 3), name="input_1")
        x = keras.layers.Conv2D(8, 3, padding="same", activation="relu", name="conv1")(image)
        x = keras.layers.MaxPooling2D(2, name="pool")(x)
        if not same_padding:
            x = keras.layers.ZeroPadding2D(1, name="pad2")(x)
        x = keras.layers.Conv2D(16, 3, strides=2, padding="same" if same_padding else "valid",
                                activation=activation, name="conv2")(x)
        x = keras.layers.Flatten(name="flatten")(x)
        model = keras.Model(image, keras.layers.Dense(10, name="fc")(x))
        model.get_layer("conv1").set_weights(fold("conv1", "bn1", fold_epsilon))
        model.get_layer("conv2").set_weights(fold("conv2", "bn2"))
        bias = w["fc.bias"] if head_bias else np.zeros_like(w["fc.bias"])
        model.get_layer("fc").set_weights([hwc_rows(w["fc.weight"], 16, 4, 4).T, bias])
        model.save(FOLDER / f"{name}.keras")

    port("folded-bn")
    port("folded-bn-epsilon", fold_epsilon=1e-3)  # bn1 folded with Keras's epsilon
    port("folded-bn-bias", head_bias=False)  # the head's bias not copied
    port("folded-bn-activation", activation="elu")  # conv2's fused activation: elu for ReLU
    port("folded-bn-padding", same_padding=True)  # 'same' at stride 2 pads (0, 1), PyTorch 1 on each side


def encoder_blocks(keras) -> None:
    """d. Each PyTorch Block (11 modules, attention in forward) as one EncoderBlock layer."""
    import unaligned_layers

    w = state(unaligned_nets.encoder())
    hidden, heads = unaligned_nets.HIDDEN, unaligned_nets.HEADS
    size = hidden // heads

    def port(name, epsilons=(1e-5, 1e-5), query_untransposed=False):
        tokens = keras.Input((unaligned_nets.SEQUENCE,), dtype="int32", name="tokens")
        x = keras.layers.Embedding(unaligned_nets.VOCABULARY, hidden, name="embed")(tokens)
        x = unaligned_layers.PositionEmbedding(unaligned_nets.SEQUENCE, hidden, name="position")(x)
        blocks = [unaligned_layers.EncoderBlock(hidden, heads, 2 * hidden, epsilon, name=f"block_{i}")
                  for i, epsilon in enumerate(epsilons)]
        for block in blocks:
            x = block(x)
        model = keras.Model(tokens, x)
        model.get_layer("embed").set_weights([w["embed.weight"]])
        model.get_layer("position").set_weights([w["position.weight"]])
        for i, block in enumerate(blocks):
            p = f"blocks.{i}."
            attention = block.attention
            for dense, module in ((attention.query_dense, "query"), (attention.key_dense, "key"),
                                  (attention.value_dense, "value")):
                weight = w[p + module + ".weight"]  # (out, in): Keras's kernel is (in, heads, size)
                bug = query_untransposed and i == 0 and module == "query"
                kernel = (weight if bug else weight.T).reshape(hidden, heads, size)
                dense.set_weights([kernel, w[p + module + ".bias"].reshape(heads, size)])
            attention.output_dense.set_weights([w[p + "out.weight"].T.reshape(heads, size, hidden), w[p + "out.bias"]])
            for norm in ("norm1", "norm2"):
                getattr(block, norm).set_weights([w[p + norm + ".weight"], w[p + norm + ".bias"]])
            for dense in ("fc1", "fc2"):
                getattr(block, dense).set_weights([w[p + dense + ".weight"].T, w[p + dense + ".bias"]])
        model.save(FOLDER / f"{name}.keras")

    port("encoder-block")
    port("encoder-block-epsilon", epsilons=(1e-5, 1e-3))  # block 1's layer-norm epsilon, a setting of the block
    port("encoder-block-query", query_untransposed=True)  # block 0's query kernel copied without its transpose


def bottleneck(keras) -> None:
    """e. The bottleneck with the stride on the 3x3 (v1.5, as torchvision) or on the first 1x1 (v1, as
    keras.applications' ResNet50)."""
    w = state(unaligned_nets.bottleneck())

    def port(name, stride_on_1x1=False):
        x = keras.Input((8, 8, 6), name="x")
        y = keras.layers.Conv2D(4, 1, strides=2 if stride_on_1x1 else 1, use_bias=False, name="conv1")(x)
        y = keras.layers.BatchNormalization(epsilon=1e-5, name="bn1")(y)
        y = keras.layers.ReLU(name="relu1")(y)
        if stride_on_1x1:
            y = keras.layers.Conv2D(4, 3, padding="same", use_bias=False, name="conv2")(y)
        else:
            y = keras.layers.ZeroPadding2D(1, name="pad2")(y)
            y = keras.layers.Conv2D(4, 3, strides=2, use_bias=False, name="conv2")(y)
        y = keras.layers.BatchNormalization(epsilon=1e-5, name="bn2")(y)
        y = keras.layers.ReLU(name="relu2")(y)
        y = keras.layers.Conv2D(16, 1, use_bias=False, name="conv3")(y)
        y = keras.layers.BatchNormalization(epsilon=1e-5, name="bn3")(y)
        shortcut = keras.layers.Conv2D(16, 1, strides=2, use_bias=False, name="downsample_conv")(x)
        shortcut = keras.layers.BatchNormalization(epsilon=1e-5, name="downsample_bn")(shortcut)
        model = keras.Model(x, keras.layers.ReLU(name="relu")(keras.layers.Add(name="add")([y, shortcut])))
        for conv, bn in (("conv1", "bn1"), ("conv2", "bn2"), ("conv3", "bn3"), ("downsample.0", "downsample.1")):
            keras_conv, keras_bn = ("downsample_conv", "downsample_bn") if conv.startswith("downsample") else (conv, bn)
            model.get_layer(keras_conv).set_weights([hwio(w[conv + ".weight"])])
            model.get_layer(keras_bn).set_weights([w[bn + ".weight"], w[bn + ".bias"], w[bn + ".running_mean"],
                                                   w[bn + ".running_var"]])
        model.save(FOLDER / f"{name}.keras")

    port("bottleneck-v15")
    port("bottleneck-v1", stride_on_1x1=True)


if __name__ == "__main__":
    import keras

    for build in (split_padding, fused_tanh, folded_bn, encoder_blocks, bottleneck):
        build(keras)

"""Keras ports of more_nets.py, written by hand as a person ports a model (weights copied from the PyTorch
factories); each correctly, and with the bugs a person makes writing them.

    python make_more.py FOLDER [NAME...]     (FOLDER holds more_nets.py and more_layers.py; run in a process of
                                              its own: TensorFlow and PyTorch in one process is slow to tear down)
"""

from __future__ import annotations

import sys
from pathlib import Path

import numpy as np

FOLDER = Path(sys.argv[1])
sys.path.insert(0, str(FOLDER))
import more_nets  # noqa: E402


def state(module) -> dict:
    return {k: v.detach().numpy() for k, v in module.state_dict().items()}


def hwio(weight):
    return weight.transpose(2, 3, 1, 0)


def bn(w, name):
    return [w[name + ".weight"], w[name + ".bias"], w[name + ".running_mean"], w[name + ".running_var"]]


def mobile(keras) -> None:
    w = state(more_nets.mobile_block())

    def port(name, relu6=True, epsilon=1e-5, swap_hw=False):
        image = keras.Input((8, 8, 4), name="x")
        x = keras.layers.DepthwiseConv2D(3, padding="same", use_bias=False, name="depthwise")(image)
        x = keras.layers.BatchNormalization(epsilon=epsilon, name="bn1")(x)
        x = keras.layers.ReLU(max_value=6.0 if relu6 else None, name="relu1")(x)
        x = keras.layers.Conv2D(8, 1, use_bias=False, name="pointwise")(x)
        x = keras.layers.BatchNormalization(epsilon=1e-5, name="bn2")(x)
        x = keras.layers.ReLU(max_value=6.0, name="relu2")(x)
        x = keras.layers.GlobalAveragePooling2D(name="pool")(x)
        model = keras.Model(image, keras.layers.Dense(3, name="fc")(x))
        # depthwise (C, 1, kh, kw) -> Keras (kh, kw, C, 1)
        kernel = w["depthwise.weight"].transpose(3, 2, 0, 1) if swap_hw else w["depthwise.weight"].transpose(2, 3, 0, 1)
        model.get_layer("depthwise").set_weights([kernel])
        model.get_layer("bn1").set_weights(bn(w, "bn1"))
        model.get_layer("pointwise").set_weights([hwio(w["pointwise.weight"])])
        model.get_layer("bn2").set_weights(bn(w, "bn2"))
        model.get_layer("fc").set_weights([w["fc.weight"].T, w["fc.bias"]])
        model.save(FOLDER / f"{name}.keras")

    port("mobile")
    port("mobile-relu", relu6=False)  # ReLU for the first ReLU6
    port("mobile-epsilon", epsilon=1e-3)  # Keras's BatchNormalization default
    port("mobile-kernel", swap_hw=True)  # the depthwise kernel's height and width swapped


def squeeze_excite(keras) -> None:
    w = state(more_nets.squeeze_excite())

    def port(name, gate="sigmoid", expand_bias=True):
        image = keras.Input((8, 8, 3), name="x")
        x = keras.layers.Conv2D(8, 3, padding="same", activation="relu", name="conv")(image)
        s = keras.layers.GlobalAveragePooling2D(keepdims=True, name="squeeze")(x)
        s = keras.layers.Conv2D(2, 1, activation="relu", name="reduce")(s)
        s = keras.layers.Conv2D(8, 1, activation=gate, name="expand")(s)
        x = keras.layers.Multiply(name="scale")([x, s])
        x = keras.layers.GlobalAveragePooling2D(name="pool")(x)
        model = keras.Model(image, keras.layers.Dense(3, name="fc")(x))
        model.get_layer("conv").set_weights([hwio(w["conv.weight"]), w["conv.bias"]])
        model.get_layer("reduce").set_weights([hwio(w["reduce.weight"]), w["reduce.bias"]])
        bias = w["expand.bias"] if expand_bias else np.zeros_like(w["expand.bias"])
        model.get_layer("expand").set_weights([hwio(w["expand.weight"]), bias])
        model.get_layer("fc").set_weights([w["fc.weight"].T, w["fc.bias"]])
        model.save(FOLDER / f"{name}.keras")

    port("se")
    port("se-hard-sigmoid", gate="hard_sigmoid")  # the gate's sigmoid as hard_sigmoid
    port("se-bias", expand_bias=False)  # the expand conv's bias not copied


def bilstm(keras) -> None:
    w = state(more_nets.bilstm())

    def lstm_weights(suffix):
        return [w[f"rnn.weight_ih_l0{suffix}"].T, w[f"rnn.weight_hh_l0{suffix}"].T,
                w[f"rnn.bias_ih_l0{suffix}"] + w[f"rnn.bias_hh_l0{suffix}"]]

    def port(name, swapped=False, final_state=False):
        tokens = keras.Input((6,), dtype="int32", name="tokens")
        x = keras.layers.Embedding(30, 6, name="embed")(tokens)
        rnn = keras.layers.Bidirectional(keras.layers.LSTM(5, return_sequences=not final_state), name="rnn")
        x = rnn(x)
        if not final_state:  # PyTorch's out[:, -1]: the forward half's last step, the backward half's first
            x = keras.layers.Cropping1D((5, 0), name="last")(x)
            x = keras.layers.Flatten(name="flatten")(x)
        model = keras.Model(tokens, keras.layers.Dense(2, name="fc")(x))
        model.get_layer("embed").set_weights([w["embed.weight"]])
        forward, backward = lstm_weights(""), lstm_weights("_reverse")
        rnn.set_weights(backward + forward if swapped else forward + backward)
        model.get_layer("fc").set_weights([w["fc.weight"].T, w["fc.bias"]])
        model.save(FOLDER / f"{name}.keras")

    port("bilstm")
    port("bilstm-swapped", swapped=True)  # the forward and backward halves' weights swapped
    port("bilstm-final", final_state=True)  # the backward half's final state for PyTorch's out[:, -1]


def residual(keras) -> None:
    w = state(more_nets.residual_projection())

    def port(name, same_padding=False, shortcut_epsilon=1e-5):
        x = keras.Input((8, 8, 4), name="x")
        if same_padding:
            y = keras.layers.Conv2D(8, 3, strides=2, padding="same", use_bias=False, name="conv1")(x)
        else:
            y = keras.layers.ZeroPadding2D(1, name="pad1")(x)
            y = keras.layers.Conv2D(8, 3, strides=2, use_bias=False, name="conv1")(y)
        y = keras.layers.BatchNormalization(epsilon=1e-5, name="bn1")(y)
        y = keras.layers.ReLU(name="relu1")(y)
        y = keras.layers.Conv2D(8, 3, padding="same", use_bias=False, name="conv2")(y)
        y = keras.layers.BatchNormalization(epsilon=1e-5, name="bn2")(y)
        s = keras.layers.Conv2D(8, 1, strides=2, use_bias=False, name="shortcut_conv")(x)
        s = keras.layers.BatchNormalization(epsilon=shortcut_epsilon, name="shortcut_bn")(s)
        model = keras.Model(x, keras.layers.ReLU(name="relu")(keras.layers.Add(name="add")([y, s])))
        for keras_name, name_ in (("conv1", "conv1"), ("conv2", "conv2"), ("shortcut_conv", "shortcut.0")):
            model.get_layer(keras_name).set_weights([hwio(w[name_ + ".weight"])])
        for keras_name, name_ in (("bn1", "bn1"), ("bn2", "bn2"), ("shortcut_bn", "shortcut.1")):
            model.get_layer(keras_name).set_weights(bn(w, name_))
        model.save(FOLDER / f"{name}.keras")

    port("residual")
    port("residual-padding", same_padding=True)  # 'same' at stride 2 pads (0, 1)
    port("residual-epsilon", shortcut_epsilon=1e-3)  # the shortcut's BatchNormalization at Keras's default


def temporal(keras) -> None:
    w = state(more_nets.temporal())

    def port(name, dilation=2, padding="causal"):
        signal = keras.Input((16, 3), name="signal")
        x = keras.layers.Conv1D(6, 3, padding="causal", activation="relu", name="conv1")(signal)
        x = keras.layers.Conv1D(6, 3, padding=padding, dilation_rate=dilation, activation="relu", name="conv2")(x)
        x = keras.layers.Cropping1D((15, 0), name="last")(x)
        x = keras.layers.Flatten(name="flatten")(x)
        model = keras.Model(signal, keras.layers.Dense(2, name="fc")(x))
        for conv in ("conv1", "conv2"):
            model.get_layer(conv).set_weights([w[conv + ".weight"].transpose(2, 1, 0), w[conv + ".bias"]])
        model.get_layer("fc").set_weights([w["fc.weight"].T, w["fc.bias"]])
        model.save(FOLDER / f"{name}.keras")

    port("temporal")
    port("temporal-dilation", dilation=1)  # conv2's dilation left out
    port("temporal-same", padding="same")  # 'same' (centred) for the causal left padding


def group_norm(keras) -> None:
    w = state(more_nets.group_norm())

    def port(name, epsilon=1e-5, groups=2):
        image = keras.Input((8, 8, 3), name="x")
        x = keras.layers.Conv2D(8, 3, padding="same", name="conv1")(image)
        x = keras.layers.GroupNormalization(groups=groups, epsilon=epsilon, name="norm")(x)
        x = keras.layers.Activation("silu", name="act")(x)
        x = keras.layers.Conv2D(4, 3, padding="same", name="conv2")(x)
        x = keras.layers.GlobalAveragePooling2D(name="pool")(x)
        model = keras.Model(image, keras.layers.Dense(3, name="fc")(x))
        for conv in ("conv1", "conv2"):
            model.get_layer(conv).set_weights([hwio(w[conv + ".weight"]), w[conv + ".bias"]])
        model.get_layer("norm").set_weights([w["norm.weight"], w["norm.bias"]])
        model.get_layer("fc").set_weights([w["fc.weight"].T, w["fc.bias"]])
        model.save(FOLDER / f"{name}.keras")

    port("group-norm")
    port("group-norm-epsilon", epsilon=1e-3)  # Keras's GroupNormalization default
    port("group-norm-groups", groups=4)  # 4 groups for PyTorch's 2


def bag_of_words(keras) -> None:
    import more_layers

    w = state(more_nets.bag_of_words())

    def port(name, exact_gelu=False, epsilon=1e-5, mask_zero=False):
        tokens = keras.Input((7,), dtype="int32", name="tokens")
        x = keras.layers.Embedding(40, 8, mask_zero=mask_zero, name="embed")(tokens)
        x = keras.layers.GlobalAveragePooling1D(name="mean")(x)
        x = keras.layers.Dense(16, activation="gelu" if exact_gelu else None, name="fc1")(x)
        if not exact_gelu:
            x = more_layers.GeluTanh(name="act")(x)
        x = keras.layers.LayerNormalization(epsilon=epsilon, name="norm")(x)
        model = keras.Model(tokens, keras.layers.Dense(3, name="fc2")(x))
        model.get_layer("embed").set_weights([w["embed.weight"]])
        for dense in ("fc1", "fc2"):
            model.get_layer(dense).set_weights([w[dense + ".weight"].T, w[dense + ".bias"]])
        model.get_layer("norm").set_weights([w["norm.weight"], w["norm.bias"]])
        model.save(FOLDER / f"{name}.keras")

    port("bag")
    port("bag-gelu", exact_gelu=True)  # Keras's "gelu" (exact erf) for nn.GELU(approximate="tanh")
    port("bag-epsilon", epsilon=1e-3)  # Keras's LayerNormalization default
    port("bag-mask", mask_zero=True)  # mask_zero: the mean leaves token 0 out, PyTorch's counts it


def unet(keras) -> None:
    w = state(more_nets.tiny_unet())

    def port(name, skip_first=False, interpolation="nearest"):
        image = keras.Input((8, 8, 3), name="x")
        skip = keras.layers.Conv2D(4, 3, padding="same", activation="relu", name="down")(image)
        x = keras.layers.MaxPooling2D(2, name="pool")(skip)
        x = keras.layers.Conv2D(6, 3, padding="same", activation="relu", name="middle")(x)
        up = keras.layers.UpSampling2D(2, interpolation=interpolation, name="up")(x)
        x = keras.layers.Concatenate(name="concat")([skip, up] if skip_first else [up, skip])
        model = keras.Model(image, keras.layers.Conv2D(2, 3, padding="same", name="head")(x))
        for conv in ("down", "middle", "head"):
            model.get_layer(conv).set_weights([hwio(w[conv + ".weight"]), w[conv + ".bias"]])
        model.save(FOLDER / f"{name}.keras")

    port("unet")
    port("unet-concat", skip_first=True)  # concatenated [skip, up]; the head's kernel copied for [up, skip]
    port("unet-bilinear", interpolation="bilinear")  # bilinear for nearest upsampling


def prelu(keras) -> None:
    w = state(more_nets.prelu_mlp())

    def port(name, copy_alpha=True, shared_alpha=False):
        x = keras.Input((6,), name="x")
        y = keras.layers.Dense(10, name="fc1")(x)
        y = keras.layers.PReLU(name="act1")(y)
        y = keras.layers.Dense(10, name="fc2")(y)
        y = keras.layers.PReLU(name="act2")(y)
        model = keras.Model(x, keras.layers.Dense(2, name="fc3")(y))
        for dense in ("fc1", "fc2", "fc3"):
            model.get_layer(dense).set_weights([w[dense + ".weight"].T, w[dense + ".bias"]])
        if copy_alpha:
            model.get_layer("act1").set_weights([w["act1.weight"]])
            model.get_layer("act2").set_weights([w["act1.weight"] if shared_alpha else w["act2.weight"]])
        model.save(FOLDER / f"{name}.keras")

    port("prelu")
    port("prelu-alpha", copy_alpha=False)  # the slopes left at Keras's initial zeros: ReLU
    port("prelu-shared", shared_alpha=True)  # act1's slopes copied into act2 as well


def average(keras) -> None:
    w = state(more_nets.padded_average())

    def port(name, same=False):
        image = keras.Input((8, 8, 3), name="x")
        x = keras.layers.Conv2D(6, 3, padding="same", name="conv1")(image)
        if same:
            x = keras.layers.AveragePooling2D(3, strides=1, padding="same", name="pool")(x)
        else:  # PyTorch counts the padded zeros (count_include_pad=True): pad with zeros, then a 'valid' pool
            x = keras.layers.ZeroPadding2D(1, name="pad")(x)
            x = keras.layers.AveragePooling2D(3, strides=1, name="pool")(x)
        model = keras.Model(image, keras.layers.Conv2D(2, 3, padding="same", name="conv2")(x))
        for conv in ("conv1", "conv2"):
            model.get_layer(conv).set_weights([hwio(w[conv + ".weight"]), w[conv + ".bias"]])
        model.save(FOLDER / f"{name}.keras")

    port("average")
    port("average-same", same=True)  # 'same' averages over the real values only (count_include_pad=False)


def decoder(keras) -> None:
    w = state(more_nets.decoder())

    def port(name, flip=False, relu=True):
        image = keras.Input((6, 6, 4), name="x")
        x = keras.layers.Conv2D(6, 3, padding="same", activation="relu", name="conv")(image)
        x = keras.layers.Conv2DTranspose(3, 4, strides=2, padding="same", activation="relu" if relu else None,
                                         name="deconv")(x)
        model = keras.Model(image, keras.layers.Conv2D(2, 3, padding="same", name="head")(x))
        model.get_layer("conv").set_weights([hwio(w["conv.weight"]), w["conv.bias"]])
        kernel = w["deconv.weight"].transpose(2, 3, 1, 0)  # (in, out, kh, kw) -> Keras (kh, kw, out, in)
        model.get_layer("deconv").set_weights([kernel[::-1, ::-1] if flip else kernel, w["deconv.bias"]])
        model.get_layer("head").set_weights([hwio(w["head.weight"]), w["head.bias"]])
        model.save(FOLDER / f"{name}.keras")

    port("decoder")
    port("decoder-flipped", flip=True)  # the transposed conv's kernel flipped in space
    port("decoder-relu", relu=False)  # the ReLU after the transposed conv left out


BUILDS = {"mobile": mobile, "se": squeeze_excite, "bilstm": bilstm, "residual": residual, "temporal": temporal,
          "group-norm": group_norm, "bag": bag_of_words, "unet": unet, "prelu": prelu, "average": average,
          "decoder": decoder}

if __name__ == "__main__":
    import keras

    for wanted in sys.argv[2:] or BUILDS:
        BUILDS[wanted](keras)

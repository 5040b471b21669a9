"""Hand ports for the tests, written as a person ports a model: the PyTorch models of torch_nets.py ported to
Keras and to MXNet Gluon, and a Keras CNN ported to PyTorch; each correctly, and with one classic porting bug.

    python make_ports.py FOLDER keras|gluon     (FOLDER holds torch_nets.py; run in a process of its own)
"""

from __future__ import annotations

import sys
from pathlib import Path

import numpy as np

FOLDER = Path(sys.argv[1])
sys.path.insert(0, str(FOLDER))
import torch_nets  # noqa: E402

GRU_TO_KERAS = (1, 0, 2)  # PyTorch gates r, z, n -> Keras z, r, h


def blocks(matrix, order):
    parts = np.split(np.asarray(matrix), len(order), axis=0)
    return np.concatenate([parts[i] for i in order], axis=0)


def state(module):
    return {k: v.detach().numpy() for k, v in module.state_dict().items()}


def hwc_rows(weight, channels, height, width):
    """A Dense weight (out, C*H*W in NCHW flatten order) for an NHWC flatten: its columns in H, W, C order."""
    order = np.arange(channels * height * width).reshape(channels, height, width).transpose(1, 2, 0).ravel()
    return weight[:, order]


def keras_ports() -> None:
    import keras

    # PyTorch CNN -> Keras, NHWC, the input renamed
    w = state(torch_nets.cnn())

    def cnn(name, epsilon=1e-5, same_padding=False, flatten_bug=False, swap_hw=False):
        image = keras.Input((16, 16, 3), name="input_1")
        x = keras.layers.Conv2D(8, 3, padding="same", name="conv1")(image)
        x = keras.layers.BatchNormalization(epsilon=epsilon, name="bn1")(x)
        x = keras.layers.ReLU(name="relu1")(x)
        x = keras.layers.MaxPooling2D(2, name="pool")(x)
        if not same_padding:
            x = keras.layers.ZeroPadding2D(1, name="pad2")(x)
        x = keras.layers.Conv2D(16, 3, strides=2, padding="same" if same_padding else "valid", name="conv2")(x)
        x = keras.layers.ReLU(name="relu2")(x)
        x = keras.layers.Flatten(name="flatten")(x)
        model = keras.Model(image, keras.layers.Dense(10, name="fc")(x))
        kernel = (3, 2, 1, 0) if swap_hw else (2, 3, 1, 0)
        model.get_layer("conv1").set_weights([w["conv1.weight"].transpose(kernel), w["conv1.bias"]])
        model.get_layer("bn1").set_weights([w["bn1.weight"], w["bn1.bias"], w["bn1.running_mean"], w["bn1.running_var"]])
        model.get_layer("conv2").set_weights([w["conv2.weight"].transpose(2, 3, 1, 0), w["conv2.bias"]])
        dense = w["fc.weight"] if flatten_bug else hwc_rows(w["fc.weight"], 16, 4, 4)
        model.get_layer("fc").set_weights([dense.T, w["fc.bias"]])
        model.save(FOLDER / f"{name}.keras")

    cnn("keras-cnn")
    cnn("keras-cnn-flatten", flatten_bug=True)
    cnn("keras-cnn-padding", same_padding=True)
    cnn("keras-cnn-epsilon", epsilon=1e-3)
    cnn("keras-cnn-kernel", swap_hw=True)

    # PyTorch GRU and LSTM text models -> Keras, int32 tokens
    def recurrent(name, kind, gates=GRU_TO_KERAS, reset_after=True, lstm_bias_bug=False):
        w = state(torch_nets.gru() if kind == "gru" else torch_nets.lstm())
        tokens = keras.Input((10,), dtype="int32", name="tokens_in")
        x = keras.layers.Embedding(100, 8, name="embed")(tokens)
        layer = keras.layers.GRU(12, reset_after=reset_after, name="rnn") if kind == "gru" else \
            keras.layers.LSTM(12, name="rnn")
        model = keras.Model(tokens, keras.layers.Dense(2, name="fc")(layer(x)))
        model.get_layer("embed").set_weights([w["embed.weight"]])
        if kind == "gru":
            bias = np.stack([blocks(w["rnn.bias_ih_l0"], gates), blocks(w["rnn.bias_hh_l0"], gates)]) if reset_after \
                else blocks(w["rnn.bias_ih_l0"] + w["rnn.bias_hh_l0"], gates)
            model.get_layer("rnn").set_weights([blocks(w["rnn.weight_ih_l0"], gates).T,
                                                blocks(w["rnn.weight_hh_l0"], gates).T, bias])
        else:
            bias = w["rnn.bias_ih_l0"] if lstm_bias_bug else w["rnn.bias_ih_l0"] + w["rnn.bias_hh_l0"]
            model.get_layer("rnn").set_weights([w["rnn.weight_ih_l0"].T, w["rnn.weight_hh_l0"].T, bias])
        model.get_layer("fc").set_weights([w["fc.weight"].T, w["fc.bias"]])
        model.save(FOLDER / f"{name}.keras")

    recurrent("keras-gru", "gru")
    recurrent("keras-gru-gates", "gru", gates=(0, 1, 2))
    recurrent("keras-gru-reset", "gru", reset_after=False)
    recurrent("keras-lstm", "lstm")
    recurrent("keras-lstm-bias", "lstm", lstm_bias_bug=True)

    # a Keras CNN (NHWC, Keras's epsilon 1e-3) as the reference, and its ports to PyTorch (torch_nets.torch_port*)
    keras.utils.set_random_seed(0)
    image = keras.Input((16, 16, 3), name="image")
    x = keras.layers.Conv2D(8, 3, padding="same", name="conv1")(image)
    x = keras.layers.BatchNormalization(name="bn1", moving_mean_initializer="random_uniform",
                                        moving_variance_initializer="ones")(x)
    x = keras.layers.ReLU(name="relu1")(x)
    x = keras.layers.MaxPooling2D(2, name="pool")(x)
    x = keras.layers.ZeroPadding2D(1, name="pad2")(x)
    x = keras.layers.Conv2D(16, 3, strides=2, name="conv2")(x)
    x = keras.layers.ReLU(name="relu2")(x)
    x = keras.layers.Flatten(name="flatten")(x)
    reference = keras.Model(image, keras.layers.Dense(10, name="fc")(x))
    reference.save(FOLDER / "keras-reference.keras")
    k = {layer.name: layer.get_weights() for layer in reference.layers}
    ported = {"conv1.weight": k["conv1"][0].transpose(3, 2, 0, 1), "conv1.bias": k["conv1"][1],
              "bn1.weight": k["bn1"][0], "bn1.bias": k["bn1"][1], "bn1.running_mean": k["bn1"][2],
              "bn1.running_var": k["bn1"][3], "bn1.num_batches_tracked": np.array(0),
              "conv2.weight": k["conv2"][0].transpose(3, 2, 0, 1), "conv2.bias": k["conv2"][1],
              "fc.bias": k["fc"][1]}
    columns = k["fc"][0].T  # (10, 256) in the NHWC flatten's order: H, W, C
    to_nchw = np.arange(256).reshape(4, 4, 16).transpose(2, 0, 1).ravel()  # the NCHW flatten of the same map
    np.savez(FOLDER / "torch-port.npz", **ported, **{"fc.weight": columns[:, to_nchw]})
    np.savez(FOLDER / "torch-port-flatten.npz", **ported, **{"fc.weight": columns})


def gluon_ports() -> None:
    from rosetta.frameworks.mxnet import import_mxnet

    mx = import_mxnet()
    nn = mx.gluon.nn
    w = state(torch_nets.cnn())

    def cnn(name, epsilon=1e-5, swap_hw=False):
        net = nn.HybridSequential()
        net.add(nn.Conv2D(8, 3, padding=1, in_channels=3), nn.BatchNorm(epsilon=epsilon, in_channels=8),
                nn.Activation("relu"), nn.MaxPool2D(2), nn.Conv2D(16, 3, strides=2, padding=1, in_channels=8),
                nn.Activation("relu"), nn.Flatten(), nn.Dense(10, in_units=256))
        net.initialize()
        conv1 = np.swapaxes(w["conv1.weight"], 2, 3) if swap_hw else w["conv1.weight"]
        values = [conv1, w["conv1.bias"], w["bn1.weight"], w["bn1.bias"], w["bn1.running_mean"], w["bn1.running_var"],
                  w["conv2.weight"], w["conv2.bias"], w["fc.weight"], w["fc.bias"]]
        for parameter, value in zip(net.collect_params().values(), values):
            parameter.set_data(mx.nd.array(value))
        net.hybridize()
        net(mx.nd.ones((2, 3, 16, 16)))
        net.export(str(FOLDER / name), 0)

    cnn("gluon-cnn")
    cnn("gluon-cnn-epsilon", epsilon=1e-3)
    cnn("gluon-cnn-kernel", swap_hw=True)

    w = state(torch_nets.gru())

    class Recurrent(mx.gluon.HybridBlock):
        def __init__(self):
            super().__init__()
            with self.name_scope():
                self.embed = nn.Embedding(100, 8)
                self.rnn = mx.gluon.rnn.GRU(12, layout="NTC", input_size=8)
                self.fc = nn.Dense(2, in_units=12)

        def hybrid_forward(self, F, tokens):
            steps = self.rnn(self.embed(tokens))
            return self.fc(F.squeeze(F.slice_axis(steps, axis=1, begin=-1, end=None), axis=1))

    def gru(name, gates=(0, 1, 2)):
        net = Recurrent()
        net.initialize()
        values = [w["embed.weight"], blocks(w["rnn.weight_ih_l0"], gates), blocks(w["rnn.weight_hh_l0"], gates),
                  blocks(w["rnn.bias_ih_l0"], gates), blocks(w["rnn.bias_hh_l0"], gates), w["fc.weight"],
                  w["fc.bias"]]
        for parameter, value in zip(net.collect_params().values(), values):
            parameter.set_data(mx.nd.array(value))
        net.hybridize()
        net(mx.nd.ones((2, 10)))
        net.export(str(FOLDER / name), 0)

    gru("gluon-gru")
    gru("gluon-gru-gates", gates=(1, 0, 2))


if __name__ == "__main__":
    {"keras": keras_ports, "gluon": gluon_ports}[sys.argv[2]]()

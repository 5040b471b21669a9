"""The DLF models as a Gluon user writes them: HybridBlocks (channels-first, as MXNet's cuDNN path prefers), the
fused rnn.GRU, the model zoo's resnet50_v1. Each is hybridized and saved as the symbol + params pair the MXNet
runner and trainer load (Gluon's export format, with the reference's input name); the CNN and GRU carry the
reference's weights, which Gluon lays out as PyTorch does (OIHW kernels, (C, H, W) flatten, GRU gates r, z, n)."""

from __future__ import annotations

from pathlib import Path

from rosetta.frameworks.mxnet import PARAMS_FILE, SYMBOL_FILE, import_mxnet
from rosetta.native import REFERENCE_WEIGHTS, SEEDED, native_manifest, reference_weights

ARTIFACT = "symbol"  # the folder holding SYMBOL_FILE and PARAMS_FILE, as rosetta's MXNet conversions write it


def cnn_block(mx):
    """DLF's CNN: conv-conv-pool-relu-dropout twice, dense 512, dense 10 logits; ReLU after the pool (DLF lesson 7)."""
    nn = mx.gluon.nn
    net = nn.HybridSequential(prefix="dlf_cnn_")
    with net.name_scope():
        net.add(nn.Conv2D(50, 3, padding=1, in_channels=3, activation="relu"),
                nn.Conv2D(50, 3, padding=1, in_channels=50),
                nn.MaxPool2D(2, 2), nn.Activation("relu"), nn.Dropout(0.25),
                nn.Conv2D(100, 3, padding=1, in_channels=50, activation="relu"),
                nn.Conv2D(100, 3, padding=1, in_channels=100),
                nn.MaxPool2D(2, 2), nn.Activation("relu"), nn.Dropout(0.25),
                nn.Dense(512, in_units=100 * 8 * 8, activation="relu"),  # Dense flattens (C, H, W), as torch
                nn.Dropout(0.5),
                nn.Dense(10, in_units=512))
    return net


def gru_block(mx):
    """DLF's GRU: embedding 30,000 x 125, the fused (cuDNN on GPU) GRU 100, its last step, dense 2."""
    from rosetta.models.gru import EMBEDDING, HIDDEN, VOCABULARY

    gluon = mx.gluon

    class DlfGRU(gluon.HybridBlock):
        def __init__(self):
            super().__init__(prefix="dlf_gru_")
            with self.name_scope():
                self.embedding = gluon.nn.Embedding(VOCABULARY, EMBEDDING)
                self.gru = gluon.rnn.GRU(HIDDEN, layout="NTC", input_size=EMBEDDING)
                self.fc = gluon.nn.Dense(2, in_units=HIDDEN)

        def hybrid_forward(self, F, tokens):
            sequence = self.gru(self.embedding(tokens))
            return self.fc(F.squeeze(F.slice_axis(sequence, axis=1, begin=-1, end=None), axis=1))

    return DlfGRU()


def resnet50_block(mx):
    """The model zoo's ResNet-50 v1 up to its global average pool, flattened to (N, 2048)."""
    nn = mx.gluon.nn
    net = nn.HybridSequential(prefix="dlf_resnet50_")
    with net.name_scope():
        net.add(mx.gluon.model_zoo.vision.resnet50_v1(pretrained=False).features, nn.Flatten())
    return net


def _save(mx, block, model: str, seed: int, staging: Path, state: dict | None):
    from rosetta.models import get_model

    spec = get_model(model)
    mx.random.seed(seed)
    block.initialize(mx.init.Xavier(rnd_type="uniform", factor_type="avg", magnitude=3))  # Glorot uniform
    parameters = list(block.collect_params().values())
    if state is not None:  # Gluon creates its parameters in the reference's order, with the reference's shapes
        for parameter, value in zip(parameters, state.values(), strict=True):
            parameter.set_data(mx.nd.array(value.reshape(parameter.shape)))
    else:
        block(mx.nd.array(_sample(spec, seed)))  # the model zoo's deferred shapes
    block.hybridize(static_alloc=True, static_shape=True)
    folder = staging / ARTIFACT
    folder.mkdir()
    block(*[mx.sym.var(tensor.name) for tensor in spec.inputs]).save(str(folder / SYMBOL_FILE))
    block.collect_params().save(str(folder / PARAMS_FILE))
    return native_manifest(spec, seed, "mxnet", mx.__version__, ARTIFACT, "mxnet",
                           REFERENCE_WEIGHTS if state is not None else SEEDED)


def _sample(spec, seed: int):
    from rosetta.models.inputs import generate_inputs

    return next(iter(generate_inputs(spec.inputs, 2, seed).values()))


def cnn(seed: int, staging: Path):
    mx = import_mxnet()
    return _save(mx, cnn_block(mx), "cnn", seed, staging, reference_weights("cnn", seed)[1])


def gru(seed: int, staging: Path):
    mx = import_mxnet()
    return _save(mx, gru_block(mx), "gru", seed, staging, reference_weights("gru", seed)[1])


def resnet50(seed: int, staging: Path):
    mx = import_mxnet()
    return _save(mx, resnet50_block(mx), "resnet50", seed, staging, None)

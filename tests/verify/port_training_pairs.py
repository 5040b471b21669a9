"""Port pairs for the training check (issue 44), each a PyTorch training setup and a compiled Keras model holding
the same weights, correct or with one seeded training bug; run as a script in a process of its own (Keras with
TensorFlow never shares a process with the tests):

    python tests/verify/port_training_pairs.py \
        '[{"model": "cnn", "direction": "keras->torch", "bug": "nesterov", "optimizer": "sgd", "steps": 8}]'

prints one line "CASE {json}" per case: the inference verdicts of the pair, and the training row's verdict, first
diverging step, named bug, reason, worst figure and seconds. Training runs through rosetta.verify.port_training.verify_port_training
(reference="torch" for "torch->keras", "keras" for "keras->torch": the Keras model the reference, the PyTorch setup
the port), on the port saved as a .keras file with its compile config as rosetta.verify saves it; inference through
rosetta.verify(module, keras model) in both directions. Used by tests/verify/test_port_training_pairs.py and
scripts/port_training.py.

Gluon pairs ("torch->gluon", "gluon->torch"; the MLP and the CNN): the PyTorch module's weights are saved as an
.npz and a Gluon factory file is written beside it (tests/verify/gluon_port_pairs.py builds the block, trainer and
loss), trained in rosetta's MXNet worker; their inference is not run here (no in-memory Gluon block crosses into
this process). GLUON_BUGS are the seeded bugs a Gluon pair holds, "step-rescale" Gluon's own."""

from __future__ import annotations

import copy
import json
import sys
import tempfile
import time
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parents[2]))  # rosetta, from a checkout

MODELS = {  # model -> (PyTorch-side inputs, Keras-side inputs)
    "mlp": (["x:Nx6:float32"], ["x:Nx6:float32"]),
    "cnn": (["image:Nx3x8x8:float32"], ["image:Nx8x8x3:float32"]),
    "gru": (["tokens:Nx5:int64:0:20"], ["tokens:Nx5:int64:0:20"]),
    "lstm": (["tokens:Nx5:int64:0:20"], ["tokens:Nx5:int64:0:20"]),
    "transformer": (["x:Nx4x8:float32"], ["x:Nx4x8:float32"]),
}
GLUON_BUGS = ("dropout", "weight-decay", "adam-epsilon", "batchnorm-momentum", "nesterov", "frozen", "bn-inference",
              "step-rescale")
GLUON_OPTIMIZERS = ("sgd", "adam", "adam-wd")  # MXNet 1.9.1 has no AdamW: Adam with wd (L2) on both sides instead
HEADS = 2  # the transformer block's attention heads (model width 8)
LABELS = "labels:N:int64:0:4"
GRU_ORDER = (1, 0, 2)  # PyTorch r, z, n <-> Keras z, r, h (its own inverse)
BUGS = ("dropout", "from-logits", "loss-reduction", "weight-decay", "adam-epsilon", "batchnorm-momentum",
        "clipnorm", "label-smoothing", "class-weights", "nesterov", "sgd-dampening", "lr-schedule", "frozen",
        "bn-inference", "bn-eval", "lstm-biases")
CORRECT_VARIANTS = ("clip-global", "smoothing-both")  # settings that look different and are the same training


def _blocks(matrix, axis=0):
    parts = np.split(np.asarray(matrix), 3, axis=axis)
    return np.concatenate([parts[i] for i in GRU_ORDER], axis=axis)


def _torch_model(model: str, bug: str):
    import torch

    if model == "mlp":
        layers = [torch.nn.Linear(6, 16), torch.nn.BatchNorm1d(16), torch.nn.ReLU()]
        if bug == "dropout":  # the PyTorch side drops, the Keras side (inference-equal) does not
            layers.append(torch.nn.Dropout(0.5))
        return torch.nn.Sequential(*layers, torch.nn.Linear(16, 4))
    if model == "cnn":
        return torch.nn.Sequential(torch.nn.Conv2d(3, 8, 3, padding=1), torch.nn.BatchNorm2d(8), torch.nn.ReLU(),
                                   torch.nn.AdaptiveAvgPool2d(1), torch.nn.Flatten(), torch.nn.Linear(8, 4))
    if model == "transformer":
        return _Block()

    class Text(torch.nn.Module):
        def __init__(self):
            super().__init__()
            self.embedding = torch.nn.Embedding(20, 8)
            self.rnn = (torch.nn.GRU if model == "gru" else torch.nn.LSTM)(8, 12, batch_first=True)
            self.head = torch.nn.Linear(12, 4)

        def forward(self, tokens):
            out, _ = self.rnn(self.embedding(tokens))
            return self.head(out[:, -1])

    net = Text()
    if model == "lstm":  # Keras' LSTM has one bias: the port's second bias zero and frozen trains alike
        with torch.no_grad():
            net.rnn.bias_hh_l0.zero_()
        net.rnn.bias_hh_l0.requires_grad_(bug == "lstm-biases")
    return net


def _block_class():
    import math

    import torch

    class Block(torch.nn.Module):
        """One pre-LN transformer block (hand q/k/v attention, ReLU MLP), mean-pooled, a linear head."""

        def __init__(self, width: int = 8):
            super().__init__()
            self.ln1, self.ln2 = torch.nn.LayerNorm(width), torch.nn.LayerNorm(width)
            self.q, self.k, self.v, self.o = (torch.nn.Linear(width, width) for _ in range(4))
            self.fc1, self.fc2 = torch.nn.Linear(width, 16), torch.nn.Linear(16, width)
            self.head = torch.nn.Linear(width, 4)

        def forward(self, x):
            n, t, d = x.shape
            h = self.ln1(x)
            split = lambda a: a.view(n, t, HEADS, d // HEADS).transpose(1, 2)  # noqa: E731
            q, k, v = split(self.q(h)), split(self.k(h)), split(self.v(h))
            attention = torch.softmax(q @ k.transpose(-1, -2) / math.sqrt(d // HEADS), dim=-1) @ v
            x = x + self.o(attention.transpose(1, 2).reshape(n, t, d))
            x = x + self.fc2(torch.relu(self.fc1(self.ln2(x))))
            return self.head(x.mean(dim=1))

    return Block


def _Block():
    return _block_class()()


def _keras_transformer(w: dict):
    """The block in Keras: LayerNormalization, MultiHeadAttention (its (d, heads, d/heads) kernels are PyTorch's
    (d, d) Linear weights transposed and split by head), Dense MLP, GlobalAveragePooling1D."""
    import keras

    x = keras.Input((4, 8), name="x")
    ln1 = keras.layers.LayerNormalization(epsilon=1e-5, name="ln1")
    attention = keras.layers.MultiHeadAttention(HEADS, 8 // HEADS, name="attention")
    h = ln1(x)
    x1 = keras.layers.Add()([x, attention(h, h)])
    ln2 = keras.layers.LayerNormalization(epsilon=1e-5, name="ln2")
    fc1, fc2 = keras.layers.Dense(16, activation="relu", name="fc1"), keras.layers.Dense(8, name="fc2")
    x2 = keras.layers.Add()([x1, fc2(fc1(ln2(x1)))])
    port = keras.Model(x, keras.layers.Dense(4, name="head")(keras.layers.GlobalAveragePooling1D()(x2)))
    split = lambda name: w[f"{name}.weight"].T.reshape(8, HEADS, 8 // HEADS)  # noqa: E731
    heads = lambda name: w[f"{name}.bias"].reshape(HEADS, 8 // HEADS)  # noqa: E731
    attention.set_weights([split("q"), heads("q"), split("k"), heads("k"), split("v"), heads("v"),
                           w["o.weight"].T.reshape(HEADS, 8 // HEADS, 8), w["o.bias"]])
    for name, layer in (("ln1", ln1), ("ln2", ln2)):
        layer.set_weights([w[f"{name}.weight"], w[f"{name}.bias"]])
    for name in ("fc1", "fc2", "head"):
        port.get_layer(name).set_weights([w[f"{name}.weight"].T, w[f"{name}.bias"]])
    return port


def _keras_model(model: str, bug: str, net):
    import keras

    momentum = 0.1 if bug == "batchnorm-momentum" else 0.9
    w = {name: p.detach().numpy() for name, p in net.state_dict().items()}
    bn = None
    if model == "transformer":
        port = _keras_transformer(w)
    elif model == "mlp":
        x = keras.Input((6,), name="x")
        bn = keras.layers.BatchNormalization(momentum=momentum, epsilon=1e-5, name="bn")
        h = keras.layers.ReLU()(bn(keras.layers.Dense(16, name="dense")(x)))
        port = keras.Model(x, keras.layers.Dense(4, name="head")(h))
        port.get_layer("dense").set_weights([w["0.weight"].T, w["0.bias"]])
        bn.set_weights([w["1.weight"], w["1.bias"], np.zeros(16), np.ones(16)])
        port.get_layer("head").set_weights([w["3.weight" if bug != "dropout" else "4.weight"].T,
                                            w["3.bias" if bug != "dropout" else "4.bias"]])
    elif model == "cnn":
        x = keras.Input((8, 8, 3), name="image")
        bn = keras.layers.BatchNormalization(momentum=momentum, epsilon=1e-5, name="bn")
        h = keras.layers.ReLU()(bn(keras.layers.Conv2D(8, 3, padding="same", name="conv")(x)))
        port = keras.Model(x, keras.layers.Dense(4, name="head")(keras.layers.GlobalAveragePooling2D()(h)))
        port.get_layer("conv").set_weights([np.transpose(w["0.weight"], (2, 3, 1, 0)), w["0.bias"]])
        bn.set_weights([w["1.weight"], w["1.bias"], np.zeros(8), np.ones(8)])
        port.get_layer("head").set_weights([w["5.weight"].T, w["5.bias"]])
    else:
        x = keras.Input((5,), dtype="int32", name="tokens")
        h = keras.layers.Embedding(20, 8, name="embedding")(x)
        rnn = (keras.layers.GRU if model == "gru" else keras.layers.LSTM)(12, name="rnn")
        port = keras.Model(x, keras.layers.Dense(4, name="head")(rnn(h)))
        port.get_layer("embedding").set_weights([w["embedding.weight"]])
        if model == "gru":
            rnn.set_weights([_blocks(w["rnn.weight_ih_l0"]).T, _blocks(w["rnn.weight_hh_l0"]).T,
                             np.stack([_blocks(w["rnn.bias_ih_l0"]), _blocks(w["rnn.bias_hh_l0"])])])
        else:
            rnn.set_weights([w["rnn.weight_ih_l0"].T, w["rnn.weight_hh_l0"].T,
                             w["rnn.bias_ih_l0"] + w["rnn.bias_hh_l0"]])
        port.get_layer("head").set_weights([w["head.weight"].T, w["head.bias"]])
        bn = None
    if bug == "frozen":
        port.get_layer("head").trainable = False
    if bug == "bn-inference" and bn is not None:
        bn.trainable = False  # Keras 3 runs a frozen BatchNormalization in inference mode
    return port


def build(model: str = "mlp", bug: str = "", optimizer: str = "sgd", seed: int = 0):
    """((module, optimizer, loss_fn), compiled keras.Model): the same weights, each side's optimiser and loss in its
    own framework's terms; `bug` seeds one training bug (on either side)."""
    import keras
    import torch

    torch.manual_seed(seed)
    net = _torch_model(model, bug)
    port = _keras_model(model, bug, net)
    if bug == "bn-eval":  # trained in train mode with its BatchNorm left in eval mode
        net.train()
        next(m for m in net.modules() if isinstance(m, torch.nn.modules.batchnorm._BatchNorm)).eval()
    else:
        net.eval()  # as after inference: rosetta trains a copy in train mode
    parameters = [p for p in net.parameters() if p.requires_grad]
    if optimizer == "sgd":
        opt = torch.optim.SGD(parameters, lr=0.05, momentum=0.9, nesterov=bug == "nesterov",
                              dampening=0.9 if bug == "sgd-dampening" else 0.0)
        rate = keras.optimizers.schedules.ExponentialDecay(0.05, 1, 0.5) if bug == "lr-schedule" else 0.05
        clipping = ({"clipnorm": 0.05} if bug == "clipnorm" else {"global_clipnorm": 0.05}
                    if bug == "clip-global" else {})
        kopt = keras.optimizers.SGD(learning_rate=rate, momentum=0.9, **clipping)
        if bug in ("clipnorm", "clip-global"):
            opt.clip_grad_norm = 0.05  # the loop's torch.nn.utils.clip_grad_norm_(parameters, 0.05)
    elif optimizer == "adam":
        opt = torch.optim.Adam(parameters, lr=1e-3, weight_decay=0.01 if bug == "weight-decay" else 0.0)
        kopt = (keras.optimizers.AdamW(learning_rate=1e-3, weight_decay=0.01, epsilon=1e-8) if bug == "weight-decay"
                else keras.optimizers.Adam(learning_rate=1e-3, epsilon=1e-7 if bug == "adam-epsilon" else 1e-8))
    else:
        opt = torch.optim.AdamW(parameters, lr=1e-3, weight_decay=0.01)
        kopt = keras.optimizers.AdamW(learning_rate=1e-3, weight_decay=0.01, epsilon=1e-8)
    smoothing = 0.1 if bug in ("label-smoothing", "smoothing-both") else 0.0
    loss = torch.nn.CrossEntropyLoss(reduction="sum" if bug == "loss-reduction" else "mean", label_smoothing=smoothing,
                                     weight=torch.tensor([1.0, 2.0, 3.0, 4.0]) if bug == "class-weights" else None)
    if bug == "smoothing-both":
        kloss = keras.losses.CategoricalCrossentropy(from_logits=True, label_smoothing=0.1)
    else:
        kloss = keras.losses.SparseCategoricalCrossentropy(from_logits=bug != "from-logits")
    port.compile(optimizer=kopt, loss=kloss)
    return (net, opt, loss), port


def build_torch_for_gluon(model: str, bug: str, optimizer: str, seed: int):
    """The PyTorch setup of a Gluon pair: a Gluon bug is seeded on the Gluon side (tests/verify/gluon_port_pairs.py),
    but for Dropout (the PyTorch module drops) and weight decay (PyTorch's AdamW, decoupled, against Gluon's Adam
    wd, L2)."""
    import torch

    torch.manual_seed(seed)
    net = _torch_model(model, "dropout" if bug == "dropout" else "").eval()
    if optimizer == "sgd":
        opt = torch.optim.SGD(net.parameters(), lr=0.05, momentum=0.9)
    elif optimizer == "adam" and bug == "weight-decay":
        opt = torch.optim.AdamW(net.parameters(), lr=1e-3, weight_decay=0.01)
    else:
        opt = torch.optim.Adam(net.parameters(), lr=1e-3, weight_decay=0.01 if optimizer == "adam-wd" else 0.0)
    return net, opt, torch.nn.CrossEntropyLoss()


def gluon_setup_file(folder: Path, model: str, bug: str, optimizer: str, net) -> str:
    """A Gluon factory file in `folder` building the pair's Gluon side from `net`'s weights: `path:fn`."""
    weights = folder / "weights.npz"
    np.savez(weights, **{name: p.detach().numpy() for name, p in net.state_dict().items()
                         if not name.endswith("num_batches_tracked")})
    setup = folder / "gluon_setup.py"
    setup.write_text(f"""import sys
sys.path.insert(0, {str(Path(__file__).resolve().parents[2])!r})
import mxnet  # noqa: F401: a Gluon setup (rosetta reads this import)
from tests.verify.gluon_port_pairs import build_gluon


def fn():
    return build_gluon({model!r}, {bug!r}, {optimizer!r}, {str(weights)!r})
""")
    return f"{setup}:fn"


def run_gluon_case(case: dict) -> dict:
    from rosetta.sources.signature import parse_input_option
    from rosetta.verify.port_training import verify_port_training

    model, direction, bug = case.get("model", "mlp"), case["direction"], case.get("bug", "")
    setup = build_torch_for_gluon(model, bug, case.get("optimizer", "sgd"), case.get("seed", 0))
    start = time.perf_counter()
    with tempfile.TemporaryDirectory() as folder:
        text = gluon_setup_file(Path(folder), model, bug, case.get("optimizer", "sgd"), setup[0])
        row = verify_port_training(setup, text, [parse_input_option(s) for s in MODELS[model][0]],
                                   parse_input_option(LABELS), case["steps"], seed=case.get("seed", 0),
                                   label=f"{model} {direction}", reference=direction.partition("->")[0]).row
    return {**case, "inference": [], "seconds": time.perf_counter() - start,
            "training": [{"verdict": row.verdict, "reason": row.reason, "first_step": row.training["first_step"],
                          "named": row.training["diagnosis"]["name"], "says": row.training["diagnosis"]["says"],
                          "worst": max(o.error_ratio for o in row.outputs), "paired": row.training["paired"],
                          "unpaired": row.training["unpaired"]}]}


def run_case(case: dict) -> dict:
    if "gluon" in case.get("direction", ""):
        return run_gluon_case(case)
    import rosetta
    from rosetta.models.registry import TensorSpec  # noqa: F401: the specs' type
    from rosetta.sources.signature import parse_input_option
    from rosetta.verify.port_training import verify_port_training

    model, direction = case.get("model", "mlp"), case.get("direction", "torch->keras")
    setup, port = build(model, case.get("bug", ""), case.get("optimizer", "sgd"), case.get("seed", 0))
    torch_inputs, keras_inputs = MODELS[model]
    specs = torch_inputs if direction == "torch->keras" else keras_inputs
    start = time.perf_counter()
    with tempfile.TemporaryDirectory() as folder:
        path = Path(folder) / "port.keras"
        port.save(str(path))  # with its compile config, as rosetta.verify saves an in-memory port
        rows = [verify_port_training(setup, str(path), [parse_input_option(s) for s in specs],
                                     parse_input_option(LABELS), case["steps"], seed=case.get("seed", 0),
                                     label=f"{model} {direction}", reference=direction.partition("->")[0]).row
                ] if case["steps"] else []
    seconds = time.perf_counter() - start
    inference = []  # the benchmark's calibration runs ask for training only ("inference": false)
    try:  # the same pair's inference: the bug is training-only
        if case.get("inference", True):
            # the module as the reference in both directions: the same function either way, and a module as
            # rosetta.verify's candidate would need its channels-first inputs paired by hand
            inference = [row.verdict for row in rosetta.verify(copy.deepcopy(setup[0]).eval(), port,
                                                               inputs=torch_inputs).rows]
    except Exception as error:  # noqa: BLE001: said in the case, the test or the table shows it
        inference = [f"ERROR {type(error).__name__}: {str(error)[:200]}"]
    return {**case, "inference": inference, "seconds": seconds,
            "training": [{"verdict": row.verdict, "reason": row.reason, "first_step": row.training["first_step"],
                          "named": row.training["diagnosis"]["name"], "says": row.training["diagnosis"]["says"],
                          "worst": max(o.error_ratio for o in row.outputs), "paired": row.training["paired"],
                          "unpaired": row.training["unpaired"]} for row in rows]}


if __name__ == "__main__":
    for asked in json.loads(sys.argv[1]):
        print("CASE " + json.dumps(run_case(asked)), flush=True)

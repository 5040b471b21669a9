"""Training bugs of a port, named: a small registry beside verify/diagnoses/, one module per bug, each reading both
sides' training setups (PyTorch: the optimiser's class, param_groups and clipping, the loss's class and settings
(class weights, label smoothing), every BatchNorm's momentum and mode, every Dropout's rate, the frozen
parameters; Keras: the optimiser's class and get_config(), the loss's class and config, the same per layer) and
where the per-step figures first diverge (`Evidence`: which paired parameters are trainable on one side only, which
running statistics step 1 left unmoved), and saying what differs in plain words, or nothing.

The per-step structure does most of the separating, and says what it rules out:
- the loss differs at step 1 (the first batch, before any update): the forward pass or the loss differs (dropout
  on one side, a BatchNorm in inference mode, from_logits, label smoothing, class weights, the loss's reduction);
- the loss agrees at step k but a trainable parameter differs after step k (the loss at step k + 1 then): the
  forward and backward passes agree, the update does not (frozen layers, an LSTM's two biases, Gluon's
  trainer.step(batch_size) on a mean loss, gradient clipping, Nesterov, weight decay, Adam's epsilon at step 1;
  SGD's momentum form and a learning-rate schedule at step 2, since both first steps are lr x g);
- losses and trainable parameters agree, a BatchNorm running statistic does not: the statistics' update
  (BatchNorm momentum; it never changes the training-mode forward pass, so never the loss).
What the setups cannot express is not diagnosed: a PyTorch scheduler (stepped by the user's loop, not part of
(module, optimizer, loss_fn)), so "per batch against per epoch" is named only as a Keras schedule against a constant
PyTorch rate; Keras' class_weight (a fit() argument, not compiled).
A module is added as a file here and named in MODULES (checked in that order: causes before their consequences),
with a test in tests/verify/test_port_training.py or test_port_training_pairs.py that builds the bug and expects
its name."""

from __future__ import annotations

import importlib
from dataclasses import dataclass, field
from typing import Callable

DIAGNOSES: list[tuple[str, Callable]] = []  # (name, function(evidence) -> str | None)
MODULES = ("dropout", "batchnorm_inference", "from_logits", "label_smoothing", "class_weights", "loss_reduction",
           "frozen_layers", "rnn_biases", "step_rescale",
           "gradient_clipping", "learning_rate", "nesterov", "sgd_momentum",
           "weight_decay", "adam_epsilon", "batchnorm_momentum")


@dataclass
class Evidence:
    torch: dict  # the PyTorch setup: optimizer {class, defaults, groups}, loss {class, ...}, batchnorm, dropout
    keras: dict  # the other side's setup: optimizer {class, **get_config()}, loss {class, **config}, batchnorm,
    # dropout; a Gluon setup in the same terms, with "framework": "Gluon" (rosetta.train.port_mxnet)
    first_step: int | None  # the first step where anything diverges (1-based), None where nothing does
    loss_step: int | None  # the first step whose loss diverges
    trainable_step: int | None  # the first step after which a trainable parameter diverges
    statistic_step: int | None  # ... a BatchNorm running statistic
    first: list = field(default_factory=list)  # the diverging figures at first_step, worst first
    losses: tuple = ()  # (PyTorch float64 losses, Keras losses), per step
    batch: int = 0
    trainability: list = field(default_factory=list)  # (pair, trainable in Keras, in PyTorch): one side only
    idle: dict = field(default_factory=dict)  # side -> running statistics step 1 left as they were
    reference: str = "torch"  # which side is the reference: "torch" or "keras"

    @property
    def port(self) -> str:
        """The other side's framework as rows say it: "Keras", or "Gluon" (rosetta.train.port_mxnet)."""
        return self.keras.get("framework", "Keras")

    @property
    def ports(self) -> str:
        """Its possessive: "Keras'", "Gluon's"."""
        return f"{self.port}'" if self.port.endswith("s") else f"{self.port}'s"

    @property
    def forward_differs(self) -> bool:
        """The loss diverges at the first diverging step: the forward pass (or the loss) differs."""
        return self.loss_step is not None and self.loss_step == self.first_step

    def structure(self) -> str:
        """What the per-step structure says, and what it rules out."""
        if self.forward_differs:
            before = " before any update" if self.first_step == 1 else ""
            return (f"the loss already differs at step {self.first_step}{before}: the forward pass or the loss "
                    "differs")
        if self.optimizer_differs:
            return (f"the loss agrees at step {self.first_step}: forward and backward agree, the update differs "
                    "(ruled out: the model's function, the loss and the labels)")
        return ("losses and trainable parameters agree: a running statistic's update differs (ruled out: the "
                "forward pass, the loss and the optimiser)")

    @property
    def optimizer_differs(self) -> bool:
        """The loss agrees where a trainable parameter first diverges: the optimiser's update differs."""
        return (self.trainable_step is not None and self.trainable_step == self.first_step
                and (self.loss_step is None or self.loss_step > self.trainable_step))


def training_diagnosis(name: str):
    def register(function: Callable) -> Callable:
        DIAGNOSES.append((name, function))
        return function
    return register


def diagnose_training(evidence: Evidence) -> tuple[str, str]:
    """(name, what it says) of the first diagnosis, in MODULES' order, that recognises the evidence; ("", "")."""
    for module in MODULES:
        importlib.import_module(f"{__name__}.{module}")
    rank = lambda entry: MODULES.index(entry[1].__module__.rsplit(".", 1)[-1])  # noqa: E731
    for name, function in sorted(DIAGNOSES, key=rank):
        said = function(evidence)
        if said:
            return name, said
    return "", ""


def optimizer_class(setup: dict) -> str:
    return (setup.get("optimizer") or {}).get("class", "")


def torch_hyper(setup: dict, key: str, default=None):
    """A PyTorch optimiser hyper-parameter, from its first param group (its defaults where none)."""
    optimizer = setup.get("optimizer") or {}
    groups = optimizer.get("groups") or [optimizer.get("defaults") or {}]
    return groups[0].get(key, (optimizer.get("defaults") or {}).get(key, default))

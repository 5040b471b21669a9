"""Does a port train alike? A PyTorch training setup (module, torch.optim optimiser, loss callable) against a compiled
Keras model (its optimiser and loss from model.compile), each as its author wrote it, trained N steps on the same
seeded batches, compared after every step (issue 44). Either side may be the reference (`reference="torch"`: the
Keras model is the port; `"keras"`: the PyTorch setup is; the specs are then in the Keras model's layout and the
PyTorch side gets images channels-first where it takes them so); verify_port_training_files does the same from a
factory file `setup.py:fn` and a saved .keras file, for the command line.
Each side trains in its own module of rosetta/train/ (port_torch.py here, port_keras.py and port_mxnet.py in
their workers); this module pairs, compares and diagnoses, and imports no framework.

The PyTorch setup as users' loops train it: a module left in eval mode (after inference) is trained in train mode
as a whole; one in train mode keeps its submodules' modes (a BatchNorm left in .eval() stays so, and is found);
`optimizer.clip_grad_norm = max_norm` (or `clip_grad_value`) says that the loop calls
torch.nn.utils.clip_grad_norm_ (clip_grad_value_) before each step; parameters with requires_grad=False are frozen.

Batches: inputs generated once per step from the input specs (seed * 1000 + step), labels from the labels spec
("labels:N:int64:0:4": class indices 0..3), fed to both sides: PyTorch as generated, Keras channels-last where its
input shape says so, labels one-hot where its loss is categorical (rosetta.train.port_keras).

Pairing: every Keras weight is paired BEFORE training with the PyTorch tensor it equals, brought to PyTorch's form
first (rosetta.verify.diagnoses.matching.from_keras: Dense kernels transposed, conv kernels HWIO -> OIHW), by
value, with the role of each name breaking ties between tensors of equal values (a fresh BatchNorm's gamma and
moving variance are all ones: gamma pairs with `weight`, moving_variance with `running_var`); tensors equal
to several are taken in order. Recurrent layers pair through their layouts: a Keras GRU's kernels and biases with
the gate blocks in PyTorch's order (z, r, h -> r, z, n) and its (2, 3h) bias against PyTorch's two biases stacked;
a Keras LSTM's one bias against the sum of PyTorch's two. Every pair is compared after every step, and the loss
at every step (the loss of step k is computed on step k's batch before its update, as both frameworks report it).

Modelled conventions (of the frameworks, not the port; said in the row): Adam's epsilon placement (Keras adds it
before the bias correction: its Adam runs with PyTorch's placement, rosetta.train.port_keras); the running
variance, which PyTorch updates with the unbiased batch variance and Keras with the biased one (the PyTorch
side's running variance is re-computed in Keras' convention from the batch each BatchNorm sees, at both
precisions); Dropout turned off on both sides where both drop the same rates.

Tolerance. The PyTorch side is trained twice, in float32 and in float64 (the module and loss in double, the same
optimiser class and param groups). Per step and per compared tensor the noise floor is max |float32 - float64|
(at least one float32 ulp of the tensor's largest value, 2^-23 x max |float64|), and the Keras side (float32)
passes while max |Keras - PyTorch float64| <= PORT_TRAINING_MULTIPLE x that floor. The multiple was measured on
the pair of tests/verify/test_port_training.py (Linear(6,16), BatchNorm1d, ReLU, Linear(16,4); batch 8; Keras 3 on
TensorFlow, float32): over 20 steps with SGD-momentum (lr 0.05, 0.9), Adam and AdamW (lr 1e-3), seeds 0, 1, 2, the
correct pair's largest error reached 2.43 x its floor (SGD, seed 2; Adam 2.24, AdamW 1.71), once Adam's float32 bias
correction in Keras was modelled (before: 70 x, see rosetta.train.port_keras). The weakest seeded bug, Adam's epsilon
at Keras' default 1e-7 against PyTorch's 1e-8 on ordinary gradients, reached 148 x at step 1 (a fresh BatchNorm's
beta, whose first gradients are small); the others 4e4 x and more (weight decay coupled/decoupled 4.1e4, loss
reduction 7.3e6, dropout on one side 5.5e6, BatchNorm momentum 6.7e7, from_logits 4.5e7). Measured again on the
pairs of scripts/port_training.py (MLP and CNN with BatchNorm, GRU and LSTM text models; both directions; SGD,
Adam, AdamW; seeds 0-2; 20 steps): the correct pairs' largest figure is 10.1 x (the CNN, PyTorch -> Keras, SGD,
seed 2: a BatchNorm's moving mean and the conv bias before it, whose gradient BatchNorm cancels, so that only
rounding moves it; 2.5 x or less everywhere else), the weakest of 104 seeded bugs 46 x (Adam's epsilon on the
CNN, Keras -> PyTorch; 90 x the other way). The multiple, 20, sits 2 x above the first and 2.3 x below the
second: the weakest bug is the one that shows only where gradients are tiny.

Gluon (MXNet) ports: the other side may instead be a Gluon setup, a factory file `gluon_setup.py:fn` returning
(block, trainer, loss), told apart by its imports (rosetta.sources.training_setup) and built and trained only in
the MXNet worker (rosetta.train.port_mxnet: Gluon's loop, loss(...).backward() and trainer.step(batch_size)); its
parameters come back by structural name in PyTorch's forms (Dense (out, in), Conv OIHW) and pair by value and role
as Keras' do (gamma/beta/running_mean/running_var). Modelled there: Adam's epsilon placement (MXNet, like Keras,
adds it before the bias correction); MXNet's BatchNorm momentum is Keras' convention (0.9 = PyTorch's 0.1) and its
running variance the biased one. `reference="gluon"` makes the Gluon setup the reference (same inputs, NCHW both).
Gluon's float32 kernels round differently from PyTorch's (a correct SGD MLP reached 44 x the PyTorch-only floor
on a BatchNorm's beta), so the Gluon side also trains in float64 and the floor is the larger of the two sides' own
float32 - float64. Measured with it (scripts/port_training.py --models "" --gluon-models mlp,cnn --seeds 0: MLP
and CNN with BatchNorm, both directions, SGD-momentum, Adam, Adam with wd; 20 steps): the 12 correct runs' largest
figure 2.76 x, the weakest of 30 seeded Gluon bugs 86.8 x; the transformer block pair with Keras (--models
transformer, seeds 0-2): 18 correct runs at most 3.2 x, 22 seeded bugs 3.09e3 x and more. The multiple holds.
"""

from __future__ import annotations

import math
import re
import time
from dataclasses import dataclass, field

import numpy as np

from rosetta.errors import BadInput
from rosetta.sources.training_setup import is_training_setup  # noqa: F401: rosetta.api asks it here
from rosetta.train.port_torch import STATISTICS, initial_tensors, moved, torch_layout, torch_setup, train_torch
from rosetta.verify.results import FAIL, PASS, OutputComparison, VerifyResult

PORT_TRAINING_MULTIPLE = 20.0  # x the noise floor: measured, see the module docstring
MEASURED_CORRECT_RATIO = 10.1  # the correct pairs' largest error / floor (scripts/port_training.py, 72 runs)
MEASURED_WEAKEST_BUG_RATIO = 46.0  # Adam epsilon 1e-7 against 1e-8 on the CNN, at step 1
FLOAT32_EPS = 2.0 ** -23
ROLES = {"kernel": "weight", "gamma": "weight", "embeddings": "weight", "beta": "bias",
         "moving_mean": "running_mean", "moving_variance": "running_var"}
GLUON_ROLES = {"gamma": "weight", "beta": "bias"}  # Gluon's BatchNorm names; running_mean/var are PyTorch's
SIDES = {"keras": "Keras", "gluon": "Gluon"}  # the other side's framework, as rows say it
POSSESSIVE = {"keras": "Keras'", "gluon": "Gluon's"}


# ---- pairing ---------------------------------------------------------------------------------------------------
def _role(label: str) -> str:
    last = re.split(r"[/.]", label)[-1]
    last = GLUON_ROLES.get(last, last)
    return ROLES.get(last, last)


def canonical(label: str, owner: str, value) -> np.ndarray:
    """A Keras weight in PyTorch's form: a GRU's kernels and biases with their gate blocks in PyTorch's order
    (z, r, h -> r, z, n), an LSTM's kernels transposed (the gate order i, f, c, o is PyTorch's), everything else
    as the inference pairing reads it (rosetta.verify.diagnoses.matching.from_keras); a MultiHeadAttention's
    EinsumDense kernels and biases as the (d, d) weights and (d,) biases of hand-written q, k, v, o Linears; a Gluon parameter (owner
    "gluon:...") as it is (Gluon holds Dense weights (out, in) and Conv kernels OIHW, as PyTorch does)."""
    from rosetta.frameworks.layers import GATES_KERAS_GRU_TO_TORCH, gate_blocks
    from rosetta.verify.diagnoses.matching import from_keras

    value = np.asarray(value, np.float64)
    if owner.startswith("gluon:"):
        return value
    last = label.split("/")[-1]
    if owner == "GRU" and last in ("kernel", "recurrent_kernel"):
        return gate_blocks(value.T, GATES_KERAS_GRU_TO_TORCH)
    if owner == "GRU" and last == "bias":
        return gate_blocks(value, GATES_KERAS_GRU_TO_TORCH, axis=value.ndim - 1)
    if owner == "LSTM" and last in ("kernel", "recurrent_kernel"):
        return value.T
    if owner == "MultiHeadAttention":  # hand q/k/v/o Linears: (d, heads, d/heads) kernels as (d, d) weights
        which = label.split("/")[-2]
        if which == "attention_output":
            return value.reshape(-1, value.shape[-1]).T if last == "kernel" else value
        return value.reshape(value.shape[0], -1).T if last == "kernel" else value.reshape(-1)
    return from_keras(label, value)


def pair_weights(keras_names: list[str], keras_initial: list, torch_initial: dict,
                 owners: list | None = None) -> tuple[list, list]:
    """([(Keras index, PyTorch name)], [Keras names paired with none]): each Keras weight, in PyTorch's form,
    with the unpaired PyTorch tensor of its shape it equals, of its role where one is (see the module docstring)."""
    from rosetta.verify.diagnoses import close

    free = list(torch_initial)
    owners = owners or [""] * len(keras_names)
    pairs, unpaired = [], []
    for index, (label, value) in enumerate(zip(keras_names, keras_initial)):
        canonical_value = canonical(label, owners[index], value)
        equal = [name for name in free if torch_initial[name].shape == canonical_value.shape
                 and close(torch_initial[name], canonical_value)]
        same_role = [name for name in equal if _role(name) == _role(label)]
        fused = [name for name in equal if "|" in name or "+" in name]  # an RNN's bias: the two PyTorch biases as one
        chosen = ((fused if owners[index] in ("GRU", "LSTM") else []) or same_role or equal or [None])[0]
        if chosen is None:
            unpaired.append(label)
            continue
        free.remove(chosen)
        if "|" in chosen or "+" in chosen:  # an RNN's two biases as one: neither pairs on its own
            layer = chosen.rpartition(".")[0]
            free = [n for n in free if n not in (f"{layer}.bias_ih_l0", f"{layer}.bias_hh_l0")]
        pairs.append((index, chosen))
    return pairs, unpaired


# ---- comparison ------------------------------------------------------------------------------------------------
@dataclass
class StepFigure:
    step: int
    name: str  # "loss" or "KERAS NAME ~ TORCH NAME"
    kind: str  # "loss", "trainable" or "statistic"
    error: float
    floor: float

    @property
    def ratio(self) -> float:
        return self.error / self.floor if self.floor > 0 else (0.0 if self.error == 0 else math.inf)


def _floor(value32, value64) -> float:
    value32, value64 = np.asarray(value32, np.float64), np.asarray(value64, np.float64)
    return max(float(np.max(np.abs(value32 - value64), initial=0.0)),
               FLOAT32_EPS * float(np.max(np.abs(value64), initial=0.0)), 1e-30)


def step_figures(keras: dict, torch32: dict, torch64: dict, pairs: list) -> list[list[StepFigure]]:
    """Per step, the figure of the loss and of every pair (Keras error against PyTorch float64, and the floor; where
    the other side also trained in float64, keras["float64"] (Gluon), the floor is the larger of the two sides' own
    float32 - float64)."""
    figures = []
    owners = keras.get("classes") or [""] * len(keras["names"])
    wide = keras.get("float64")
    for index in range(len(keras["losses"])):
        own = _floor(keras["losses"][index], wide["losses"][index]) if wide else 0.0
        row = [StepFigure(index + 1, "loss", "loss", abs(keras["losses"][index] - torch64["losses"][index]),
                          max(own, _floor(torch32["losses"][index], torch64["losses"][index])))]
        for keras_index, torch_name in pairs:
            label = keras["names"][keras_index]
            value = canonical(label, owners[keras_index], keras["weights"][index][keras_index])
            reference = torch64["states"][index][torch_name]
            error = float(np.max(np.abs(value - reference), initial=0.0)) if value.shape == reference.shape else math.inf
            kind = "statistic" if _role(torch_name) in STATISTICS else "trainable"
            floor = _floor(torch32["states"][index][torch_name], reference)
            if wide:
                floor = max(floor, _floor(value, canonical(label, owners[keras_index],
                                                           wide["weights"][index][keras_index])))
            row.append(StepFigure(index + 1, f"{label} ~ {torch_name}", kind, error, floor))
        figures.append(row)
    return figures


def _first(figures: list[list[StepFigure]], multiple: float, kind: str | None = None) -> int | None:
    for row in figures:
        if any(f.ratio > multiple for f in row if kind is None or f.kind == kind):
            return row[0].step
    return None


def _comparison(name: str, figures: list[StepFigure], multiple: float) -> OutputComparison:
    worst = max(figures, key=lambda f: f.ratio)
    passed = worst.ratio <= multiple
    reason = "" if passed else (f"{name}: step {worst.step}: max |err| {worst.error:.3g} > {multiple:g} x noise "
                                f"floor {worst.floor:.3g}")
    return OutputComparison(name=name, shape=[len(figures)], passed=passed, reason=reason,
                            max_abs_error=max(f.error for f in figures), max_rel_error=math.nan,
                            scaled_error=math.nan, rms_error=math.nan, cosine=math.nan, within_tolerance=math.nan,
                            nan_count=0, inf_count=0, noise_floor=worst.floor, error_ratio=worst.ratio)


@dataclass
class PortTraining:
    """What verify_port_training found, beside its row: the per-step figures, for calibration scripts and tests."""

    row: VerifyResult
    figures: list = field(default_factory=list)
    diagnosis: tuple = ("", "")


def _idle_statistics(initial: dict, after: dict, names: list) -> list[str]:
    """The running statistics among `names` that step 1 left as they were (a BatchNorm in inference mode)."""
    return [name for name in names if name in initial and name in after
            and np.array_equal(np.asarray(initial[name]), np.asarray(after[name]))]


def _mismatched_trainability(pairs: list, keras: dict, frozen: list) -> list[tuple]:
    """(pair name, trainable in Keras, trainable in PyTorch) of every paired parameter trainable on one side only."""
    found = []
    for keras_index, torch_name in pairs:
        if _role(torch_name) in STATISTICS:
            continue
        layer, _, part = torch_name.rpartition(".")
        parts = [f"{layer}.{p}" for p in re.split(r"[|+]", part)] if ("|" in part or "+" in part) else [torch_name]
        torch_trainable = any(p not in frozen for p in parts)
        keras_trainable = bool(keras["trainable"][keras_index])
        if torch_trainable != keras_trainable:
            found.append((f"{keras['names'][keras_index]} ~ {torch_name}", keras_trainable, torch_trainable))
    return found


def verify_port_training(setup: tuple, keras_path: str, specs: list, labels, steps: int, batch: int = 8,
                         seed: int = 0, multiple: float | None = None, label: str = "",
                         reference: str = "torch") -> PortTraining:
    """Train the PyTorch setup and the compiled Keras model saved at `keras_path` `steps` steps on the same batches
    and compare after every step; the row says PASS, or FAIL at the first diverging step with its figure and the
    training bug named where a diagnosis recognises it. `reference`: "torch" (the PyTorch setup is the reference,
    the Keras model the port) or "keras" (the Keras model is the reference, `specs` in its layout; the PyTorch
    setup the port). The comparison is the same either way; the floor is the PyTorch side's float32 against
    float64 in both (rosetta trains PyTorch in float64, see the module docstring)."""
    from rosetta.execution import Job, execute
    from rosetta.frameworks import isolation
    from rosetta.models.inputs import generate_inputs
    from rosetta.verify.training_diagnoses import Evidence, diagnose_training

    from rosetta.sources.training_setup import is_gluon_setup_text

    if reference not in ("torch", "keras", "gluon"):
        raise BadInput(f"reference={reference!r}: 'torch', 'keras' or 'gluon'")
    side = "gluon" if is_gluon_setup_text(keras_path) else "keras"
    if reference not in ("torch", side):
        raise BadInput(f"reference={reference!r} with a {SIDES[side]} port: 'torch' or {side!r}")
    other_name = SIDES[side]
    module, optimizer, loss_fn = setup
    multiple = PORT_TRAINING_MULTIPLE if multiple is None else multiple
    if labels is None:
        raise BadInput("labels=: train_steps between two models needs the labels' spec, e.g. "
                       "labels='labels:N:int64:0:4' (class indices 0..3)")
    batches = []
    for step in range(steps):
        feeds = generate_inputs(tuple(specs), batch, seed * 1000 + step + 1)
        target = generate_inputs((labels,), batch, seed * 1000 + step + 500_000)[labels.name]
        batches.append(([feeds[spec.name] for spec in specs], target))
    start = time.perf_counter()
    mine = torch_setup(module, optimizer, loss_fn)
    rates = [d["rate"] for d in mine["dropout"]]
    if side == "gluon":  # built and trained only in the MXNet worker (MXNet never in this process)
        keras = execute(Job("rosetta.train.port_mxnet:train_port_job",
                            {"setup": str(keras_path), "batches": batches, "torch_dropout_rates": rates},
                            isolation("mxnet"), "gluon port training")).result
        keras["classes"] = [f"gluon:{owner}" for owner in keras["classes"]]
    else:
        keras = execute(Job("rosetta.train.port_keras:train_port_job",
                            {"path": str(keras_path), "batches": batches, "torch_dropout_rates": rates},
                            isolation("keras"), "keras port training")).result
    layout = torch_layout(module, batches[0][0]) if batches and reference == "keras" else ""
    torch_batches = [([moved(np.asarray(a), layout) for a in feeds], target) for feeds, target in batches]
    torch32, torch64 = (train_torch(module, optimizer, loss_fn, torch_batches, precision, keras["dropout_off"])
                        for precision in ("float32", "float64"))
    initial = initial_tensors(module)
    pairs, unpaired = pair_weights(list(keras["names"]), list(keras["initial"]), initial, keras.get("classes"))
    figures = step_figures(keras, torch32, torch64, pairs)
    other = {"keras": "keras", "gluon": "mxnet"}[side] if reference == "torch" else "torch"
    row = VerifyResult(model=label or type(module).__name__, route="port", target=other, verdict=PASS, reason="",
                       seed=seed, batch=batch, check="training", framework_version=str(keras["version"]),
                       tolerance={"multiple": multiple, "noise_floor": "PyTorch float32 vs float64, per step"})
    row.seconds["train"] = time.perf_counter() - start
    assumed = list(keras["assumed"])
    if mine["optimizer"].get("clip_grad_norm") is not None:
        assumed.append("PyTorch's global-norm clipping computed as Keras' global_clipnorm (without PyTorch's 1e-6 "
                       "added to the norm: a convention, modelled)")
    if layout:
        assumed.append("inputs channels-first on the PyTorch side (the Keras reference's are channels-last)")
    if any(layer["momentum"] is not None for layer in mine["batchnorm"]):
        assumed.append(f"running variances compared in {POSSESSIVE[side]} convention (biased batch variance), modelled "
                       "on the PyTorch side")
    if unpaired:
        assumed.append(f"{len(unpaired)} {other_name} weight(s) equal no PyTorch tensor before training, not compared: "
                       + ", ".join(unpaired[:4]))
    first_step = _first(figures, multiple)
    statistics = [(k, t) for k, t in pairs if _role(t) in STATISTICS]
    idle = {}
    if steps:
        keras_initial = {keras["names"][k]: keras["initial"][k] for k, _ in statistics}
        keras_after = {keras["names"][k]: keras["weights"][0][k] for k, _ in statistics}
        idle = {"keras": _idle_statistics(keras_initial, keras_after, list(keras_initial)),
                "torch": _idle_statistics(initial, torch64["states"][0], [t for _, t in statistics])}
    evidence = Evidence(mine, keras["setup"], first_step, _first(figures, multiple, "loss"),
                        _first(figures, multiple, "trainable"), _first(figures, multiple, "statistic"),
                        sorted((f for f in figures[first_step - 1] if f.ratio > multiple), key=lambda f: -f.ratio)
                        if first_step else [], (torch64["losses"], keras["losses"]), batch,
                        _mismatched_trainability(pairs, keras, mine["frozen"]), idle, reference)
    name, said = diagnose_training(evidence) if first_step else ("", "")
    row.outputs = [_comparison(f"loss[{steps} steps]", [r[0] for r in figures], multiple)]
    by_pair = {f.name: [] for f in figures[0][1:]} if figures else {}
    for r in figures:
        for f in r[1:]:
            by_pair[f.name].append(f)
    row.outputs += [_comparison(pair, values, multiple) for pair, values in by_pair.items()]
    row.training = {"steps": steps, "precision": "float32", "reference": reference, "torch": mine,
                    side: keras["setup"], "port_framework": other_name, "assumed": assumed, "paired": len(pairs), "unpaired": unpaired,
                    "first_step": first_step, "diagnosis": {"name": name, "says": said}}
    notes = "; ".join(assumed)
    if first_step is None:
        worst = max((f for r in figures for f in r), key=lambda f: f.ratio)
        row.reason = (f"{steps} steps alike: loss and {len(pairs)} paired tensors within {multiple:g} x noise floor "
                      f"(worst {worst.ratio:.3g} x, {worst.name} at step {worst.step})" + (f"; {notes}" if notes else ""))
        return PortTraining(row, figures, (name, said))
    worst = next((f for f in evidence.first if f.kind == "loss"), evidence.first[0])  # the loss first: it is the cause
    where = "the loss" if worst.kind == "loss" else f"{'parameter' if worst.kind == 'trainable' else 'statistic'} {worst.name}"
    if name == "dropout on one side":
        where = "the loss" if evidence.loss_step == first_step else "the forward pass"
    row.verdict = FAIL
    row.reason = (f"diverges first at step {first_step}: {where} ({worst.ratio:.3g} x noise floor); "
                  f"{evidence.structure()}" + (f"; named: {said}" if name else "; no known training bug matches")
                  + (f"; {notes}" if notes else ""))
    return PortTraining(row, figures, (name, said))


@dataclass(frozen=True)
class TrainingOptions:
    """What verify_port_training_files takes beside the models and batches: the tolerance multiple (None: the
    calibrated PORT_TRAINING_MULTIPLE), whether factory code may run, and the row's model label."""

    multiple: float | None = None
    trust_code: bool = False
    label: str = ""


def file_pair(reference, port) -> tuple:
    """(the factory's text, the checked .keras file or the Gluon factory's text, the reference's side "torch",
    "keras" or "gluon") of two model files that train against each other: one PyTorch factory and one compiled
    .keras file or one Gluon factory (a factory file that imports mxnet), in either order; refused in one line
    otherwise. Runs no code (a Gluon file's imports are read, not run): callers check this before any work."""
    from rosetta.sources.training_setup import GLUON_HELP, SETUP_HELP, check_compiled_keras, is_gluon_setup_text, \
        is_setup_text

    if is_setup_text(reference) and not is_setup_text(port):
        setup_text, other, side = reference, port, "torch"
    elif is_setup_text(port) and not is_setup_text(reference):
        setup_text, other, side = port, reference, "other"
    else:
        raise BadInput(f"train_steps= between two models takes {SETUP_HELP} and a compiled .keras file or "
                       f"{GLUON_HELP}, one PyTorch factory and one other; got {reference} and {port}")
    if is_gluon_setup_text(other):
        return setup_text, str(other), "gluon" if side == "other" else side
    return setup_text, check_compiled_keras(other), "keras" if side == "other" else side


def verify_port_training_files(reference, port, inputs: list, labels, steps: int, batch: int = 8, seed: int = 0,
                               options: TrainingOptions = TrainingOptions()) -> VerifyResult:
    """The training row of `rosetta verify REFERENCE PORT --train-steps N` between two model files: one of them a
    PyTorch factory `setup.py:fn` returning (module, optimizer, loss_fn) (run only with options.trust_code), the
    other a saved .keras file with its compile config, in either order (the first is the reference). `inputs`:
    the --input texts ("x:Nx6:float32") or TensorSpecs, in the reference's layout; `labels`: the --labels text
    ("labels:N:int64:0:4") or a TensorSpec."""
    from rosetta.sources.signature import parse_input_option
    from rosetta.sources.training_setup import check_gluon_setup, load_torch_setup

    if not inputs:
        raise BadInput("inputs=: train_steps= between two models needs the inputs' specs, e.g. "
                       "inputs=['x:Nx6:float32']")
    if labels is None:
        raise BadInput("labels=: train_steps= between two models needs the labels' spec, e.g. "
                       "labels='labels:N:int64:0:4' (class indices 0..3)")
    if steps < 1:
        raise BadInput(f"train_steps={steps}: give 1 or more")
    specs = [parse_input_option(s) if isinstance(s, str) else s for s in inputs]
    label_spec = parse_input_option(labels) if isinstance(labels, str) else labels
    setup_text, keras_file, side = file_pair(reference, port)  # before any code runs
    if isinstance(keras_file, str):  # a Gluon factory: run in the MXNet worker, with trust_code only
        keras_file = check_gluon_setup(keras_file, options.trust_code)
    setup = load_torch_setup(str(setup_text), options.trust_code)
    label = options.label or (str(setup_text) if side == "torch" else
                              keras_file.rpartition("/")[2] if isinstance(keras_file, str) else keras_file.name)
    return verify_port_training(setup, str(keras_file), specs, label_spec, steps, batch, seed, options.multiple,
                                label, side).row

"""Targets and routes. A *target* is the framework a converted model runs in; a *route* is how it got there.
Each target names the chain of formats its artifact goes through, from the PyTorch reference, and the
framework runner that loads the last artifact of the chain."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

from rosetta.errors import RosettaError
from rosetta.registry import Registry
from rosetta.settings import listed

# The export settings every target starts from (the torch.onnx exporter's), overridden by a target's own
# defaults and then by the user's: the artifact store keys an artifact by these effective settings, so
# `verify --opset 17` and `bench` (which names none) share one conversion. exporter "auto" is no exporter chosen:
# TorchScript's, and dynamo's where TorchScript's refuses the model (onnx.from_torch); one the user names is the
# only one tried, and keys an artifact of its own.
EXPORT_DEFAULTS = {"opset": 17, "exporter": "auto", "training": "eval"}

@dataclass(frozen=True)
class Target:
    name: str
    route: str
    chain: tuple[str, ...]  # formats, source first: ("torch", "onnx")
    runner: str  # framework name in rosetta.frameworks.RUNNERS
    description: str = ""
    verify_options: tuple = ()  # (key, value) pairs passed to the runner when verifying
    # (key, value) export defaults: trainable targets take the graph with BatchNorm kept (training=preserve),
    # so that the converted model has real BatchNorm layers and the reference's parameter count
    export: tuple = ()
    trains: bool = True  # --train-steps trains it where its framework has a trainer (see plan_training_cells)
    # ways in: (name, chain) of each converter that can make this target's artifact, tried in order where the one
    # before gives an artifact that does not verify (FAIL) or refuses (CANNOT); the first is `chain` itself
    # (verify.ways_in). One way: the target's chain, named after the target's converter
    ways_in: tuple = ()

    @property
    def ways(self) -> tuple[tuple[str, tuple[str, ...]], ...]:
        """(name, chain) of every way in, the target's own chain first."""
        return self.ways_in or ((self.name, self.chain),)

    def by_way(self, chain: tuple[str, ...]) -> "Target":
        """This target with its artifact made along `chain` (one of its ways in)."""
        from dataclasses import replace

        return replace(self, chain=tuple(chain))

    @property
    def artifact_format(self) -> str:
        return self.chain[-1]

    def export_options(self, overrides: dict | None = None) -> dict:
        """The effective export settings: the defaults, the target's own, then what the user asked for."""
        return {**EXPORT_DEFAULTS, **dict(self.export), **(overrides or {})}


TARGETS: Registry[Target] = Registry("target", key=lambda target: (target.route, target.name))
register_target = TARGETS.register


def load_verify_runner(framework: str, folder: Path, threads: int = 0, trust_code: bool = False,
                       precision: str = "float32", device: str = "cpu"):
    """The runner for an artifact as verification runs it: with the verify options of the targets its framework
    runs (ONNX Runtime with its optimiser off, see there), and trust_code where the framework reads code;
    `precision` float64 for a reference run in float64 (sources.model.FLOAT64_FORMATS)."""
    from rosetta.frameworks import load_runner, reads_code

    options = {"threads": threads, **({"precision": precision} if precision != "float32" else {}),
               **({"device": device} if device != "cpu" else {})}
    options.update(next((dict(t.verify_options) for t in TARGETS if t.runner == framework), {}))
    if reads_code(framework):
        options["trust_code"] = trust_code
    return load_runner(framework, folder, **options)


def list_routes() -> list[str]:
    return sorted({route for route, _ in TARGETS.keys()})


def list_targets(route: str = "onnx") -> list[str]:
    return [name for r, name in TARGETS.keys() if r == route]


def get_target(name: str, route: str = "onnx") -> Target:
    if route not in list_routes():
        raise RosettaError(f"unknown route {route!r}; choose from: {', '.join(list_routes())}")
    return TARGETS.get((route, name), label=f"{name!r} for route {route!r}", choices=list_targets(route) + ["all"])


def parse_target_list(text: str | Sequence[str], route: str = "onnx") -> list[Target]:
    names = list_targets(route) if listed(text) == ["all"] else listed(text)
    if not names:
        raise RosettaError("no target given; pass targets=NAME[,NAME...] or targets=all")
    return [get_target(n, route) for n in names]


register_target(Target("onnxruntime", "onnx", ("torch", "onnx"), "onnxruntime",
                       "torch.onnx.export, run in ONNX Runtime",
                       verify_options=(("optimization", "disabled"),)))
# onnx2tf guesses each tensor's axis order, and where two axes have the same size it can guess wrong without
# complaint (issue 45); the Keras mapper reads the ONNX layout as it is, so its model saved as a SavedModel is the
# second way in (convert.keras_to_tensorflow)
ONNX2TF_WAYS = (("onnx2tf", ("torch", "onnx", "tensorflow")),
                ("the Keras mapper", ("torch", "onnx", "keras", "tensorflow")))
register_target(Target("tensorflow", "onnx", ("torch", "onnx", "tensorflow"), "tensorflow",
                       "onnx2tf SavedModel (inference only), or the Keras mapper's model as a SavedModel where "
                       "onnx2tf's does not verify; run in TensorFlow", ways_in=ONNX2TF_WAYS))
register_target(Target("keras", "onnx", ("torch", "onnx", "keras"), "keras",
                       "rosetta's ONNX -> Keras 3 layer mapper (trainable), run in Keras",
                       export=(("training", "preserve"),)))
register_target(Target("torch", "onnx", ("torch", "onnx", "torch"), "torch",
                       "onnx2torch (+ rosetta's GRU and LSTM converters), run in PyTorch", export=(("training", "preserve"),)))
register_target(Target("mxnet", "onnx", ("torch", "onnx", "mxnet"), "mxnet",
                       "MXNet's ONNX importer (+ rosetta's graph fixes and GRU and Slice converters), run in Gluon",
                       export=(("training", "preserve"),)))


# The MMdnn route: the same target names, through MMdnn's IR (rosetta.convert.mmdnn). Inference only: the
# generated code is MMdnn's, and rosetta trains only what its own converters made.
for _name, _fmt, _runner, _what in (
    ("onnxruntime", "onnx", "onnxruntime", "MMdnn's ONNX emitter (opset 13), run in ONNX Runtime"),
    ("tensorflow", "tensorflow", "tensorflow", "MMdnn's TensorFlow emitter as a SavedModel, run in TensorFlow"),
    ("keras", "keras", "keras", "MMdnn's Keras emitter, run in Keras"),
    ("torch", "torch-code", "torch-code", "MMdnn's PyTorch emitter (generated module), run in PyTorch"),
    ("mxnet", "mxnet", "mxnet", "MMdnn's MXNet emitter, run in Gluon"),
):
    register_target(Target(_name, "mmdnn", ("torch", "mmdnn", _fmt), _runner, _what, trains=False,
                           verify_options=(("optimization", "disabled"),) if _runner == "onnxruntime" else
                           (("trust_code", True),) if _runner == "torch-code" else ()))


def parse_routes(text: str | Sequence[str]) -> list[str]:
    """`--via onnx,mmdnn`: routes side by side, in the order given."""
    routes = listed(text)
    if not routes:
        raise RosettaError(f"no route given; pass via=ROUTE[,ROUTE...] with routes from: {', '.join(list_routes())}")
    for route in routes:
        if route not in list_routes():
            raise RosettaError(f"unknown route {route!r}; choose from: {', '.join(list_routes())}")
    return list(dict.fromkeys(routes))


def target_for_conversion(to: str, route: str = "onnx") -> Target:
    """What `rosetta convert --to X` makes: X is a target name of the route, or a format one of them ends in."""
    if (route, to) in TARGETS:
        return TARGETS.get((route, to))
    for target in TARGETS:
        if target.route == route and target.chain[-1] == to:
            return target
    choices = sorted({t.chain[-1] for t in TARGETS if t.route == route} | set(list_targets(route)))
    raise RosettaError(f"cannot convert to {to!r} by route {route!r}; choose from: {', '.join(choices)}")
register_target(Target("tensorflow-roundtrip", "onnx", ("torch", "onnx", "tensorflow", "onnx"), "onnxruntime",
                       "the onnx2tf SavedModel taken back to ONNX by tf2onnx, run in ONNX Runtime",
                       verify_options=(("optimization", "disabled"),),
                       ways_in=tuple((name, chain + ("onnx",)) for name, chain in ONNX2TF_WAYS)))

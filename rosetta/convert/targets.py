"""Targets and routes. A *target* is the framework a converted model runs in; a *route* is how it got there.
Each target names the chain of formats its artifact goes through, from the PyTorch reference, and the
framework runner that loads the last artifact of the chain."""

from __future__ import annotations

from dataclasses import dataclass

from rosetta.errors import RosettaError


@dataclass(frozen=True)
class Target:
    name: str
    route: str
    chain: tuple[str, ...]  # formats, source first: ("torch", "onnx")
    runner: str  # framework name in rosetta.frameworks.RUNNERS
    description: str = ""
    verify_options: tuple = ()  # (key, value) pairs passed to the runner when verifying

    @property
    def artifact_format(self) -> str:
        return self.chain[-1]


_TARGETS: dict[tuple[str, str], Target] = {}


def register_target(target: Target) -> Target:
    key = (target.route, target.name)
    if key in _TARGETS:
        raise ValueError(f"target {key} is registered twice")
    _TARGETS[key] = target
    return target


def list_routes() -> list[str]:
    return sorted({route for route, _ in _TARGETS})


def list_targets(route: str = "onnx") -> list[str]:
    return [name for r, name in _TARGETS if r == route]


def get_target(name: str, route: str = "onnx") -> Target:
    try:
        return _TARGETS[(route, name)]
    except KeyError:
        if route not in list_routes():
            raise RosettaError(f"unknown route {route!r}; choose from: {', '.join(list_routes())}") from None
        raise RosettaError(f"unknown target {name!r} for route {route!r}; "
                           f"choose from: {', '.join(list_targets(route))} or all") from None


def parse_target_list(text: str, route: str = "onnx") -> list[Target]:
    names = list_targets(route) if text.strip() == "all" else [n.strip() for n in text.split(",") if n.strip()]
    if not names:
        raise RosettaError("no target given; pass --targets NAME[,NAME...] or --targets all")
    return [get_target(n, route) for n in names]


register_target(Target("onnxruntime", "onnx", ("torch", "onnx"), "onnxruntime",
                       "torch.onnx.export, run in ONNX Runtime",
                       verify_options=(("optimization", "disabled"),)))


def chain_for(to: str, route: str = "onnx") -> tuple[str, ...]:
    """The chain of formats for `rosetta convert --to X`: X is a target name of the route or a format."""
    if (route, to) in _TARGETS:
        return _TARGETS[(route, to)].chain
    for target in _TARGETS.values():
        if target.route == route and target.chain[-1] == to:
            return target.chain
    choices = sorted({t.chain[-1] for t in _TARGETS.values() if t.route == route} | set(list_targets(route)))
    raise RosettaError(f"cannot convert to {to!r} by route {route!r}; choose from: {', '.join(choices)}")

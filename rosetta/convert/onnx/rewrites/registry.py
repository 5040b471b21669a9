"""Every graph rewrite, registered by name with `@rewrite` in its family's module, so that tests run over the
registry (each registered rewrite has a graph it changes); and the pipelines: each target's REWRITES, a list of
registered rewrites run in order by `apply`, recorded in its manifest by `names`."""

from __future__ import annotations

from typing import Callable

_REWRITES: dict[str, Callable] = {}


def rewrite(function: Callable) -> Callable:
    """Decorator: `function` (ModelProto -> ModelProto) is a rewrite a pipeline may list."""
    if function.__name__ in _REWRITES:
        raise ValueError(f"rewrite {function.__name__} is registered twice")
    _REWRITES[function.__name__] = function
    return function


def registered() -> dict[str, Callable]:
    """{name: rewrite} of every registered rewrite (rosetta.convert.onnx.rewrites imported registers them all)."""
    return dict(sorted(_REWRITES.items()))


def apply(pipeline, model):
    """The model after each rewrite of `pipeline` in turn."""
    for step in pipeline:
        model = step(model)
    return model


def names(pipeline) -> list[str]:
    """A pipeline as its manifest records it: the rewrites' names, in order."""
    unregistered = [step.__name__ for step in pipeline if _REWRITES.get(step.__name__) is not step]
    if unregistered:
        raise ValueError(f"unregistered rewrites in a pipeline: {', '.join(unregistered)}")
    return [step.__name__ for step in pipeline]

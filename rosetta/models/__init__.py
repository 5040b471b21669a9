"""Reference models, defined once in PyTorch, and their registry.

The model modules (and so torch) are imported the first time the registry is asked for a model
(registry.REFERENCE_MODULES), so that `rosetta --help`, argument parsing and the checks made before any work
stay fast.
"""

from rosetta.models.registry import ModelSpec, TensorSpec, TrainingSpec, get_model, list_models, parse_model_list

__all__ = ["ModelSpec", "TensorSpec", "TrainingSpec", "get_model", "list_models", "parse_model_list"]

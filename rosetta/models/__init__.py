"""Reference models, defined once in PyTorch, and their registry.

Importing this package registers every reference model (and so imports torch); the CLI imports it only in
the commands that need models, so `rosetta --help` stays fast.
"""

from rosetta.models.registry import ModelSpec, TensorSpec, TrainingSpec, get_model, list_models, parse_model_list
from rosetta.models import cnn, gru, resnet50  # noqa: F401  (registration)

__all__ = ["ModelSpec", "TensorSpec", "TrainingSpec", "get_model", "list_models", "parse_model_list"]

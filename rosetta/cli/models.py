"""`rosetta models`: the reference models with their inputs and parameter counts."""

from __future__ import annotations

import argparse
from pathlib import Path

from rosetta.cli.options import EXIT_PASS, check_writable_file, console


def add_parser(commands, common: argparse.ArgumentParser) -> None:
    models = commands.add_parser("models", parents=[common], help="list the reference models",
                                 description="List the reference models with their inputs and parameter counts.",
                                 epilog="example: rosetta models --json models.json")
    models.add_argument("--json", metavar="FILE", type=Path, help="also write the list as JSON")


def run(args) -> int:
    from rosetta.models import get_model, list_models
    from rosetta.report.tables import models_table

    check_writable_file(args.json)
    specs = [get_model(name) for name in list_models()]
    console().print(models_table(specs))
    if args.json:
        from rosetta.atomic import atomic_write_json

        atomic_write_json(args.json, {"models": [spec.to_json() for spec in specs]})
    return EXIT_PASS

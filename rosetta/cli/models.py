"""`rosetta models`: the reference models with their inputs and parameter counts."""

from __future__ import annotations

import argparse
from pathlib import Path

from rosetta import api
from rosetta.cli.options import EXIT_PASS, console


def add_parser(commands, common: argparse.ArgumentParser) -> None:
    models = commands.add_parser("models", parents=[common], help="list the reference models",
                                 description="List the reference models with their inputs and parameter counts.",
                                 epilog="example: rosetta models --json models.json")
    models.add_argument("--json", metavar="FILE", type=Path, help="also write the list as JSON")


def run(args) -> int:
    api.check_writable(args.json)
    listing = api.models()
    listing.print(console())
    if args.json:
        api.write_json(args.json, listing.to_json())
    return EXIT_PASS

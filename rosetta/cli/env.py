"""`rosetta env`: what each framework is and sees here (rosetta.frameworks.environments), the first command a
user with a GPU runs."""

from __future__ import annotations

import argparse
from pathlib import Path

from rosetta import api
from rosetta.cli.options import EXIT_ERROR, EXIT_PASS, console


def add_parser(commands, common: argparse.ArgumentParser) -> None:
    env = commands.add_parser(
        "env", parents=[common], help="show each framework's version, devices, CUDA/cuDNN and settings",
        description="Per framework, read in the process that runs it in rosetta: its version, the devices it sees, "
                    "the CUDA and cuDNN versions of its build (a CPU build says so) and the speed settings "
                    "rosetta's runs use; then the converters' versions. A framework not installed says which "
                    "extra installs it (pip install 'dl-rosetta[EXTRA]'), or that none can on this Python. "
                    "Exit status 3 if a framework that is installed cannot be imported.",
        epilog="example: rosetta env --json env.json")
    env.add_argument("--json", metavar="FILE", type=Path, help="also write it as JSON")


def run(args) -> int:
    api.check_writable(args.json)
    listing = api.environment()
    listing.print(console())
    if args.json:
        api.write_json(args.json, listing.to_json())
    return EXIT_ERROR if listing.failed else EXIT_PASS

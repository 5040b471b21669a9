"""`rosetta env`: what each framework is and sees here (rosetta.frameworks.environments), the first command a
user with a GPU runs."""

from __future__ import annotations

import argparse
import os
import platform
import sys
from pathlib import Path

from rosetta.cli.options import EXIT_ERROR, EXIT_PASS, check_writable_file, console


def add_parser(commands, common: argparse.ArgumentParser) -> None:
    env = commands.add_parser(
        "env", parents=[common], help="show each framework's version, devices, CUDA/cuDNN and settings",
        description="Per framework, read in the process that runs it in rosetta: its version, the devices it sees, "
                    "the CUDA and cuDNN versions of its build (a CPU build says so) and the speed settings "
                    "rosetta's runs use; then the converters' versions. Exit status 3 if a framework the README "
                    "promises cannot be imported.",
        epilog="example: rosetta env --json env.json")
    env.add_argument("--json", metavar="FILE", type=Path, help="also write it as JSON")


def run(args) -> int:
    from rosetta.convert.registry import list_conversions
    from rosetta.frameworks import FRAMEWORKS, environments
    from rosetta.report.tables import environment_table

    check_writable_file(args.json)
    rows = environments()
    converters = {}
    for path in list_conversions():
        converters.update(path.versions())
    for framework in FRAMEWORKS:  # its version is its row's
        converters.pop(framework.name, None)
    console().print(environment_table(rows))
    console().print("converters: " + ", ".join(f"{name} {version}" for name, version in sorted(converters.items())))
    if args.json:
        from rosetta.atomic import atomic_write_json

        atomic_write_json(args.json, {"python": sys.version.split()[0], "platform": platform.platform(),
                                      "cpus": os.cpu_count(), "frameworks": rows, "converters": converters})
    return EXIT_ERROR if any(row["error"] for row in rows) else EXIT_PASS

"""What `rosetta env` shows: each framework's row (read in the process that runs it), the converters' versions,
and the machine."""

from __future__ import annotations

import os


def environment_said() -> tuple[list, dict, bool]:
    """(the table and the converters' line, the --json payload, whether a framework cannot be imported)."""
    import platform
    import sys

    from rosetta.convert.registry import list_conversions
    from rosetta.frameworks import FRAMEWORKS, environments
    from rosetta.report.tables import environment_table

    rows = environments()
    converters: dict = {}
    for path in list_conversions():
        converters.update(path.versions())
    for framework in FRAMEWORKS:  # its version is its row's
        converters.pop(framework.name, None)
    line = "converters: " + ", ".join(f"{name} {version}" for name, version in sorted(converters.items()))
    payload = {"python": sys.version.split()[0], "platform": platform.platform(), "cpus": os.cpu_count(),
               "frameworks": rows, "converters": converters}
    return [environment_table(rows), line], payload, any(row["error"] for row in rows)

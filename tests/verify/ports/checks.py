"""The one loop every port test runs (test_ports.py, test_unaligned_ports.py, test_library_ports.py,
test_hub_ports.py): `rosetta verify REFERENCE PORTS... --locate --json` as a user runs it, then each port's row
judged against its expectation, every miss collected so that one run shows every gap."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Callable

from tests.test_cli import run_here

PASS = ("PASS", (), (), "", ())


def problems_of(port: str, row: dict, expected: tuple) -> list[str]:
    """What in one port's result misses its expectation (verdict, reference modules of which one must be in the
    segment, port layers of which one must be, a phrase of the diagnosis, correct layers neither side may hold)."""
    verdict, reference_names, port_names, named, never = expected
    if row["verdict"] != verdict:
        return [f"{port}: verdict {row['verdict']}, expected {verdict} ({row.get('reason', '')})"]
    if verdict == "PASS":
        return [] if row["pairing"]["inputs"] else [f"{port}: the pairing it used is not said"]
    located = row.get("locate") or {}
    if located.get("verdict") != "located":
        return [f"{port}: locate {located.get('verdict')}: {located.get('reason', '')}"]
    segment = located.get("segment") or {}
    reference_side, port_side = list(segment.get("reference") or []), list(segment.get("port") or [])
    first = located.get("first") or {}
    if segment:
        found = []
        if not set(reference_names) & set(reference_side):
            found.append(f"{port}: reference segment {reference_side} holds none of {sorted(reference_names)}")
        if not set(port_names) & set(port_side):
            found.append(f"{port}: port segment {port_side} holds none of {sorted(port_names)}")
        if [first.get("node"), first.get("source_layer")] != reference_side[-1:] + port_side[-1:]:
            found.append(f"{port}: first {first.get('node')} / {first.get('source_layer')} is not the segment's "
                         "last layers")
    else:  # no segment: the layers it names are checked against those it must not blame
        found = [f"{port}: no segment (first at {first.get('node')} / {first.get('source_layer')})"]
        reference_side, port_side = [first.get("node")], [first.get("source_layer")]
    wrong = set(never) & (set(reference_side) | set(port_side))
    if wrong:
        found.append(f"{port}: {sorted(wrong)} named, correct layers (a wrong localisation)")
    if named not in located.get("diagnosis", ""):
        found.append(f"{port}: diagnosis {located.get('diagnosis')!r} does not say {named!r}")
    return found


def verify_ports(reference: str, options: list, expected: dict, report: Path,
                 judge: Callable[[str, dict, tuple], list[str]] = problems_of) -> dict[str, list[str]]:
    """{port: what misses its expectation} after one `rosetta verify REFERENCE --trust-code OPTIONS PORTS...
    --locate` (run in the current folder, where the factories are named as a user there names them); its exit
    status checked first: 1 where any port is expected to FAIL, else 0."""
    out = run_here("verify", reference, "--trust-code", *options, *expected, "--locate", "--no-progress",
                   "--json", report)
    status = int(any(expectation[0] != "PASS" for expectation in expected.values()))
    assert out.returncode == status, out.stdout[-3000:] + out.stderr[-3000:]
    rows = {row["target"]: row for row in json.loads(Path(report).read_text())["results"]}
    return {port: judge(port, rows[port], expectation) if port in rows else [f"{port}: no result"]
            for port, expectation in expected.items()}


def all_problems(found: dict[str, list[str]]) -> str:
    return "\n".join(problem for problems in found.values() for problem in problems)

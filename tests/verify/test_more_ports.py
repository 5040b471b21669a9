"""More hand ports (tests/verify/ports/more_table.py), the cheapest directions of the table: a PReLU MLP, average
pooling that counts its padding, a transposed-conv decoder; each correct port PASSes, each seeded bug FAILs and
is located at the segment that holds it with its cause named where it is a known class, and no segment holds a
correct layer. scripts/ports.py --tables more runs the whole table (depthwise-separable conv, squeeze-and-excitation,
a bidirectional LSTM, ...)."""

from __future__ import annotations

import pytest

from tests.shared import shared_folder
from tests.verify.ports.checks import all_problems, verify_ports
from tests.verify.ports.more_table import MORE, build

COMPACT = ("prelu", "average", "decoder")


@pytest.fixture(scope="module")
def more(tmp_path_factory):
    return shared_folder(tmp_path_factory, "more-ports", lambda folder: build(folder, COMPACT))


@pytest.mark.parametrize("direction", COMPACT)
def test_more_ports_verify_and_every_bug_is_located_at_its_segment(direction, more, tmp_path, monkeypatch):
    monkeypatch.chdir(more)  # the factories are named as a user in that folder names them
    reference, inputs, expected = MORE[direction]
    found = verify_ports(reference, inputs, expected, tmp_path / "r.json")
    assert not all_problems(found), all_problems(found)

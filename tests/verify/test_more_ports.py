"""More hand ports (tests/verify/ports/more_table.py), the cheapest directions of the table: a PReLU MLP, average
pooling that counts its padding, a transposed-conv decoder; each correct port PASSes, each seeded bug FAILs and
is located at the segment that holds it with its cause named where it is a known class, and no segment holds a
correct layer. scripts/ports.py --tables more runs the whole table (depthwise-separable conv, squeeze-and-excitation,
a bidirectional LSTM, ...)."""

from __future__ import annotations

import pytest

from tests.shared import shared_folder
from tests.verify.ports.checks import PASS, all_problems, problems_of, verify_ports
from tests.verify.ports.more_table import MORE, build

COMPACT = ("prelu", "average", "decoder")


@pytest.fixture(scope="module")
def more(tmp_path_factory):
    return shared_folder(tmp_path_factory, "more-ports", lambda folder: build(folder, (*COMPACT, "unet")))


@pytest.mark.parametrize("direction", COMPACT)
def test_more_ports_verify_and_every_bug_is_located_at_its_segment(direction, more, tmp_path, monkeypatch):
    monkeypatch.chdir(more)  # the factories are named as a user in that folder names them
    reference, inputs, expected = MORE[direction]
    found = verify_ports(reference, inputs, expected, tmp_path / "r.json")
    assert not all_problems(found), all_problems(found)


def _unlocated_at(phrase: str):
    """A judge for a bug whose tensors stop agreeing at one the reference's own code computes (torch.cat in
    forward): FAIL, `not located` with that tensor named, and no layer blamed."""
    def judge(port: str, row: dict, expected: tuple) -> list[str]:
        if expected[0] == "PASS":
            return problems_of(port, row, expected)
        located = row.get("locate") or {}
        if row["verdict"] != "FAIL" or located.get("verdict") != "not located":
            return [f"{port}: {row['verdict']} / {located.get('verdict')}: {located.get('reason', '')}"]
        problems = [] if phrase in located.get("reason", "") else [f"{port}: {located.get('reason')!r} names no "
                                                                   f"{phrase!r}"]
        return problems + ([f"{port}: blames {located['segment']}"] if located.get("segment") else [])
    return judge


def test_a_concat_in_the_other_order_is_not_located_and_no_layer_is_blamed(more, tmp_path, monkeypatch):
    """[skip, up] for PyTorch's torch.cat([up, skip]): the concat is code in forward, so no reference layer is its
    twin; locate says where the tensors stop agreeing (the head's input, from up) and blames neither conv."""
    monkeypatch.chdir(more)
    reference, inputs, _ = MORE["unet"]
    expected = {"unet.keras": PASS, "unet-concat.keras": ("FAIL",)}
    found = verify_ports(reference, inputs, expected, tmp_path / "r.json", judge=_unlocated_at("input of head"))
    assert not all_problems(found), all_problems(found)

"""A target with more than one way in (targets.Target.ways_in): where the first converter's artifact does not verify
(FAIL) or the converter refuses (CANNOT), the next way's artifact is made and verified, and the first that PASSes is
kept; the row and the manifest say which way was used and why each before it was left. A FAIL is kept only when no
later way PASSes, and then the row says each way's verdict. Where the first way PASSes nothing else is converted.

The one rule, `settle`, is used by both callers: a reference model's cell (verify.cells.run_cell) and a user's
model converted and verified (`rosetta convert PATH`, verify.files)."""

from __future__ import annotations

from dataclasses import replace
from pathlib import Path
from typing import Callable

from rosetta.manifest import WAY_IN, Manifest, way_in_entry
from rosetta.verify.results import CANNOT, FAIL, PASS, VerifyResult

TRIED_AGAIN = (FAIL, CANNOT)  # a crash (ERROR) stays the converter's ERROR; INCONCLUSIVE proves nothing either way
MANIFEST_KEY = WAY_IN  # in the kept artifact's manifest.converter (rosetta.manifest.way_in_entry)
KEPT = "PASSes (kept)"  # in the reason of a row whose artifact a later way in made


def how_it_went(name: str, result: VerifyResult) -> str:
    """"onnx2tf's artifact FAILed at 3.4e+06x the noise floor", "the Keras mapper could not make it (...)"."""
    if result.verdict == FAIL:
        ratios = [o.error_ratio for o in result.outputs if not o.passed and o.error_ratio == o.error_ratio]
        at = f" at {max(ratios):.3g}x the noise floor" if ratios else ""
        return f"{name}'s artifact FAILed{at}"
    if result.verdict == CANNOT:
        return f"{name} could not make it ({result.reason})"
    return f"{name}'s artifact: {result.verdict} ({result.reason})"


def settle(ways: tuple, first: tuple, attempt: Callable[[int], tuple]) -> tuple:
    """(result, payload, index of its way) to keep of a target's `ways` ((name, chain) each): `first` is ways[0]'s
    (result, payload), `attempt(i)` makes and verifies ways[i]. Where a later way is kept, or every way failed, the
    kept result's reason says each way tried; `payload` is the caller's (an artifact cell)."""
    tried = [first]
    for index in range(1, len(ways)):
        if tried[-1][0].verdict not in TRIED_AGAIN:
            break
        tried.append(attempt(index))
    if len(tried) == 1:
        return (*first, 0)
    kept = next((i for i, (result, _) in enumerate(tried) if result.verdict == PASS), None)
    if kept is None:  # every way failed: the first FAIL stands (the user's artifact), saying what each way gave
        kept = next((i for i, (result, _) in enumerate(tried) if result.verdict == FAIL), 0)
        said = "; ".join(f"{how_it_went(ways[i][0], r)}" + (f": {r.reason}" if r.verdict == FAIL else "")
                         for i, (r, _) in enumerate(tried))
        result, payload = tried[kept]
        return replace(result, reason=f"every way in failed: {said}"), payload, kept
    left = "; ".join(how_it_went(ways[i][0], r) for i, (r, _) in enumerate(tried[:kept]))
    result, payload = tried[kept]
    way = f"{left}; {ways[kept][0]}'s {KEPT}"
    return replace(result, reason="; ".join(filter(None, [way, result.reason]))), payload, kept


def took_another_way(reason: str) -> bool:
    """Whether a PASS row's artifact was made by a way in other than the target's first (its table line says so)."""
    return f"'s {KEPT}" in reason


def record_in_manifest(folder: str | Path, ways: tuple, kept: str, reason: str) -> None:
    """The kept artifact's manifest says which way in made it and why the ways before it were left."""
    if not folder or len(ways) < 2:
        return
    manifest = Manifest.read(Path(folder))
    manifest.converter = {**manifest.converter, **way_in_entry(kept, [name for name, _ in ways], reason)}
    manifest.write(Path(folder))


def user_model_ways(model, chosen: list, store, options: dict, feeds: dict, threads: int, cells: list,
                    results: list, verify: Callable[[list, dict], list]) -> tuple[list, list]:
    """`rosetta convert PATH`: for each target of `chosen` ((row name, Target)) with more than one way in whose
    row is a FAIL or a CANNOT, the next ways converted (convert.user.convert_user_model) and verified
    (`verify(cells, {row name: the way's Target}) -> results`) in turn, and the first that PASSes kept: (cells,
    results) with each row's cell and result replaced by the kept way's, whose manifest says so."""
    from rosetta.convert.user import convert_user_model

    targets = dict(chosen)
    cells, results = list(cells), list(results)
    for position, (cell, result) in enumerate(zip(cells, results)):
        target = targets.get(cell.target)
        if target is None or len(target.ways) < 2 or result.verdict not in TRIED_AGAIN:
            continue

        def attempt(index: int, name=cell.target, target=target):
            way = target.by_way(target.ways[index][1])
            converted = convert_user_model(model, [(name, way)], store, options, feeds, threads, progress=False)
            return verify(converted, {name: way})[0], converted[0]

        kept_result, kept_cell, kept = settle(target.ways, (result, cell), attempt)
        record_in_manifest(kept_cell.folder, target.ways, target.ways[kept][0], kept_result.reason)
        cells[position], results[position] = kept_cell, kept_result
    return cells, results

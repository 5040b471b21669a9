"""Every float32 case of ONNX's node test suite through ONNX's reference evaluator in float64, checked against
ONNX Runtime in float32 node by node (rosetta.frameworks.onnx_reference) and both against the suite's expected
outputs: which ops the evaluator computes wrongly, how large the differences of correct ops are (what
LOCAL_ULPS_BOUND is chosen from), and whether rosetta's own float64 ops (spec_ops) fix the wrong ones.

    python scripts/check_onnx_evaluator.py --json docs/onnx-evaluator.json --markdown docs/onnx-evaluator.md
    python scripts/check_onnx_evaluator.py --ops LRN,BatchNormalization      # a few ops

A case's *finding* (rosetta.verify.evaluator_check.classify): agrees (every node within LOCAL_ULPS_BOUND),
evaluator departs (its float64 output is further from the suite's expected output than ONNX Runtime's by more
than the bound), onnxruntime departs (the other way round), both depart, or why it was not run.
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))


def main() -> int:
    from rosetta.frameworks.onnx_reference import LOCAL_ULPS_BOUND
    from rosetta.progress import progress_bar
    from rosetta.verify.evaluator_check import (evaluator_cases, evaluator_summary, evaluator_table,
                                                run_evaluator_case)

    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--ops", help="only cases of these ops, comma-separated")
    parser.add_argument("--json", type=Path, help="write every case's finding")
    parser.add_argument("--markdown", type=Path, help="write the summary table")
    args = parser.parse_args()
    ops = args.ops.split(",") if args.ops else None
    start = time.perf_counter()
    cases = list(evaluator_cases(ops))
    rows = []
    with progress_bar(len(cases), "evaluator vs ONNX Runtime") as advance:
        for case in cases:
            rows.append(run_evaluator_case(*case))
            advance(case[0])
        advance(None)
    seconds = time.perf_counter() - start
    table = evaluator_table(rows, LOCAL_ULPS_BOUND, seconds)
    print(table)
    if args.json:
        args.json.write_text(json.dumps(evaluator_summary(rows, LOCAL_ULPS_BOUND, seconds), indent=1) + "\n")
    if args.markdown:
        args.markdown.write_text(table + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())

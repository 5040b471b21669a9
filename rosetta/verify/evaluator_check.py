"""ONNX's reference evaluator (float64) against ONNX Runtime (float32) and the spec, op by op, on ONNX's node
test suite: the measurement behind LOCAL_ULPS_BOUND and docs/onnx-evaluator.md, and the test that sees an
onnx upgrade that fixes or breaks an op of the evaluator (tests/frameworks/test_onnx_reference.py)."""

from __future__ import annotations

import math

import numpy as np

from rosetta.errors import one_line

AGREES, EVALUATOR_DEPARTS, ONNXRUNTIME_DEPARTS, BOTH_DEPART, UNDECIDED = (
    "agrees", "evaluator departs", "onnxruntime departs", "both depart from the suite",
    "parted, undecided (no expected outputs, no double kernel)")
EVALUATOR_FAILS = "evaluator raises (rosetta's op runs)"


def evaluator_cases(ops: list[str] | None = None, variants: bool = True):
    """(name, ops, model, inputs, outputs) of every node case whose float inputs are all float32, with a float32
    output: the cases where ONNX Runtime's float32 run and the evaluator's float64 run compute the same thing.

    The suite's cases share habits that hide some of the evaluator's faults (a batch as large as the channels,
    attributes left at their defaults, the newest opset), so with `variants` each case comes again as the same
    function written otherwise (`variants_of`); their expected outputs are unknown (None)."""
    from rosetta.verify.conformance import _raw_cases, _samples

    for name, _, model, case_ops, inputs, outputs, _, _ in _raw_cases(["node"], ops):
        arrays = [value for value in [*inputs, *outputs] if isinstance(value, np.ndarray)]
        if len(arrays) != len(inputs) + len(outputs) or "_expanded" in name or _samples(model):
            continue
        floats = {array.dtype for array in arrays if array.dtype.kind == "f"}
        if floats == {np.dtype(np.float32)} and any(o.dtype == np.float32 for o in outputs):
            yield name, case_ops, model, inputs, outputs
            if variants:
                for suffix, variant, variant_inputs in variants_of(model, inputs):
                    yield f"{name}{suffix}", case_ops, variant, variant_inputs, None


def variants_of(model, inputs: list):
    """(suffix, model, inputs) of the same case written as other exporters write it, where the checker takes it:
    - "+batch", "-batch": one sample more or fewer in every input of rank 3 or more that shares the first axis
      (an op that confuses the batch and channel axes computes the same when they are equal, as in most of
      the suite);
    - "+defaults": every optional attribute the node leaves out written with its default value (exporters write
      them all; the spec says that changes nothing);
    - "@opsetN": the graph stamped with each earlier opset at which its op's schema changed and the case is
      still valid (the evaluator has a class per version)."""
    import onnx

    rng = np.random.default_rng(0)
    batched = [a for a in inputs if a.ndim >= 3]
    if batched and len({a.shape[0] for a in batched}) == 1:
        size = batched[0].shape[0]
        for suffix, new_size in (("+batch", size + 1), ("-batch", size - 1)):
            if new_size < 1:
                continue
            resized = [np.concatenate([a, rng.standard_normal((1, *a.shape[1:])).astype(a.dtype)])[:new_size]
                       if a.ndim >= 3 and a.dtype.kind == "f" else a for a in inputs]
            if all(a.shape[0] == new_size for a in resized if a.ndim >= 3):
                yield suffix, _free_batch(model, len(inputs)), resized
    opset = next((o.version for o in model.opset_import if o.domain in ("", "ai.onnx")), 0)
    explicit = _with_defaults(model, opset)
    if explicit is not None and _valid(explicit):
        yield "+defaults", explicit, inputs
    versions = {schema.since_version for node in model.graph.node if node.domain in ("", "ai.onnx")
                for schema in onnx.defs.get_all_schemas_with_history()
                if schema.name == node.op_type and schema.domain == ""}
    for version in sorted(v for v in versions if v < opset):
        older = onnx.ModelProto()
        older.CopyFrom(model)
        for entry in older.opset_import:
            if entry.domain in ("", "ai.onnx"):
                entry.version = version
        if _valid(older):
            yield f"@opset{version}", older, inputs


def _free_batch(model, count: int):
    """The model with a symbolic first axis on its inputs of rank 3 or more, and no output shapes."""
    import onnx

    from rosetta.frameworks.onnx_graph import graph_inputs

    copy = onnx.ModelProto()
    copy.CopyFrom(model)
    for value in graph_inputs(copy)[:count]:
        dims = value.type.tensor_type.shape.dim
        if len(dims) >= 3:
            dims[0].dim_param = "N"
    for value in copy.graph.output:
        value.type.tensor_type.ClearField("shape")
    del copy.graph.value_info[:]
    return copy


def _with_defaults(model, opset: int):
    """The model with each node's unset optional attributes written out at their defaults (None: none unset)."""
    import onnx

    copy = onnx.ModelProto()
    copy.CopyFrom(model)
    added = False
    for node in copy.graph.node:
        try:
            schema = onnx.defs.get_schema(node.op_type, opset, node.domain)
        except Exception:  # noqa: BLE001 - a function or an unknown op
            continue
        present = {a.name for a in node.attribute}
        for name, attribute in schema.attributes.items():
            if name not in present and not attribute.required and attribute.default_value.name:
                node.attribute.append(attribute.default_value)
                added = True
    return copy if added else None


def _valid(model) -> bool:
    import onnx

    try:
        onnx.checker.check_model(model, full_check=True)
        return True
    except Exception:  # noqa: BLE001 - not a valid model at that opset
        return False


def run_evaluator_case(name: str, ops, model, inputs: list, outputs: list) -> dict:
    """One case: the evaluator's own ops and rosetta's (spec_ops) checked node by node against ONNX Runtime, and
    each side's outputs against the suite's expected ones, in float32 ulps at the output's scale."""
    from rosetta.frameworks.onnx_graph import graph_inputs
    from rosetta.frameworks.onnx_reference import checked_float64_run, float32_values, local_ulps

    row = {"case": name, "ops": list(ops), "finding": "", "evaluator_ulps": math.nan, "rosetta_ulps": math.nan,
           "evaluator_vs_suite": math.nan, "onnxruntime_vs_suite": math.nan, "node": "", "reason": ""}
    model = _runnable(model)
    feeds = {value.name: array for value, array in zip(graph_inputs(model), inputs)}
    names = [output.name for output in model.graph.output]
    try:
        float32 = float32_values(model, feeds)
    except Exception as error:  # noqa: BLE001 - ONNX Runtime lacks the op or the dtype
        return {**row, "finding": "not run", "reason": f"onnxruntime: {one_line(error)}"}
    for replace, key in ((True, "rosetta_ulps"), (False, "evaluator_ulps")):
        nodes: list = []
        try:
            float64, check = checked_float64_run(model, feeds, names, replace=replace, every_node=nodes)
        except Exception as error:  # noqa: BLE001 - the evaluator lacks the op or the dtype
            if replace:
                return {**row, "finding": "not run", "reason": f"evaluator: {one_line(error)}"}
            return {**row, "finding": EVALUATOR_FAILS, "reason": f"evaluator: {one_line(error)}"}
        worst = max(nodes, key=lambda node: node.ulps, default=None)
        row[key] = worst.ulps if worst else 0.0
        if not replace:
            row["node"] = f"{worst.node} ({worst.op})" if worst else ""
            if outputs is None:  # a variant: the suite has no expected outputs for it
                row["second_opinion"] = check.parted.note if check.parted else ""
                continue
            expected = dict(zip(names, outputs))
            float_outputs = [n for n in names if expected[n].dtype == np.float32]
            row["evaluator_vs_suite"] = max(local_ulps(expected[n], float64[n]) for n in float_outputs)
            row["onnxruntime_vs_suite"] = max(local_ulps(expected[n], float32[n]) for n in float_outputs)
    row["finding"] = classify(row)
    return row


def classify(row: dict) -> str:
    """Which side a case's difference is on (see the module docstring of scripts/check_onnx_evaluator.py); a
    variant, with no expected outputs, by ONNX Runtime's double kernel where it has one."""
    from rosetta.frameworks.onnx_reference import LOCAL_ULPS_BOUND as bound

    if row["evaluator_ulps"] <= bound:
        return AGREES
    if math.isnan(row["evaluator_vs_suite"]):
        return EVALUATOR_DEPARTS if row["rosetta_ulps"] <= bound else UNDECIDED
    evaluator_off, onnxruntime_off = row["evaluator_vs_suite"] > bound, row["onnxruntime_vs_suite"] > bound
    if evaluator_off and not onnxruntime_off:
        return EVALUATOR_DEPARTS
    if onnxruntime_off and not evaluator_off:
        return ONNXRUNTIME_DEPARTS
    return BOTH_DEPART if evaluator_off else AGREES


def _runnable(model):
    """The case at an IR version ONNX Runtime reads (the suite writes the newest one onnx knows)."""
    import onnx

    from rosetta.frameworks.onnx_graph import onnxruntime_ir_version

    copy = onnx.ModelProto()
    copy.CopyFrom(model)
    copy.ir_version = min(copy.ir_version, onnxruntime_ir_version())
    return copy


def evaluator_summary(rows: list[dict], bound: float, seconds: float) -> dict:
    """What docs/onnx-evaluator.json keeps: the agreeing cases as a count and their spread, every other case whole
    (a case it does not list agreed)."""
    agreeing = [row["evaluator_ulps"] for row in rows if row["finding"] == AGREES]
    return {"bound": bound, "seconds": round(seconds, 1), "cases": len(rows),
            "agreeing": {"cases": len(agreeing), "largest_ulps": max(agreeing, default=0.0),
                         "p99_ulps": float(np.percentile(agreeing, 99)) if agreeing else 0.0},
            "others": [{k: _finite(v) for k, v in row.items()} for row in rows if row["finding"] != AGREES]}


def _finite(value):
    """A figure as strict JSON holds it: NaN (not measured) and infinity (a non-finite difference) as null."""
    if isinstance(value, float):
        return round(value, 4) if math.isfinite(value) else None
    return value


HANDLED_BY = {"rosetta": "rosetta's float64 op (frameworks/onnx_reference.py: spec_ops)",
              "onnxruntime": "ONNX Runtime's double kernel stands in (checked per node)"}


def evaluator_table(rows: list[dict], bound: float, seconds: float) -> str:
    """docs/onnx-evaluator.md: the ops the evaluator computes wrongly, how rosetta handles each, every case that
    departs, and the spread of the agreeing ones."""
    import onnx

    from rosetta.frameworks.onnx_reference import spec_ops

    counts: dict[str, int] = {}
    for row in rows:
        counts[row["finding"]] = counts.get(row["finding"], 0) + 1
    agreeing = sorted(row["evaluator_ulps"] for row in rows if row["finding"] == AGREES)
    own = {cls.__name__ for cls in spec_ops()}
    faults: dict[str, list[dict]] = {}
    for row in rows:
        if row["finding"] in (EVALUATOR_DEPARTS, EVALUATOR_FAILS):
            faults.setdefault(", ".join(row["ops"]), []).append(row)
    lines = [f"# ONNX's reference evaluator in float64, op by op (onnx {onnx.__version__})", "",
             "rosetta runs an ONNX model in float64 through ONNX's reference evaluator to measure its float32 noise "
             "floor, and checks every node of that run against ONNX Runtime in float32 before believing it "
             "(`rosetta/frameworks/onnx_reference.py`). This page is `python scripts/check_onnx_evaluator.py --json "
             "docs/onnx-evaluator.json --markdown docs/onnx-evaluator.md`: every float32 case of ONNX's node test "
             "suite, and each again written as other exporters write it (`+batch`/`-batch`: one sample more or "
             "fewer; `+defaults`: every optional attribute written at its default; `@opsetN`: an earlier opset of "
             "the op's schema), run both ways and compared node by node, in float32 ulps at the output's scale.", "",
             f"{len(rows)} cases in {seconds:.0f} s; bound {bound:g} ulps: "
             + ", ".join(f"{finding} {count}" for finding, count in sorted(counts.items())) + ". Agreeing cases: "
             f"largest difference {agreeing[-1] if agreeing else 0:.3g} ulps (99th percentile "
             f"{np.percentile(agreeing, 99) if agreeing else 0:.3g}).", "",
             "## Where the evaluator departs from the spec, and what rosetta does", "",
             "| op | cases | largest difference (ulps) | what rosetta does |", "|---|---|---|---|"]
    for op, found in sorted(faults.items()):
        worst = max((r["evaluator_ulps"] for r in found if not math.isnan(r["evaluator_ulps"])), default=math.nan)
        raised = [r["reason"] for r in found if r["finding"] == EVALUATOR_FAILS]
        handled = HANDLED_BY["rosetta"] if op in own else HANDLED_BY["onnxruntime"]
        lines.append(f"| {op} | {', '.join(r['case'] for r in found)} | "
                     f"{'' if math.isnan(worst) else f'{worst:.3g}'}{'; raises ' + raised[0][11:90] if raised else ''} | "
                     f"{handled} |")
    lines += ["", "## Every case that does not agree", "",
              "| case | ops | finding | evaluator vs ORT (ulps) | with rosetta's ops | evaluator vs suite | ORT vs suite | node |",
              "|---|---|---|---|---|---|---|---|"]
    for row in sorted(rows, key=lambda r: (r["finding"], r["case"])):
        if row["finding"] in (AGREES, "not run"):
            continue
        figures = [f"{row[key]:.3g}" if not math.isnan(row[key]) else "" for key in
                   ("evaluator_ulps", "rosetta_ulps", "evaluator_vs_suite", "onnxruntime_vs_suite")]
        finding = row["finding"] + (f": {row['reason']}" if row["finding"] == EVALUATOR_FAILS else "")
        lines.append(f"| {row['case']} | {', '.join(row['ops'])} | {finding} | {' | '.join(figures)} | {row['node']} |")
    not_run: dict[str, int] = {}
    for row in rows:
        if row["finding"] == "not run":
            key = row["reason"].split(":")[0] + ": " + (row["reason"].split(":", 2)[1].strip()[:60] if ":" in row["reason"] else "")
            not_run[key] = not_run.get(key, 0) + 1
    lines += ["", "Not run (no float32 runtime or evaluator takes the case): " +
              "; ".join(f"{reason} ({count})" for reason, count in sorted(not_run.items(), key=lambda i: -i[1]))]
    return "\n".join(lines)

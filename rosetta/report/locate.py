"""What `rosetta verify --locate` draws: error/floor by depth in the graph, one line per target (PNG), and the
same figures as node data for Google's Model Explorer (`ai-edge-model-explorer`), to see the divergence on
the graph itself."""

from __future__ import annotations

import math
import re
from pathlib import Path

from rosetta.atomic import atomic_write_json
from rosetta.report.plots import save_figure
from rosetta.verify.locate import LocateReport

PASS_COLOUR, FAIL_COLOUR, UNREAD_COLOUR = "#b7e1b0", "#f4a09a", "#d9d9d9"


def depth_chart(model: str, reports: list[LocateReport], multiple: float, path: Path) -> Path:
    """error / noise floor of every node output by its position in the graph (log scale), one line per target;
    the tolerance as a dashed line, each target's first divergence marked and named."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    figure, axis = plt.subplots(figsize=(10, 4.8))
    for report in reports:
        rows = [row for row in report.rows if row.passed is not None and math.isfinite(row.error_ratio)]
        if not rows:
            continue
        line, = axis.plot([row.index for row in rows], [max(row.error_ratio, 1e-3) for row in rows], marker=".",
                          label=report.target, linewidth=1.2)
        if report.first is not None and math.isfinite(report.first.error_ratio):
            axis.scatter([report.first.index], [report.first.error_ratio], s=90, facecolors="none",
                         edgecolors=line.get_color(), linewidths=2)
            axis.annotate(report.first.node, (report.first.index, report.first.error_ratio), fontsize=8,
                          xytext=(6, 6), textcoords="offset points", color=line.get_color())
    axis.axhline(multiple, color="black", linestyle="--", linewidth=1, label=f"tolerance ({multiple:g}x)")
    axis.set_yscale("log")
    graph = "MMdnn IR" if any(report.graph == "mmdnn" for report in reports) else "ONNX graph"
    axis.set_xlabel(f"node (position in the {graph}'s topological order)")
    axis.set_ylabel("max error / the tensor's own noise floor")
    axis.set_title(f"{model}: where each target diverges from the reference")
    axis.grid(alpha=0.3)
    axis.legend(fontsize=8)
    figure.tight_layout()
    return save_figure(figure, path)


def explorer_node_data(report: LocateReport, multiple: float) -> dict:
    """Model Explorer's node data for one graph (its GraphNodeData JSON): each node keyed by its output tensor's
    name, the value its error / noise floor; green up to the tolerance, red above; unread nodes grey."""
    results = {}
    for row in report.rows:
        if row.passed is None or not math.isfinite(row.error_ratio):
            results[row.tensor] = {"value": -1, "bgColor": UNREAD_COLOUR}
        else:
            results[row.tensor] = {"value": round(row.error_ratio, 4),
                                   **({"bgColor": FAIL_COLOUR} if not row.passed else {})}
    if report.first is not None and report.first.tensor not in results:
        results[report.first.tensor] = {"value": round(report.first.error_ratio, 4), "bgColor": FAIL_COLOUR}
    return {"results": results,
            "thresholds": [{"value": multiple, "bgColor": PASS_COLOUR}, {"value": 1e300, "bgColor": FAIL_COLOUR}]}


def write_locate_reports(results: list, folder: Path, multiple: float) -> list[Path]:
    """For every model with located FAIL rows: locate-MODEL.png and locate-MODEL-TARGET.explorer.json (for the
    MMdnn route, whose nodes are its IR's: locate-MODEL-mmdnn.png, locate-MODEL-mmdnn-TARGET.explorer.json,
    keyed by the source's tensors)."""
    from rosetta.verify.locate import report_from_json

    folder = Path(folder)
    folder.mkdir(parents=True, exist_ok=True)
    written, by_model = [], {}
    for result in results:
        if result.locate:
            report = report_from_json(result.locate)
            name = result.model if report.graph == "onnx" else f"{result.model}-{report.graph}"
            by_model.setdefault(name, []).append(report)
    names: dict[str, str] = {}  # file name -> the names it was made from: two may not share one
    for model, reports in by_model.items():
        written.append(depth_chart(model, reports, multiple, folder / _file_name(f"locate-{model}", ".png", names)))
        for report in reports:
            path = folder / _file_name(f"locate-{model}-{report.target}", ".explorer.json", names)
            atomic_write_json(path, explorer_node_data(report, multiple))
            written.append(path)
    return written


def _file_name(name: str, suffix: str, taken: dict[str, str]) -> str:
    """`name` + `suffix` as one file name in the folder: a model or target named by a path ('ports/net.keras',
    '../a.onnx') or a factory ('nets.py:cnn') gives its folders' separators and other odd characters as '_';
    a name another one already gave gets -2, -3, ..."""
    stem = re.sub(r"[^\w.+=:-]+", "_", name).strip("_") or "locate"
    candidate, n = stem + suffix, 1
    while taken.get(candidate, name) != name:
        n += 1
        candidate = f"{stem}-{n}{suffix}"
    taken[candidate] = name
    return candidate

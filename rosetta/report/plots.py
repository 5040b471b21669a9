"""PNG charts of results (matplotlib, Agg backend: no display needed)."""

from __future__ import annotations

from pathlib import Path


def save_figure(figure, path: Path) -> Path:
    """The figure as a PNG file, written whole or not at all (rosetta.atomic), then closed."""
    import matplotlib.pyplot as plt

    from rosetta.atomic import atomic_write

    try:
        return atomic_write(path, lambda stream: figure.savefig(stream, format="png", dpi=110))
    finally:
        plt.close(figure)


def inference_chart(rows: list[dict], path: Path, title: str) -> Path:
    """One panel per model, one bar per target: median inference time in ms with p10-p90 whiskers.
    Each panel has its own scale (ResNet-50 is ~50x the CNN); failed targets are drawn as 'FAIL'."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    models = list(dict.fromkeys(row["model"] for row in rows))
    figure, axes = plt.subplots(1, len(models), figsize=(5.5 * len(models), 4.5), squeeze=False)
    for axis, model in zip(axes[0], models):
        entries = [row for row in rows if row["model"] == model]
        names = [row["target"].replace(" (torch eager)", "\n(torch eager)") for row in entries]
        medians = [1e3 * row["inference"]["median_s"] if "inference" in row else 0.0 for row in entries]
        low = [m - 1e3 * row["inference"]["p10_s"] if "inference" in row else 0.0 for m, row in zip(medians, entries)]
        high = [1e3 * row["inference"]["p90_s"] - m if "inference" in row else 0.0 for m, row in zip(medians, entries)]
        colours = ["#888888" if row["target"].startswith("reference") else "#3b75af" for row in entries]
        bars = axis.bar(range(len(entries)), medians, yerr=[low, high], color=colours, capsize=3)
        for bar, row, median, whisker in zip(bars, entries, medians, high):
            label = "FAIL" if "inference" not in row else f"{median:.1f}"
            axis.annotate(label, (bar.get_x() + bar.get_width() / 2, median + whisker), ha="center", va="bottom", fontsize=8,
                          xytext=(0, 2), textcoords="offset points", color="red" if label == "FAIL" else "black")
        axis.set_xticks(range(len(entries)), names, rotation=40, ha="right", fontsize=8)
        axis.set_title(model)
        axis.set_ylabel("ms per batch (median, p10-p90)")
        axis.grid(axis="y", alpha=0.3)
    figure.suptitle(title)
    figure.tight_layout()
    return save_figure(figure, path)


def bench_chart(workload, results: list, path: Path, device: str) -> Path:
    """One bar per target in the workload's DLF unit (lower is faster), p10-p90 whiskers, native baselines in green; FAIL rows drawn as
    'FAIL'. On GPU, DLF's published K80 and P100 figures stand beside ours, hatched."""
    import math

    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    rows = [r for r in results if r.workload == workload.name]
    per_unit = [r.dlf_value / r.median_s if r.status == "ok" and r.median_s else 0.0 for r in rows]
    names = [f"{r.target}\n({device})" for r in rows]
    values = [r.dlf_value if r.status == "ok" else 0.0 for r in rows]
    low = [v - r.p10_s * k if r.status == "ok" else 0.0 for v, r, k in zip(values, rows, per_unit)]
    high = [r.p90_s * k - v if r.status == "ok" else 0.0 for v, r, k in zip(values, rows, per_unit)]
    colours = ["#888888" if "reference" in r.target or "bare" in r.target else
               "#5a9e4b" if r.target.endswith("(native)") else "#3b75af" for r in rows]
    if device == "cuda":
        for gpu, hatch in (("K80", "//"), ("P100", "..")):
            for framework, value in workload.dlf.get(gpu, {}).items():
                names.append(f"DLF {framework}\n({gpu})")
                values.append(value)
                low.append(0.0)
                high.append(0.0)
                colours.append("#d9a441" if gpu == "K80" else "#c4622d")
    figure, axis = plt.subplots(figsize=(max(6.0, 0.9 * len(names) + 2), 4.8))
    bars = axis.bar(range(len(names)), values, yerr=[low, high], color=colours, capsize=3)
    for index, (bar, value, whisker) in enumerate(zip(bars, values, high)):
        failed = index < len(rows) and rows[index].status != "ok"
        label = rows[index].status if failed else (f"{value:.3g}" if not math.isnan(value) else "-")
        axis.annotate(label, (bar.get_x() + bar.get_width() / 2, value + whisker), ha="center", va="bottom", fontsize=8,
                      xytext=(0, 2), textcoords="offset points", color="red" if failed else "black")
    axis.set_xticks(range(len(names)), names, rotation=40, ha="right", fontsize=8)
    axis.set_ylabel(f"{workload.unit} (median, p10-p90; lower is faster)")
    axis.set_title(f"{workload.name}: {workload.description}", fontsize=10)
    axis.grid(axis="y", alpha=0.3)
    figure.tight_layout()
    return save_figure(figure, path)

"""PNG charts of results (matplotlib, Agg backend: no display needed)."""

from __future__ import annotations

from pathlib import Path


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
    path = Path(path)
    figure.savefig(path, dpi=110)
    plt.close(figure)
    return path

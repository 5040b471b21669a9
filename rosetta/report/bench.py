"""What `rosetta bench` says of a run besides its table (rosetta.bench.plan.BenchRun): the lines before the rows'
own (where it ran, the device's peak), after them (notes, the charts written), and the --json payload."""

from __future__ import annotations

from dataclasses import dataclass, field

from rosetta.settings import RunSettings


@dataclass
class BenchSaid:
    payload: dict  # exactly what `rosetta bench --json` writes
    head: list[str] = field(default_factory=list)  # printed after the table, before the rows' lines
    tail: list[str] = field(default_factory=list)  # printed after the rows' lines


def bench_said(done, run: RunSettings, timing, executor: str) -> BenchSaid:
    """`done` (a BenchRun) timed as `timing` (rosetta.bench.run.BenchOptions) says; with timing.plot_dir one PNG
    chart per workload, written there."""
    from rosetta.report.plots import bench_chart
    from rosetta.version import __version__

    head = [f"executor: {executor}"]
    if done.peak:
        head.append(f"device peak: {done.peak['flops_per_s'] / 1e12:,.1f} TFLOP/s ({done.peak['matmul']} in "
                    f"{done.peak['dtype']}, {done.peak['precision in force']}) on {done.peak['device']}")
    tail = list(done.notes)
    if timing.plot_dir is not None:
        tail += [f"chart: {bench_chart(w, done.results, timing.plot_dir / f'{w.name}.png', run.device)}"
                 for w in done.workloads]
    payload = {"rosetta_version": __version__, "device": run.device, "threads": run.threads,
               "workers": timing.workers, "batch": run.batch, "speed": timing.speed, "peak": done.peak,
               "baseline": timing.baseline, "rounds": timing.rounds if timing.baseline == "native" else None,
               "executor": executor, "workloads": [w.__dict__ for w in done.workloads],
               "results": [r.to_json() for r in done.results], "overhead": done.overheads, "notes": done.notes}
    return BenchSaid(payload, head, tail)

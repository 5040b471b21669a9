"""Rich tables of results: one row per (model, route, target, output)."""

from __future__ import annotations

import math

from rosetta.errors import plain
from rosetta.verify.results import CANNOT, ERROR, FAIL, INCONCLUSIVE, PASS, VerifyResult


def _fmt(value: float, digits: int = 2) -> str:
    if value is None or (isinstance(value, float) and math.isnan(value)):
        return "-"
    return f"{value:.{digits}e}"


def verify_table(results: list[VerifyResult], title: str = "rosetta verify"):
    from rich.table import Table

    table = Table(title=title, title_justify="left")
    for column, justify in (("model", "left"), ("route", "left"), ("target", "left"), ("output", "left"),
                            ("max abs err", "right"), ("scaled err", "right"), ("noise floor", "right"),
                            ("err/floor", "right"), ("cosine", "right"), ("in tol", "right"), ("verdict", "center")):
        table.add_column(column, justify=justify, no_wrap=column != "output")
    for result in results:
        if not result.outputs:  # the path failed before producing outputs: the row still shows, with its verdict
            table.add_row(result.model, result.route, result.target, "-", "-", "-", "-", "-", "-", "-",
                          _verdict(result.verdict))
        for output in result.outputs:
            ratio = "-" if math.isnan(output.error_ratio) else f"{output.error_ratio:.2f}"
            cosine = "-" if math.isnan(output.cosine) else f"{output.cosine:.8f}"
            within = "-" if math.isnan(output.within_tolerance) else f"{100 * output.within_tolerance:.1f}%"
            table.add_row(result.model, result.route, result.target, output.name,
                          _fmt(output.max_abs_error), _fmt(output.scaled_error), _fmt(output.noise_floor),
                          ratio, cosine, within,
                          _verdict(FAIL if not output.passed else
                                   (result.verdict if decided_on_intermediates(result.reason) else INCONCLUSIVE)
                                   if output.uninformative else PASS))
    return table


VERDICT_STYLE = {PASS: "green", FAIL: "red", ERROR: "bold red", CANNOT: "yellow", INCONCLUSIVE: "yellow"}


def decided_on_intermediates(reason: str) -> bool:
    """The row's outputs did not depend on the input and its verdict was decided on its intermediates
    (verify.files._decide_on_intermediates; a later way in's reason holds it after the earlier ways'): its
    outputs' rows show that verdict, and its line says how."""
    from rosetta.verify.locate import DECIDED_ON_INTERMEDIATES

    return DECIDED_ON_INTERMEDIATES in reason


def _verdict(verdict: str) -> str:
    style = VERDICT_STYLE.get(verdict)
    return f"[{style}]{verdict}[/{style}]" if style else verdict


def verdict_message(row: VerifyResult) -> str:
    """'FAIL: keras: output logits: max |err| 3.1e-02 > tolerance 4.0e-06 (10.5 x noise floor); diverges first at
    conv2 (introduced)': the row's verdict, its worst output's figures against its tolerance, where it diverges."""
    if row.check == "training" and row.route == "port":  # a port's training: its first diverging step, named
        return f"{row.verdict}: {row.target}: training: {row.reason}"
    failing = [o for o in row.outputs if not o.passed and math.isfinite(o.max_abs_error)]
    if not failing:
        text = f"{row.verdict}: {row.target}: {row.reason}"
    else:
        worst = max(failing, key=lambda o: o.error_ratio if math.isfinite(o.error_ratio) else math.inf)
        tolerance = row.tolerance or {}
        if tolerance.get("atol") is None and tolerance.get("rtol") is None:
            from rosetta.verify.tolerance import DEFAULT_MULTIPLE

            multiple = tolerance.get("multiple", DEFAULT_MULTIPLE)
            unit = "noise floor" if tolerance.get("float64_reference", True) else "float32 ulp at scale"
            limit = f"{multiple * worst.noise_floor:.2g} ({multiple:g} x {unit})"
        else:
            limit = f"atol={tolerance.get('atol') or 0:g} rtol={tolerance.get('rtol') or 0:g}"
        text = f"{row.verdict}: {row.target}: output {worst.name}: max |err| {worst.max_abs_error:.2g} > tolerance {limit}"
    located = row.locate or {}
    first = located.get("first") or {}
    if located.get("verdict") == "located" and first:
        notes = [located["origin"]] if located.get("origin") else []
        if located.get("graph") == "layers":  # two models' layers: the reference's, and the port's beside it
            where = first.get("node")
            if first.get("source_layer") and first.get("source_layer") != where:
                notes.append(f"the port's {first['source_layer']}")
        else:  # an ONNX node or MMdnn IR node: the source model's layer it came from, where known
            where = first.get("source_layer") or first.get("node")
        text += f"; diverges first at {where}" + (f" ({'; '.join(notes)})" if notes else "")
    return text


def failure_lines(results: list[VerifyResult]) -> list[str]:
    """One line per row that is not a PASS (or is a PASS by a target's later way in): its verdict (styled), the
    cell, and the reason; under a FAIL that
    was located (--locate), where it diverges."""
    from rich.markup import escape

    from rosetta.verify.ways_in import took_another_way

    lines = []
    for r in results:
        # a PASS by a target's later way in (the Keras mapper's SavedModel for tensorflow) says so too
        if r.verdict not in (PASS, "converted") or (r.verdict == PASS and (took_another_way(r.reason) or
                                                                           decided_on_intermediates(r.reason))):
            lines.append(f"{_verdict(r.verdict)} {r.model} -> {r.target} ({r.route}): {escape(plain(r.reason))}")
        if r.locate:
            from rosetta.verify.locate import report_from_json

            lines.append(f"  [bold]where[/]: {escape(report_from_json(r.locate).summary())}")
    return lines


def locate_table(result: VerifyResult, after: int = 2):
    """The per-node rows of a located FAIL, up to `after` rows past the first failing one."""
    from rich.markup import escape
    from rich.table import Table

    from rosetta.verify.locate import report_from_json

    report = report_from_json(result.locate)
    table = Table(title=f"where {result.model} -> {result.target} diverges ({report.mechanism})", title_justify="left")
    node, layer = {"mmdnn": ("MMdnn IR node", "source layer"), "layers": ("reference layer", "the port's layer")
                   }.get(report.graph, ("ONNX node", "torch module"))
    for column in ("#", node, "op", layer, "error / floor", "", "origin"):
        table.add_column(column)
    failing = [n for n, row in enumerate(report.rows) if row.passed is False]
    last = (failing[0] + after) if failing else len(report.rows) - 1
    for row in report.rows[: last + 1]:
        verdict = "?" if row.passed is None else (PASS if row.passed else "FAIL")
        table.add_row(str(row.index), escape(row.node), row.op, escape(row.source_layer),
                      "" if row.passed is None else f"{row.error_ratio:.3g}", _verdict(verdict), row.origin)
    return table


def _signature(tensors) -> str:
    return ", ".join(f"{t.name} {t.dtype}[{','.join('N' if d is None else str(d) for d in t.shape)}]" for t in tensors)


def models_table(specs):
    from rich.table import Table

    table = Table(title="reference models", title_justify="left")
    for column in ("name", "inputs", "outputs", "parameters", "DLF training", "description"):
        table.add_column(column)
    for spec in specs:
        training = "forward only"
        if spec.training and spec.training.dlf:
            settings = ", ".join(f"{k}={v}" for k, v in spec.training.optimizer_settings.items())
            training = f"{spec.training.epochs} epochs, batch {spec.training.batch}, {spec.training.optimizer} {settings}"
        table.add_row(spec.name, _signature(spec.inputs), _signature(spec.outputs), f"{spec.parameter_count:,}",
                      training, spec.description)
    return table


def bench_table(results, overheads: dict | None = None, title: str = "rosetta bench"):
    from rich.table import Table

    import math

    table = Table(title=title, title_justify="left")
    versus = any(not math.isnan(r.versus_native) for r in results)
    peak = any(not math.isnan(r.fraction_of_peak) for r in results)  # GPU runs
    for column, justify in (("workload", "left"), ("target", "left"), ("device", "left"), ("steps", "right"),
                            ("median / step", "right"), ("p10-p90", "right"), ("samples/s", "right"),
                            ("DLF unit", "right"), *([("of peak", "right")] if peak else []), ("peak RSS", "right"),
                            ("peak GPU", "right"), *([("converted / native", "right")] if versus else []),
                            ("status", "center")):
        table.add_column(column, justify=justify)
    for r in results:
        ratio = ([_ratio_cell(r.versus_native)] if versus else [])
        fraction = [f"{100 * r.fraction_of_peak:.1f}%" if not math.isnan(r.fraction_of_peak) else "-"] if peak else []
        if r.status != "ok":
            status = "[red]FAIL[/red]" if r.status == "FAIL" else f"[yellow]{r.status}[/yellow]"
            table.add_row(r.workload, r.target, r.device, str(r.steps), "-", "-", "-", "-", *(["-"] if peak else []),
                          "-", "-", *ratio, status)
            continue
        table.add_row(r.workload, r.target, r.device, str(r.steps), f"{1e3 * r.median_s:.1f} ms",
                      f"{1e3 * r.p10_s:.1f}-{1e3 * r.p90_s:.1f} ms", f"{r.samples_per_s:,.1f}",
                      f"{r.dlf_value:.3g} {r.unit}", *fraction, f"{r.peak_rss_mb:,.0f} MiB" if r.peak_rss_mb else "-",
                      f"{r.peak_device_mb:,.0f} MiB" if r.peak_device_mb else "-", *ratio, "[green]ok[/green]")
    return table


SLOWER_THAN_NATIVE = 1.10  # converted / native above this: the conversion costs time (issue 17's threshold)


def _ratio_cell(ratio: float) -> str:
    import math

    if math.isnan(ratio):
        return "-"
    return f"[red]{ratio:.2f}x[/red]" if ratio > SLOWER_THAN_NATIVE else f"{ratio:.2f}x"


def bench_lines(results, overheads: dict) -> list[str]:
    """Ratios to the reference per workload, the harness overhead, and the reasons of failed cells."""
    from rich.markup import escape

    lines = []
    for workload in dict.fromkeys(r.workload for r in results):
        rows = [r for r in results if r.workload == workload]
        reference = next((r for r in rows if "reference" in r.target and r.status == "ok"), None)
        for r in rows:
            if r.status == "FAIL":
                lines.append(f"[red]FAIL[/red] {workload} {r.target}: {escape(plain(r.reason))}")
            elif r.status != "ok":
                lines.append(f"[yellow]{r.status}[/yellow] {workload} {r.target}: {escape(plain(r.reason))}")
            elif reference is not None and r is not reference:
                lines.append(f"{workload}: {r.target} takes {r.median_s / reference.median_s:.2f}x the reference's time")
            versus = r.extra.get("versus_native") if r.status == "ok" else None
            if versus:
                lines.append(f"{workload}: {r.target} takes {r.versus_native:.2f}x its framework's native model's "
                             f"time ({1e3 * versus['converted_s']:.1f} vs {1e3 * versus['native_s']:.1f} ms, medians "
                             f"of {versus['rounds']} alternating rounds)")
            parallel = r.extra.get("parallel") if r.status == "ok" else None
            if parallel:
                lines.append(f"{workload}: {r.target} on {parallel['workers']} workers ({parallel['how']}): "
                             f"{parallel['samples_per_s']:,.1f} samples/s, {parallel['per_worker_samples_per_s']:,.1f} "
                             f"per worker; 1 worker: {parallel['single_worker_samples_per_s']:,.1f}; scaling "
                             f"efficiency {100 * parallel['efficiency']:.0f}% ({parallel['threads_per_worker']} "
                             f"threads per worker)")
            verified = r.extra.get("verified")
            if verified:
                colour = "green" if verified["verdict"] == "PASS" else "red"
                lines.append(f"{workload}: {r.target} has the reference's weights; against the reference: "
                             f"[{colour}]{verified['verdict']}[/{colour}] (error {verified['error_ratio']:.2g}x the "
                             f"noise floor){': ' + verified['reason'] if verified['reason'] else ''}")
        overhead = overheads.get(workload)
        if overhead and "overhead" in overhead:
            lines.append(f"{workload}: harness {1e3 * overhead['harness_s_per_step']:.1f} ms/step vs bare PyTorch loop "
                         f"{1e3 * overhead['bare_s_per_step']:.1f} ms/step: overhead {100 * overhead['overhead']:+.1f}% "
                         f"(median of {overhead['rounds']} alternating rounds, which ranged "
                         f"{100 * overhead['overhead_range'][0]:+.1f}% to {100 * overhead['overhead_range'][1]:+.1f}%)")
        elif overhead:
            lines.append(f"[red]overhead measurement failed[/red] {workload}: {overhead.get('error')}")
    return lines


def environment_table(rows: list[dict]):
    """`rosetta env`: per framework, its version, the devices it sees, its build's CUDA and cuDNN, and the
    settings rosetta's runs use."""
    from rich.markup import escape
    from rich.table import Table

    table = Table(title="rosetta env", title_justify="left")
    for column in ("framework", "version", "devices", "CUDA", "cuDNN", "settings"):
        table.add_column(column, overflow="fold")
    for row in rows:
        if row["error"]:
            table.add_row(row["framework"], "[bold red]not usable[/]", "-", "-", "-", escape(row["error"]))
            continue
        if row.get("missing"):  # an extra not installed: what installs it, not an error
            table.add_row(row["framework"], "[yellow]not installed[/]", "-", "-", "-", escape(row["missing"]))
            continue
        settings = ", ".join(f"{key} {value}" for key, value in row["settings"].items())
        table.add_row(row["framework"], row["version"], ", ".join(row["devices"]), row["cuda"] or "CPU build",
                      row["cudnn"] or "-", settings)
    return table


def results_text(results: list[VerifyResult], title: str, width: int = 160) -> str:
    """The table and the failure lines as plain text (what `rosetta verify` prints, without colour)."""
    return rendered_text([verify_table(results, title=title), *failure_lines(results)], width)


def results_html(results: list[VerifyResult], title: str) -> str:
    """The table as HTML, for Jupyter (rosetta.Report._repr_html_): a row per output, verdicts coloured."""
    import html

    colours = {PASS: "#1a7f37", FAIL: "#cf222e", ERROR: "#cf222e", CANNOT: "#9a6700", INCONCLUSIVE: "#9a6700"}
    head = ("model", "route", "target", "output", "max abs err", "noise floor", "err/floor", "cosine", "verdict")
    lines = [f"<table><caption style='text-align:left'>{html.escape(title)}</caption><tr>"
             + "".join(f"<th>{name}</th>" for name in head) + "</tr>"]
    for result in results:
        outputs = result.outputs or [None]
        for output in outputs:
            verdict = result.verdict if output is None else (FAIL if not output.passed else result.verdict)
            cells = [result.model, result.route, result.target, "-" if output is None else output.name,
                     "-" if output is None else _fmt(output.max_abs_error),
                     "-" if output is None else _fmt(output.noise_floor),
                     "-" if output is None or math.isnan(output.error_ratio) else f"{output.error_ratio:.2f}",
                     "-" if output is None or math.isnan(output.cosine) else f"{output.cosine:.8f}"]
            lines.append("<tr>" + "".join(f"<td>{html.escape(str(cell))}</td>" for cell in cells)
                         + f"<td style='color:{colours.get(verdict, 'inherit')}'><b>{verdict}</b></td></tr>")
        if result.verdict != PASS and result.reason:
            lines.append(f"<tr><td colspan='{len(head)}'>{html.escape(result.reason)}</td></tr>")
    return "\n".join(lines + ["</table>"])


def rendered_text(renderables: list, width: int = 200) -> str:
    """Rich tables and lines as plain text, as a terminal without colour shows them."""
    from rich.console import Console

    console = Console(record=True, width=width, file=_Discard(), color_system=None)
    for item in renderables:
        console.print(item, highlight=False)
    return console.export_text().rstrip()


class _Discard:
    """A file that keeps nothing: the recording console's own output goes nowhere."""

    def write(self, text: str) -> int:
        return len(text)

    def flush(self) -> None:
        pass


"""Rich progress bars for long runs, on stderr so that tables and JSON on stdout stay clean."""

from __future__ import annotations

import contextlib
from typing import Callable, Iterator


@contextlib.contextmanager
def progress_bar(total: int, title: str, enabled: bool = True) -> Iterator[Callable[[str | None], None]]:
    """Yields advance(label): call it before each step with what is starting, and with None at the end."""
    if not enabled:
        yield lambda label: None
        return
    from rich.console import Console
    from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn

    console = Console(stderr=True)
    columns = (TextColumn("[bold]{task.description}"), BarColumn(), MofNCompleteColumn(), TimeElapsedColumn(),
               TextColumn("{task.fields[label]}"))
    with Progress(*columns, console=console, transient=True) as progress:
        task = progress.add_task(title, total=total, label="")
        started = [False]

        def advance(label: str | None) -> None:
            if started[0]:
                progress.advance(task)
            started[0] = label is not None
            progress.update(task, label=label or "")

        yield advance

"""The matrix as people read it in a terminal: one table that fits the width (dryboot's
:func:`dryboot.textout.table`: drawn with rich when it fits, else stacked per cell), and a rich
progress bar with the ETA on stderr while the matrix runs (only when stderr is a terminal).
"""

from __future__ import annotations

import sys
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

from dryboot.matrix.model import MatrixResult, TaskResult
from dryboot.matrix.run import Progress
from dryboot.textout import Column, clip, output_width, table, wrap


def short(r: TaskResult) -> str:
    """``block/tokens`` of one arm (``16/18,720``), ``refused: ...`` or ``error: ...`` (cut)."""
    if r.status == "ok":
        tokens = "-" if r.tokens is None else f"{r.tokens:,}"
        return f"{r.block_size}/{tokens}"
    return f"{r.status}: {clip(r.reason or '', 60)}"


def render_table(result: MatrixResult, width: int | None = None) -> list[str]:
    """The lines of the matrix table (one row per cell: model, GPU, flag set, dryboot's plan,
    each arm's block/tokens, the agreement, the status and why), then a summary line."""
    width = width or output_width()
    header = ["model", "gpu", "flags", "dryboot", *result.arms, "arms", "status"]
    rows = []
    for c in result.cells:
        status = c.status if c.why is None else f"{c.status}: {c.why}"
        rows.append(
            [c.model, c.gpu, c.flag_set, short(c.plan), *(short(c.arms[a]) for a in result.arms), c.agreement, status]
        )
    columns = [Column(h, wrap=h not in ("gpu",)) for h in header]
    lines = table(
        f"{result.source}: {len(result.models)} models x {len(result.gpus)} GPUs x {len(result.flag_sets)} flag sets "
        f"x {len(result.arms)} arms (block size / GPU KV cache tokens)",
        columns,
        rows,
        width,
        key_columns=3,
        heading=lambda r: " | ".join(r[:3]),
    )
    met = sum(c.status == "met" for c in result.cells)
    bad = [c for c in result.cells if c.status != "met"]
    lines += wrap(
        f"{met} of {len(result.cells)} cells met; {len(bad)} not"
        + (f" ({', '.join(c.id for c in bad[:5])}{', ...' if len(bad) > 5 else ''})" if bad else "")
        + f"; {result.cache_hits} answers from the cache; {result.seconds:.1f} s",
        width,
    )
    return lines


@contextmanager
def progress_bar(enabled: bool | None = None) -> Iterator[Progress | None]:
    """A ``progress(done, total)`` callback drawing a rich bar with the ETA on stderr, or
    ``None`` when stderr is not a terminal (``enabled`` overrides)."""
    if enabled is None:
        enabled = sys.stderr.isatty()
    if not enabled:
        yield None
        return
    # at call: only a terminal run draws the bar
    from rich.console import Console
    from rich.progress import (
        BarColumn,
        MofNCompleteColumn,
        Progress,
        TextColumn,
        TimeElapsedColumn,
        TimeRemainingColumn,
    )

    bar = Progress(
        TextColumn("dry boots"),
        BarColumn(),
        MofNCompleteColumn(),
        TimeElapsedColumn(),
        TextColumn("ETA"),
        TimeRemainingColumn(),
        console=Console(stderr=True),
        transient=True,
    )
    state: dict[str, Any] = {}

    def update(done: int, total: int) -> None:
        if "task" not in state:
            state["task"] = bar.add_task("matrix", total=total)
        bar.update(state["task"], completed=done, total=total)

    with bar:
        yield update

"""Text output that fits the reader's terminal.

Every table and line of prose a command prints fits :func:`output_width` columns: a table is
drawn with ``rich`` when its columns fit unwrapped (headers and prose cells may wrap at spaces),
otherwise each row is *stacked* as a heading and ``label  value`` lines. Names and numbers are
never cut or ellipsized, and no line ends in spaces. Quoted log lines (vLLM's) are the
callers' business: they print them verbatim, whatever the width.
"""

from __future__ import annotations

import io
import os
import sys
import textwrap
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import TextIO

#: Width when the output is neither a terminal nor given by ``COLUMNS`` (a pipe, a file).
PIPE_WIDTH = 80
#: Narrowest layout attempted; below it lines may be longer than the width.
MIN_WIDTH = 40


def output_width(stream: TextIO | None = None) -> int:
    """Columns to fit: ``COLUMNS`` when set, else the terminal's width, else :data:`PIPE_WIDTH`."""
    env = os.environ.get("COLUMNS", "").strip()
    if env.isdigit() and int(env) > 0:
        return max(MIN_WIDTH, int(env))
    return terminal_width(stream) or PIPE_WIDTH


def terminal_width(stream: TextIO | None = None) -> int | None:
    """The width to fit when ``stream`` (default stdout) is a terminal: ``COLUMNS`` when set,
    else the terminal's own (at least :data:`MIN_WIDTH`); ``None`` when it is not (a pipe, a
    file): the reports whose lines are read by ``grep`` (check-log's, series port's) keep them
    whole there, whatever ``COLUMNS`` says (GNU readline exports it in any process that loads it)."""
    stream = stream if stream is not None else sys.stdout
    try:
        if not stream.isatty():
            return None
        env = os.environ.get("COLUMNS", "").strip()
        if env.isdigit() and int(env) > 0:
            return max(MIN_WIDTH, int(env))
        return max(MIN_WIDTH, os.get_terminal_size(stream.fileno()).columns)
    except (AttributeError, OSError, ValueError):
        return None


def wrap(text: str, width: int, indent: str = "", subsequent: str | None = None) -> list[str]:
    """``text`` wrapped at spaces to ``width`` (words are never split, so a word longer than
    the width stays whole on its own line)."""
    lines = textwrap.wrap(
        text,
        width=max(1, width),
        initial_indent=indent,
        subsequent_indent=indent if subsequent is None else subsequent,
        break_long_words=False,
        break_on_hyphens=False,
    )
    return lines or [indent.rstrip()]


def fit(text: str, width: int | None, verbatim_after: Sequence[str] = ()) -> str:
    """``text`` (lines, a trailing newline kept; as it is when ``width`` is ``None``, see
    :func:`terminal_width`) with each line longer than ``width`` wrapped at
    spaces (:func:`wrap`), its continuation lines under the line's own indent plus four spaces.
    A long line holding one of ``verbatim_after`` (``": matches: "``) is broken after it: the
    head is wrapped, what follows (a log line quoted verbatim) goes whole on the next line, at
    the continuation indent, however long. Short lines are returned as they are."""
    if width is None:
        return text
    out: list[str] = []
    for line in text.split("\n"):
        if len(line) <= width:
            out.append(line)
            continue
        indent = line[: len(line) - len(line.lstrip(" "))]
        more = indent + "    "
        marker = next((m for m in verbatim_after if m in line), None)
        if marker is None:
            out.extend(wrap(line.strip(), width, indent, more))
            continue
        cut = line.index(marker) + len(marker)
        out.extend(wrap(line[:cut].strip(), width, indent, more))
        out.append(more + line[cut:].strip())
    return "\n".join(out)


@dataclass(frozen=True)
class Column:
    """A table column: its header, alignment and whether its cells are prose that may wrap."""

    header: str
    right: bool = False
    wrap: bool = False


def _longest_word(text: str) -> int:
    return max((len(w) for w in text.split()), default=0)


def _column_widths(columns: Sequence[Column], rows: Sequence[Sequence[str]], width: int) -> list[int] | None:
    """Content widths that fit ``width`` with rich's heavy box (3 columns per cell + 1), or
    ``None`` when even the narrowest layout does not fit."""
    lows: list[int] = []
    ideals: list[int] = []
    for i, col in enumerate(columns):
        cells = [r[i] for r in rows]
        cell_low = max((_longest_word(c) if col.wrap else len(c) for c in cells), default=0)
        lows.append(max(1, cell_low, _longest_word(col.header)))
        ideals.append(max(1, max((len(c) for c in cells), default=0), len(col.header)))
    overhead = 3 * len(columns) + 1
    spare = width - overhead - sum(lows)
    if spare < 0:
        return None
    widths = list(lows)
    while spare > 0:
        short = [i for i in range(len(widths)) if widths[i] < ideals[i]]
        if not short:
            break
        for i in short:
            if spare == 0:
                break
            widths[i] += 1
            spare -= 1
    return widths


def _rich_table(
    columns: Sequence[Column], rows: Sequence[Sequence[str]], widths: Sequence[int], show_header: bool
) -> list[str]:
    from rich.console import Console  # at call: only a drawn table needs rich (70 ms of start-up)
    from rich.table import Table

    table = Table(show_header=show_header)
    for col, w in zip(columns, widths, strict=True):
        table.add_column(
            col.header, justify="right" if col.right else "left", width=w, no_wrap=not col.wrap, overflow="fold"
        )
    for r in rows:
        table.add_row(*r)
    buf = io.StringIO()
    total = sum(widths) + 3 * len(widths) + 1
    Console(
        file=buf, width=total, color_system=None, highlight=False, markup=False, emoji=False, legacy_windows=False
    ).print(table)
    return [line.rstrip() for line in buf.getvalue().splitlines()]


def draw(
    columns: Sequence[Column], rows: Sequence[Sequence[str]], width: int, *, show_header: bool = True
) -> list[str] | None:
    """The lines of a boxed table within ``width``, or ``None`` when its columns do not fit
    (a no-wrap cell or the longest word of a prose cell or header sets a column's least width)."""
    widths = _column_widths(columns, rows, width)
    return None if widths is None else _rich_table(columns, rows, widths, show_header)


def _pairs(pairs: Sequence[tuple[str, str]], width: int, indent: str) -> list[str]:
    """``label  value`` lines, labels padded to one column; a value too long for the rest of
    the line wraps under itself, or starts on the next line when the labels leave no room."""
    if not pairs:
        return []
    label_w = max(len(label) for label, _ in pairs)
    value_col = len(indent) + label_w + 2
    lines: list[str] = []
    narrow = width - value_col < max((_longest_word(v) for _, v in pairs), default=0)
    for label, value in pairs:
        if narrow:
            lines.append(f"{indent}{label}")
            lines.extend(wrap(value, width, indent + "  "))
        else:
            first = f"{indent}{label.ljust(label_w)}  "
            lines.extend(wrap(value, width, first, " " * value_col))
    return [line.rstrip() for line in lines]


def table(
    title: str | None,
    columns: Sequence[Column],
    rows: Sequence[Sequence[str]],
    width: int,
    *,
    key_columns: int = 1,
    heading: Callable[[Sequence[str]], str] | None = None,
    show_header: bool = True,
) -> list[str]:
    """Lines of a table that fits ``width``: drawn when it fits, else stacked.

    Stacked, each row becomes a heading (``heading(row)``, by default its first
    ``key_columns`` cells) and one ``header  value`` line per other column; a table without
    a header (figure / value rows) becomes ``figure  value`` lines.
    """
    lines = wrap(title, width) if title else []
    drawn = draw(columns, rows, width, show_header=show_header)
    if drawn is not None:
        return lines + drawn
    if not show_header:
        return lines + _pairs([(r[0], " ".join(r[1:])) for r in rows], width, "  ")
    for r in rows:
        head = heading(r) if heading else "  ".join(r[:key_columns])
        lines.extend(wrap(head, width, "  ", "    "))
        pairs = [(c.header, v) for c, v in zip(columns[key_columns:], r[key_columns:], strict=True)]
        lines.extend(_pairs(pairs, width, "    "))
    return lines


def clip(text: str, limit: int) -> str:
    """``text`` shortened to at most ``limit`` characters at a blank (never inside a word or a
    figure), ``...`` marking the cut; whole when it fits. A first word longer than ``limit`` is
    kept whole."""
    if len(text) <= limit:
        return text
    cut = text.rfind(" ", 0, max(1, limit - 3) + 1)
    if cut <= 0:
        cut = text.find(" ")
        return text if cut < 0 else text[:cut] + " ..."
    return text[:cut].rstrip() + " ..."

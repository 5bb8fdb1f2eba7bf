"""A log as a terminal or ``fold -s`` shows it: hard-wrapped at a width, or re-flowed at blanks."""

from __future__ import annotations


def hard_wrap(text: str, width: int) -> str:
    """Each line cut every ``width`` characters, as a terminal copy of a log holds it."""
    out: list[str] = []
    for line in text.split("\n"):
        while len(line) > width:
            out.append(line[:width])
            line = line[width:]
        out.append(line)
    return "\n".join(out)


def fold(text: str, width: int) -> str:
    """``fold -s -w width``: a line longer than ``width`` is broken after its last blank within
    the width (the blank stays on the first line), or at the width where there is none."""
    out: list[str] = []
    for line in text.split("\n"):
        while len(line) > width:
            blank = line.rfind(" ", 0, width)
            cut = blank + 1 if blank >= 0 else width
            out.append(line[:cut])
            line = line[cut:]
        out.append(line)
    return "\n".join(out)

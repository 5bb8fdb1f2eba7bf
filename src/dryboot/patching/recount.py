"""``hunks check`` and ``hunks fix``: the ``@@`` arithmetic of hand-edited patches.

:func:`check_patch` reports every hunk whose header disagrees with its body (file, hunk number,
declared vs counted), stray lines after complete hunks, misplaced no-newline markers and hunks
that change nothing. :func:`fix_patch` recounts: each hunk's old/new counts are set from its
body, and each hunk's new start is recomputed from its old start plus the growth (new count -
old count) of the earlier hunks of the same file, never taken from the damaged header (GNU diff's
convention: an empty side is written ``N,0`` with N the line before the change, ``0,0`` for a
new file). Everything outside the ``@@`` lines stays byte-identical.
"""

from __future__ import annotations

import os
from dataclasses import dataclass, field

from dryboot.errors import InputError
from dryboot.inputs import read_regular
from dryboot.patching.parse import Hunk, PatchFile, Problem, parse_patch
from dryboot.patching.transaction import write_atomic


def check_patch(data: bytes, source: str) -> list[Problem]:
    """All problems of the patch ``data`` (bytes), ordered by line.

    :raises InputError: the patch cannot be parsed at all (see :func:`parse_patch`).
    """
    return parse_patch(data, source).all_problems()


@dataclass
class HeaderChange:
    """One rewritten hunk header: 1-based ``lineno``, ``old``/``new`` header text."""

    lineno: int
    old: bytes
    new: bytes


@dataclass
class FixResult:
    """Result of :func:`fix_patch`: the new bytes, the header changes, and the problems that a
    recount cannot fix (stray blank lines, misplaced markers, hunks that change nothing)."""

    data: bytes
    changes: list[HeaderChange] = field(default_factory=list)
    unfixable: list[Problem] = field(default_factory=list)


def _fmt(start: int, count: int, given: bool) -> bytes:
    if count == 1 and not given:
        return str(start).encode()
    return f"{start},{count}".encode()


def _side(start: int, declared: int, counted: int) -> int:
    if declared == 0 and counted > 0:
        return start + 1
    if declared > 0 and counted == 0:
        return max(start - 1, 0)
    return start


def _stray_blank_only(pf: PatchFile, h: Hunk) -> Problem | None:
    for p in h.problems:
        if p.kind == "stray":
            extra = [b for b in h.lines if b.lineno >= p.lineno]
            if extra and all(pf.lines[b.lineno - 1] == b"" for b in extra):
                return p
    return None


def fix_patch(data: bytes, source: str) -> FixResult:
    """Recount every hunk of patch ``data``; see the module docstring.

    Idempotent: fixing a fixed patch changes nothing.

    :raises InputError: the patch cannot be parsed at all.
    """
    pf = parse_patch(data, source)
    res = FixResult(data)
    if pf.crlf_stripped:  # rewriting would drop the CRs: never change a patch's line endings
        res.unfixable.append(
            Problem(
                1,
                "crlf",
                "CRLF line endings in the patch headers: hunks fix does not rewrite a CRLF patch; convert it "
                "to LF line endings first (for example `dos2unix`)",
            )
        )
        return res
    lines = list(pf.lines)
    for p in pf.problems:
        res.unfixable.append(p)
    for sec in pf.sections:
        growth = 0
        for h in sec.hunks:
            blank = _stray_blank_only(pf, h)
            if blank is not None:
                res.unfixable.append(
                    Problem(
                        blank.lineno,
                        "stray",
                        f"stray blank line after hunk {h.number} of {sec.display_name()}: not "
                        "fixed (delete it, or write it as a context line ' ')",
                    )
                )
            for p in h.problems:
                if p.kind in ("marker", "unterminated"):  # which the last line meant: the author's to say
                    res.unfixable.append(p)
            body = h.lines + h.extra if blank is None else [b for b in h.lines if b.lineno < blank.lineno]
            co = sum(1 for b in body if b.kind != 0x2B)
            cn = sum(1 for b in body if b.kind != 0x2D)
            ostart = _side(h.old_start, h.old_count, co)
            # the new start follows from the old start and the earlier hunks' growth, never
            # from what a hand-edited header said (patchutils' recountdiff rule)
            nstart = ostart + (1 if co == 0 else 0) + growth - (1 if cn == 0 else 0)
            growth += cn - co
            new_header = (
                b"@@ -"
                + _fmt(ostart, co, h.old_count_given or co != 1)
                + b" +"
                + _fmt(nstart, cn, h.new_count_given or cn != 1)
                + b" @@"
                + h.section
            )
            old_header = lines[h.lineno - 1]
            if new_header != old_header:
                lines[h.lineno - 1] = new_header
                res.changes.append(HeaderChange(h.lineno, old_header, new_header))
            if body and all(b.kind == 0x20 for b in body):
                res.unfixable.append(
                    Problem(
                        h.lineno,
                        "noop",
                        f"hunk {h.number} of {sec.display_name()} changes nothing (no '-' or '+' line): remove it",
                    )
                )
    if res.changes:
        out = b"\n".join(lines)
        if pf.final_newline and lines:
            out += b"\n"
        res.data = out
    res.unfixable.sort(key=lambda p: p.lineno)
    return res


def fix_file(path: str) -> FixResult:
    """Recount the patch file at ``path`` in place (temporary file + rename, mode kept; a
    symlinked patch stays a symlink: the file it points to is rewritten).

    :raises InputError: unreadable or unparseable patch.
    """
    res = fix_patch(read_regular(path), path)
    if res.changes:
        try:
            real = os.path.realpath(path)
            mode = os.stat(real).st_mode & 0o7777
            write_atomic(real, res.data, mode)
        except OSError as exc:
            raise InputError(
                path, None, f"cannot write the fixed patch ({exc.strerror}); the file is unchanged"
            ) from None
    return res

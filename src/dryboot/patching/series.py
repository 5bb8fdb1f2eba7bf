"""Quilt-style patch series: read, apply, status.

A series directory holds patch files and a ``series`` file: one patch path per line (relative
to the directory), optional options after it (``-pN`` strip level, default 1; ``-R`` reverse);
``#`` starts a comment; blank lines are ignored. The series and the directory must agree: a
``*.patch``/``*.diff`` file that is not listed would never be applied, a listed name with no
file is a typo -- both are bad input (:class:`InputError`, exit 2), reported by name. A patch
whose line is commented out (``# 0003-x.patch``) is disabled, as quilt allows: not an error.
"""

from __future__ import annotations

import os

from dryboot.errors import InputError
from dryboot.patching._record import field, record
from dryboot.patching.apply import PatchOutcome, PatchStatus, Tree
from dryboot.patching.parse import PatchFile, read_patch

PATCH_SUFFIXES = (".patch", ".diff")


@record
class SeriesEntry:
    """One ``series`` line: patch ``name`` (relative to the directory), ``path`` (full),
    ``strip`` level, ``reverse`` flag, 1-based ``lineno`` in the series file."""

    name: str
    path: str
    strip: int = 1
    reverse: bool = False
    lineno: int = 0


def _scan_dir(d: str) -> set[str]:
    found: set[str] = set()
    for dirpath, dirnames, filenames in os.walk(d):
        dirnames[:] = sorted(x for x in dirnames if not x.startswith("."))
        for fn in filenames:
            if fn.lower().endswith(PATCH_SUFFIXES) and not fn.startswith("."):
                found.add(os.path.relpath(os.path.join(dirpath, fn), d).replace(os.sep, "/"))
    return found


def read_series(directory: str) -> list[SeriesEntry]:
    """The entries of ``directory/series`` in apply order (see :func:`read_series_file`)."""
    return read_series_file(directory)[0]


def read_series_file(directory: str) -> tuple[list[SeriesEntry], list[str]]:
    """Read ``directory/series`` and check it against the patch files in ``directory``.

    A patch file whose series line is commented out (``# 0003-x.patch``) is *disabled*, as in
    quilt: allowed, never applied, and returned by name.

    :returns: the entries in apply order, and the disabled patch names in series order.
    :raises InputError: no such directory or series file; an unknown option, a duplicate,
        an absolute or ``..`` name (naming the series line); names listed without a file or
        patch files not listed (naming them all).
    """
    if not os.path.isdir(directory):
        raise InputError(directory, None, "not a directory")
    spath = os.path.join(directory, "series")
    try:
        with open(spath, "rb") as fh:
            raw = fh.read()
    except OSError:
        raise InputError(spath, None, "no series file (one patch name per line, in apply order)") from None
    entries: list[SeriesEntry] = []
    seen: dict[str, int] = {}
    commented: list[str] = []
    for k, bline in enumerate(raw.split(b"\n"), 1):
        line = os.fsdecode(bline).rstrip("\r")
        if line.lstrip().startswith("#"):
            words = line.lstrip().lstrip("#").split()
            if words and words[0] not in commented:
                commented.append(words[0])
            continue
        if " #" in line or "\t#" in line:
            line = line[: min(i for i in (line.find(" #"), line.find("\t#")) if i >= 0)]
        words = line.split()
        if not words:
            continue
        name, opts = words[0], words[1:]
        where = f"line {k}"
        if name.startswith("/") or ".." in name.split("/"):
            raise InputError(
                spath, where, f"{name}: patch names must be relative to the series directory, without '..'"
            )
        e = SeriesEntry(name, os.path.join(directory, name), lineno=k)
        for o in opts:
            if o == "-R":
                e.reverse = True
            elif o.startswith("-p") and o[2:].isdigit():
                e.strip = int(o[2:])
            else:
                raise InputError(spath, where, f"{name}: unknown option {o!r} (known: -pN, -R)")
        if name in seen:
            raise InputError(spath, where, f"{name}: listed twice (first on line {seen[name]})")
        seen[name] = k
        entries.append(e)
    listed = {e.name for e in entries}
    missing = [e.name for e in entries if not os.path.isfile(e.path)]
    present = _scan_dir(directory) - listed
    disabled = [n for n in commented if n in present]
    unlisted = sorted(present - set(disabled))
    if missing or unlisted:
        parts = []
        if missing:
            parts.append("listed in the series but no such file (typo?): " + ", ".join(missing))
        if unlisted:
            parts.append("patch files not in the series (never applied): " + ", ".join(unlisted))
        raise InputError(spath, None, "series and directory disagree: " + "; ".join(parts))
    return entries, disabled


def load_series(directory: str) -> list[tuple[SeriesEntry, PatchFile]]:
    """:func:`read_series` plus every patch parsed and validated (bad input fails before
    anything is applied)."""
    out = []
    for e in read_series(directory):
        pf = read_patch(e.path)
        pf.source = e.name if not os.path.isabs(e.name) else e.path
        pf.require_valid()
        out.append((e, pf))
    return out


@record
class StepResult:
    """One patch of a series run: ``state`` is ``applied`` (now), ``already`` (proven applied:
    skipped, never reversed), or ``failed``; ``outcome`` the forward census; ``status`` the
    full judgement (per-hunk states and a note)."""

    entry: SeriesEntry
    state: str
    outcome: PatchOutcome
    status: PatchStatus


@record
class SeriesRun:
    """A series apply: the steps in order and whether everything applied (then ``tree``
    holds every change, ready to commit); ``prefix`` patches were found applied already."""

    steps: list[StepResult] = field(default_factory=list)
    ok: bool = True
    tree: Tree | None = None
    prefix: int = 0


def run_series(patches: list[tuple[SeriesEntry, PatchFile]], tree: Tree, fuzz: int = 0) -> SeriesRun:
    """Apply ``patches`` in order onto ``tree`` (in memory) after the applied prefix, stopping
    at the first patch that is neither applicable nor applied (see :mod:`dryboot.patching.state`).

    The patches of the proven applied prefix are skipped (never reversed, never re-applied); a
    patch is applied when GNU patch ``-f --fuzz fuzz`` would apply every hunk and its new side
    is not already where its headers put it.
    """
    from dryboot.patching.state import stack_state

    state = stack_state(patches, tree, fuzz, stop=True)
    run = SeriesRun(tree=state.tree, prefix=state.prefix)
    for (e, _), st in zip(patches, state.statuses, strict=False):
        if st.state == "applicable":
            run.steps.append(StepResult(e, "applied", st.forward, st))
        elif st.state == "applied":
            run.steps.append(StepResult(e, "already", st.forward, st))
        else:
            run.steps.append(StepResult(e, "failed", st.forward, st))
            run.ok = False
            break
    return run


def series_status(patches: list[tuple[SeriesEntry, PatchFile]], tree: Tree, fuzz: int = 0) -> list[PatchStatus]:
    """Status of every patch on ``tree``, in series order (see :mod:`dryboot.patching.state`):
    the proven applied prefix reads applied; each later patch is judged on the tree as the
    earlier applicable ones would leave it (nothing is written)."""
    from dryboot.patching.state import stack_state

    return stack_state(patches, tree, fuzz).statuses

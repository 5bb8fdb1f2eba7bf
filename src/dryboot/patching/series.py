"""Quilt-style patch series: read, apply, status.

A series directory holds patch files and a ``series`` file: one patch path per line (relative
to the directory), optional options after it (``-pN`` strip level, default 1; ``-R`` reverse);
``#`` starts a comment; blank lines are ignored. A listed name with no file is a typo: bad
input (:class:`InputError`, exit 2), reported by name. A ``*.patch``/``*.diff`` file that is not
listed is never applied, as quilt and dpkg-source ignore it (Debian ships directories of patches
for other architectures beside the series): returned by name, for a note. A patch whose line is
commented out (``# 0003-x.patch``) is disabled, as quilt allows: not an error either.
"""

from __future__ import annotations

import os

from dryboot.errors import InputError
from dryboot.inputs import read_regular, require_regular
from dryboot.patching._record import record
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


@record
class SeriesFile:
    """A series directory read: ``entries`` in apply order; ``disabled``, the patch names whose
    line is commented out (series order); ``unlisted``, the other patch files in the directory
    (sorted): neither is ever applied."""

    entries: list[SeriesEntry]
    disabled: list[str]
    unlisted: list[str]

    def unlisted_note(self) -> str:
        """One line naming the patch files the series does not list (empty when none)."""
        if not self.unlisted:
            return ""
        shown = ", ".join(self.unlisted[:8]) + (
            f", ... ({len(self.unlisted)} in all)" if len(self.unlisted) > 8 else ""
        )
        return f"note: patch files not in the series are never applied (as quilt and dpkg-source): {shown}"


def read_series(directory: str) -> list[SeriesEntry]:
    """The entries of ``directory/series`` in apply order (see :func:`read_series_file`)."""
    return read_series_file(directory).entries


def read_series_file(directory: str) -> SeriesFile:
    """Read ``directory/series`` and check it against the patch files in ``directory``.

    A patch file whose series line is commented out (``# 0003-x.patch``) is *disabled*, as in
    quilt: allowed, never applied, and returned by name.

    :returns: the entries, the disabled and the unlisted patch names (see :class:`SeriesFile`).
    :raises InputError: no such directory or series file; an unknown option, a duplicate,
        an absolute or ``..`` name (naming the series line); names listed without a file
        (naming them all).
    """
    if not os.path.isdir(directory):
        raise InputError(directory, None, "not a directory")
    spath = os.path.join(directory, "series")
    if not os.path.lexists(spath):
        raise InputError(spath, None, "no series file (one patch name per line, in apply order)")
    raw = read_regular(spath)
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
    missing = [e.name for e in entries if not os.path.exists(e.path)]
    if missing:
        raise InputError(spath, None, "listed in the series but no such file (typo?): " + ", ".join(missing))
    for e in entries:  # a FIFO, device or directory listed is refused before anything is read
        require_regular(e.path)
    present = _scan_dir(directory) - listed
    disabled = [n for n in commented if n in present]
    return SeriesFile(entries, disabled, sorted(present - set(disabled)))


def load_series(directory: str, series: SeriesFile | None = None) -> list[tuple[SeriesEntry, PatchFile]]:
    """:func:`read_series` (or the ``series`` already read from ``directory``) plus every patch
    parsed and validated (bad input fails before anything is applied)."""
    out = []
    for e in (series or read_series_file(directory)).entries:
        pf = read_patch(e.path)
        pf.source = e.name if not os.path.isabs(e.name) else e.path
        pf.require_valid()
        out.append((e, pf))
    return out

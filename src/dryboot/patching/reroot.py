"""A series rooted one folder deeper: each patch's file names given a leading folder, as
``git apply --directory=DIR`` reads them.

A stack written for ``patch -d site-packages/vllm -p1`` names ``a/config/vllm.py``; a tool that
applies series to the tree above the package (``profiles --boot``'s ``series =`` arms, which lay a
release out as ``ROOT/vllm/``) needs ``a/vllm/config/vllm.py``. Only the header lines that name a
file change (``diff --git``, ``---``/``+++``, ``rename``/``copy from``/``to``, ``Index:``);
descriptions, hunks and every other byte stay as written.
"""

from __future__ import annotations

import os
import shutil

from dryboot.errors import InputError
from dryboot.patching.series import load_series, read_series_file

_NAMED = (b"--- ", b"+++ ", b"Index: ", b"rename from ", b"rename to ", b"copy from ", b"copy to ")


def _insert(name: bytes, skip: int, folder: bytes) -> bytes:
    """``name`` with ``folder/`` after its first ``skip`` components (``/dev/null`` kept)."""
    if name.startswith(b"/dev/null") or name.startswith(b'"'):
        return name
    k = 0
    for _ in range(skip):
        j = name.find(b"/", k)
        if j < 0:
            return name
        k = j + 1
    return name[:k] + folder + b"/" + name[k:]


def reroot_line(line: bytes, strip: int, folder: bytes) -> bytes:
    """One header line with the file it names moved under ``folder``."""
    if line.startswith(b"diff --git "):
        words = line.split(b" ")
        if len(words) == 4:
            return b" ".join([*words[:2], _insert(words[2], strip, folder), _insert(words[3], strip, folder)])
        return line
    for head in _NAMED:
        if line.startswith(head):
            skip = 0 if head.startswith((b"rename", b"copy")) else strip
            return head + _insert(line[len(head) :], skip, folder)
    return line


def reroot_series(series_dir: str, dest: str, folder: str) -> None:
    """Copy the series in ``series_dir`` to ``dest`` (a new directory) with every patch's file
    names under ``folder`` (its ``series`` file as written).

    :raises InputError: the series is unreadable or ``dest`` exists.
    """
    if os.path.lexists(dest):
        raise InputError("--out", dest, "exists")
    series = read_series_file(series_dir)
    os.makedirs(dest)
    shutil.copyfile(os.path.join(series_dir, "series"), os.path.join(dest, "series"))
    for entry, patch in load_series(series_dir, series):
        headers = {sec.lineno - 1 for sec in patch.sections}
        out = []
        inside = False
        for k, line in enumerate(patch.lines):
            if k in headers:
                inside = True
            elif line.startswith(b"@@ "):
                inside = False
            out.append(reroot_line(line, entry.strip, os.fsencode(folder)) if inside else line)
        target = os.path.join(dest, entry.name)
        os.makedirs(os.path.dirname(target), exist_ok=True)
        with open(target, "xb") as fh:
            fh.write(b"\n".join(out) + (b"\n" if patch.final_newline else b""))


__all__ = ["reroot_line", "reroot_series"]

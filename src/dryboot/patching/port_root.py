"""Where a series' paths are rooted in a tree (``series port``'s ``--from`` / ``--to``, and the
releases ``--from-version`` / ``--to-version`` fetch).

A stack applied as ``patch -d site-packages/vllm -p1`` names ``a/config/vllm.py``: its root is
the ``vllm/`` package folder. A release tree (``~/.cache/dryboot/releases/X/``) holds ``vllm/``
one level up, and a user may give either the package folder or the tree above it. The root is
the folder among the tree given, its sub-folders and the folder above it where the most files
the series reads (modifies, deletes, renames; stripped as the series lines say) exist; the tree
given wins a tie. ``--directory D`` states it: ``TREE/D``.
"""

from __future__ import annotations

import os

from dryboot.errors import InputError
from dryboot.patching.parse import PatchFile
from dryboot.patching.series import SeriesEntry


def read_paths(patches: list[tuple[SeriesEntry, PatchFile]]) -> set[str]:
    """The files the series reads before changing them (not those it creates), each stripped
    as its series line says."""
    out: set[str] = set()
    for entry, patch in patches:
        for sec in patch.sections:
            if sec.old_absent or sec.old is None or sec.old.raw == b"/dev/null":
                continue
            name = sec.old.stripped(entry.strip)
            if name:
                out.add(name)
    return out


def _found(root: str, paths: set[str]) -> int:
    return sum(1 for p in paths if os.path.isfile(os.path.join(root, p)))


def find_root(tree: str, paths: set[str], directory: str | None, flag: str, prefer: str = "") -> str:
    """The folder of ``tree`` the series' ``paths`` are relative to (see the module docstring).

    :param prefer: a relation to try first on a tie (``"sub:NAME"``, ``"up"``, ``""``): NEW's
        root is looked for as OLD's was found.
    :raises InputError: ``tree`` (or ``tree/directory``) is not a directory.
    """
    if not os.path.isdir(tree):
        raise InputError(flag, None, f"{tree}: not a directory")
    if directory is not None:
        root = os.path.join(tree, directory)
        if not os.path.isdir(root):
            raise InputError("--directory", directory, f"{root}: not a directory")
        return root
    cands = [("", tree)]
    subs = sorted(e.name for e in os.scandir(tree) if e.is_dir() and not e.name.startswith("."))
    cands += [(f"sub:{s}", os.path.join(tree, s)) for s in subs]
    cands.append(("up", os.path.dirname(os.path.abspath(tree))))
    cands.sort(key=lambda c: (c[0] != prefer, c[0] != ""))  # a tie: the preferred, then the tree given
    return max(cands, key=lambda c: _found(c[1], paths))[1]


def relation(tree: str, root: str) -> str:
    """How ``root`` was found from ``tree``: ``""`` itself, ``"sub:NAME"``, ``"up"``."""
    a, b = os.path.abspath(tree), os.path.abspath(root)
    if a == b:
        return ""
    if os.path.dirname(b) == a:
        return f"sub:{os.path.basename(b)}"
    return "up" if os.path.dirname(a) == b else ""

"""Confinement of patch paths to a target directory.

Every name a patch wants to read or write is checked before anything is written: absolute
paths, ``..`` components and paths that resolve through a symlink to outside the target are
refused with :class:`~dryboot.errors.InputError`; a symlink is never patched in place (GNU patch
also refuses to patch a non-regular file).
"""

from __future__ import annotations

import os

from dryboot.errors import InputError

JOURNAL_DIR = ".dryboot-txn"


def confine(root: str, rel: str, source: str, where: str | None = None) -> str:
    """Return ``rel`` normalised (``a/./b`` -> ``a/b``) after checking it stays in ``root``.

    :param root: the target directory (real path, no symlinks).
    :param rel: a name from a patch, after strip-level removal.
    :param source: the patch file, for the error message.
    :raises InputError: absolute path, ``..`` component, empty name, a name inside dryboot's
        journal directory, or a path resolving through a symlink to outside ``root``, or a
        symlink as the file itself.
    """
    label = where or None
    if not rel or rel.startswith("/") or os.path.isabs(rel):
        raise InputError(
            source, label, f"absolute path {rel!r} refused (patches may only write inside the target directory)"
        )
    parts = [p for p in rel.split("/") if p not in ("", ".")]
    if any(p == ".." for p in parts):
        raise InputError(source, label, f"path {rel!r} contains '..': refused")
    if not parts:
        raise InputError(source, label, f"empty path {rel!r}")
    if parts[0] == JOURNAL_DIR:
        raise InputError(source, label, f"path {rel!r} is inside dryboot's journal: refused")
    cur = root
    for k, comp in enumerate(parts):
        cur = os.path.join(cur, comp)
        if os.path.islink(cur):
            real = os.path.realpath(cur)
            if k == len(parts) - 1:
                raise InputError(source, label, f"{'/'.join(parts)} is a symlink: refusing to patch it")
            if not (real == root or real.startswith(root.rstrip("/") + "/")):
                raise InputError(
                    source,
                    label,
                    f"path {rel!r} resolves through the symlink "
                    f"{'/'.join(parts[: k + 1])} to outside the target directory: "
                    "refused",
                )
        elif not os.path.lexists(cur):
            break
    return "/".join(parts)

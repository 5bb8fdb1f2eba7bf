"""``series port --continue`` / ``--skip``: what a port leaves in its output folder
(``OUT/.dryboot-port/``) to be run again as ``git rebase --continue`` / ``--skip`` goes on, and
what those read back.

``--continue`` takes the first conflicting patch's files under ``OUT/conflicts/PATCH/`` (their
markers resolved by hand) as the patch's content on NEW; ``--skip`` drops that patch. Both run
the whole port again with every resolution and skip taken so far (kept under
``.dryboot-port/resolved/``), and rewrite ``OUT`` whole.
"""

from __future__ import annotations

import json
import os

from dryboot.errors import InputError
from dryboot.inputs import read_regular
from dryboot.patching._record import field, record


@record
class Resume:
    """What a ``--continue`` / ``--skip`` brings to a port run again: ``resolved`` per patch
    name, the files (target-relative path -> content, None: deleted) the maintainer resolved;
    ``skipped`` the patches dropped (as ``git rebase --skip``)."""

    resolved: dict[str, dict[str, bytes | None]] = field(default_factory=dict)
    skipped: list[str] = field(default_factory=list)


STATE_DIR = ".dryboot-port"
_MARKERS = (b"<<<<<<< ", b">>>>>>> ", b"<<<<<<<\n", b">>>>>>>\n")


def save_state(out: str, series_dir: str, conflicts: dict[str, list[str]], keep_going: bool, resume: Resume) -> None:
    """``out/.dryboot-port/``: what ``--continue`` / ``--skip`` need to run the port again --
    the series, the skipped patches, the resolutions taken so far (their files under
    ``resolved/PATCH/PATH``), and ``conflicts``: this run's conflicting patches, in series
    order, with their conflicting files."""
    root = os.path.join(out, STATE_DIR)
    deleted: dict[str, list[str]] = {}
    for name, files in resume.resolved.items():
        for path, data in files.items():
            if data is None:
                deleted.setdefault(name, []).append(path)
            else:
                put(os.path.join(root, "resolved", name, path), data)
    state = {
        "series": os.path.realpath(series_dir),
        "keep_going": keep_going,
        "skipped": resume.skipped,
        "resolved": sorted(resume.resolved),
        "deleted": deleted,
        "conflicts": conflicts,
    }
    put(os.path.join(root, "state.json"), json.dumps(state, indent=1).encode() + b"\n")


def resume_from(out: str, series_dir: str, action: str) -> Resume:
    """The :class:`Resume` of ``--continue`` (``action`` "continue": the first conflicting
    patch's files under ``out/conflicts/`` taken as resolved; a file deleted there is deleted)
    or ``--skip`` (the first conflicting patch skipped), with the earlier ones kept.

    :raises InputError: ``out`` holds no port, of another series, with no conflict left, or a
        resolved file still holds conflict markers.
    """
    root = os.path.join(out, STATE_DIR)
    path = os.path.join(root, "state.json")
    if not os.path.isfile(path):
        raise InputError(f"--{action}", out, f"holds no port to {action} (no {STATE_DIR}/state.json)")
    try:
        state = json.loads(read_regular(path))
        series = str(state["series"])
        skipped = [str(x) for x in state["skipped"]]
        names = [str(x) for x in state["resolved"]]
        deleted = {str(k): [str(x) for x in v] for k, v in dict(state["deleted"]).items()}
        conflicts = {str(k): [str(x) for x in v] for k, v in dict(state["conflicts"]).items()}
    except (ValueError, KeyError, TypeError, AttributeError) as exc:
        raise InputError(f"--{action}", path, f"damaged port state ({type(exc).__name__})") from None
    for rel in [
        *skipped,
        *names,
        *deleted,
        *conflicts,
        *(r for v in [*deleted.values(), *conflicts.values()] for r in v),
    ]:
        parts = rel.split("/")
        if not rel or rel.startswith("/") or ".." in parts or "" in parts or "\0" in rel:
            raise InputError(f"--{action}", path, f"damaged port state (path {rel!r})")
    if series != os.path.realpath(series_dir):
        raise InputError(f"--{action}", out, f"is the port of {series}, not of {series_dir}")
    resolved: dict[str, dict[str, bytes | None]] = {}
    for name in names:
        resolved[name] = dict.fromkeys(deleted.get(name, []))
        base = os.path.join(root, "resolved", name)
        for rel in _files_under(base):
            resolved[name][rel] = read_regular(os.path.join(base, rel))
    if not conflicts:
        raise InputError(f"--{action}", out, "the port has no conflict left to resolve or skip")
    first = next(iter(conflicts))
    if action == "skip":
        return Resume(resolved, [*skipped, first])
    mine: dict[str, bytes | None] = {}
    for rel in conflicts[first]:
        full = os.path.join(out, "conflicts", first, rel)
        if not os.path.lexists(full):
            mine[rel] = None  # deleted by the maintainer: the patch deletes it
            continue
        data = read_regular(full)
        for k, line in enumerate(data.split(b"\n"), 1):
            if (line + b"\n").startswith(_MARKERS):
                raise InputError(full, f"line {k}", "still has a conflict marker: resolve it, or --skip the patch")
        mine[rel] = data
    resolved[first] = mine
    return Resume(resolved, skipped)


def _files_under(base: str) -> list[str]:
    out: list[str] = []
    for d, _dirs, files in os.walk(base):
        out.extend(os.path.relpath(os.path.join(d, f), base).replace(os.sep, "/") for f in files)
    return sorted(out)


def was_keep_going(out: str) -> bool:
    """Whether the port written to ``out`` ran with ``--keep-going`` (a ``--continue`` keeps it)."""
    try:
        return bool(json.loads(read_regular(os.path.join(out, STATE_DIR, "state.json"))).get("keep_going"))
    except (InputError, ValueError, AttributeError):
        return False


def put(path: str, data: bytes) -> None:
    """Write a new file (never over one), its folders made."""
    os.makedirs(os.path.dirname(path), exist_ok=True)
    with open(path, "xb") as fh:
        fh.write(data)

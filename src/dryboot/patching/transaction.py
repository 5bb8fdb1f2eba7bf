"""All-or-nothing writes to a target directory, with a journal.

:func:`commit` writes a set of file changes so that either every file ends up changed or every
file it touched is restored, also when interrupted: before touching anything it saves each
original (bytes and mode) under ``<target>/.dryboot-txn/`` and atomically writes a journal
listing them; each file is then written to a temporary file in its own directory and renamed
over the original. SIGINT/SIGTERM/SIGHUP during the write phase roll back; a process killed
outright leaves the journal behind, and :func:`recover` (run at the start of every writing
command) restores from it. Nothing is written outside the target directory.

Durability (what survives what):

- *The process dying* (``kill -9``, a crash) at any point: the backups (hard links to the original
  files) and the journal are complete in the kernel before the first file is replaced, and the
  kernel keeps them whatever happens to the process, so the next run rolls back.
- *The machine crashing* (power loss, a kernel panic): nothing is flushed by default, as GNU
  patch flushes nothing either; what reached the disk is up to the file system. With
  ``DRYBOOT_SYNC=1`` in the environment the transaction is durable too: the journal (and the
  backups' links, made before it) is fsynced before the first file is replaced, so a write
  phase cut by a crash is rolled back after the reboot, and every new content is flushed (one
  ``syncfs``, or an ``fsync`` per written file where ``syncfs`` is missing) before the journal
  is removed. Off by default: a flush waits for the disk (and ``syncfs`` for every other
  process's writes too), which cost more than all the rest of a small ``series apply``.
"""

from __future__ import annotations

import os
import stat

from dryboot.errors import InputError
from dryboot.patching import _signals
from dryboot.patching.paths import JOURNAL_DIR

TYPE_CHECKING = False
if TYPE_CHECKING:  # typing is not imported at run time: it costs a fair share of a quick start
    from typing import Any

JOURNAL = "journal.json"


class Interrupted(KeyboardInterrupt):
    """A signal arrived while files were being written (the transaction was rolled back).

    A :class:`KeyboardInterrupt`, so the CLI reports it as an interruption; ``signum`` gives
    the exit code (128 + signum: 130 for SIGINT, 143 for SIGTERM)."""

    def __init__(self, message: str, signum: int = _signals.SIGINT) -> None:
        super().__init__(message)
        self.signum = int(signum)


def _fsync_dir(path: str) -> None:
    try:
        fd = os.open(path, os.O_RDONLY)
    except OSError:
        return
    try:
        os.fsync(fd)
    except OSError:
        pass
    finally:
        os.close(fd)


def _syncfs(path: str) -> bool:
    """Flush the file system holding ``path`` (Linux ``syncfs``): one call instead of one
    ``fsync`` per written file. False where it is not available."""
    import ctypes

    try:
        fn = ctypes.CDLL(None, use_errno=True).syncfs
    except (OSError, AttributeError):
        return False
    try:
        fd = os.open(path, os.O_RDONLY)
    except OSError:
        return False
    try:
        return bool(fn(fd) == 0)
    finally:
        os.close(fd)


def _make_durable(root: str, paths: list[str]) -> None:
    """Make the files just written under ``root`` durable before the commit point."""
    if _syncfs(root):
        return
    for p in paths:
        try:
            fd = os.open(p, os.O_RDONLY)
        except OSError:
            continue
        try:
            os.fsync(fd)
        finally:
            os.close(fd)


def _write_atomic(path: str, data: bytes, mode: int | None, durable: bool = True) -> None:
    """Write ``data`` to ``path`` via a temporary file in the same directory + rename
    (``durable``: fsync before the rename; else the caller flushes, see :func:`_make_durable`)."""
    d, base = os.path.split(path)
    tmp = os.path.join(d, f".{base}.dryboot-tmp")
    fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o666)
    try:
        try:
            view = memoryview(data)
            while view:
                view = view[os.write(fd, view) :]
            if mode is not None:
                os.fchmod(fd, mode)
            if durable:
                os.fsync(fd)
        finally:
            os.close(fd)
        os.replace(tmp, path)
    except BaseException:
        with _signals.suppress(OSError):
            os.unlink(tmp)
        raise


def _raise_interrupted(signum: int, frame: Any) -> None:
    """The write phase's signal handler: SIGINT/SIGTERM/SIGHUP raise :class:`Interrupted`."""
    raise Interrupted(f"interrupted by {_signals.NAMES.get(signum, f'signal {signum}')}", signum)


def _drop_dir(d: str) -> None:
    """Remove the journal directory ``d`` and the files in it, ignoring errors."""
    try:
        names = os.listdir(d)
    except OSError:
        return
    for name in names:
        with _signals.suppress(OSError):
            os.unlink(os.path.join(d, name))
    try:
        os.rmdir(d)
    except OSError:  # something else in it: remove it all
        import shutil

        shutil.rmtree(d, ignore_errors=True)


def _remove_empty_dirs(root: str, rel: str) -> None:
    """Remove now-empty parent directories of ``rel`` up to (not including) ``root``."""
    parts = rel.split("/")[:-1]
    while parts:
        d = os.path.join(root, *parts)
        try:
            os.rmdir(d)
        except OSError:
            return
        parts.pop()


def pending(root: str) -> list[dict[str, Any]] | None:
    """The journal of an interrupted transaction in ``root`` (one entry per file it touched:
    ``path``, ``backup`` name or None for a file it created, ``mode``), or None when there is
    none. Reading it changes nothing."""
    jpath = os.path.join(root, JOURNAL_DIR, JOURNAL)
    try:
        with open(jpath, encoding="utf-8") as fh:
            import json  # only when there is a journal

            entries: list[dict[str, Any]] = json.load(fh)
    except FileNotFoundError:
        return None
    except (OSError, ValueError) as exc:
        raise InputError(jpath, None, f"unreadable journal of an interrupted transaction ({exc})") from None
    return entries


def rolled_back(root: str, entries: list[dict[str, Any]]) -> tuple[dict[str, bytes | None], dict[str, int]]:
    """What :func:`recover` would restore, as pending changes (path -> bytes or None, path ->
    mode): lay them over the tree to see it as it will be after the roll-back."""
    jdir = os.path.join(root, JOURNAL_DIR)
    changes: dict[str, bytes | None] = {}
    modes: dict[str, int] = {}
    for e in entries:
        if e["backup"] is None:
            changes[e["path"]] = None
            continue
        with open(os.path.join(jdir, e["backup"]), "rb") as fh:
            changes[e["path"]] = fh.read()
        modes[e["path"]] = e["mode"]
    return changes, modes


def recover(root: str) -> bool:
    """Roll back an interrupted transaction in ``root`` if its journal is present.

    :returns: True when something was restored.
    """
    jdir = os.path.join(root, JOURNAL_DIR)
    jpath = os.path.join(jdir, JOURNAL)
    if not os.path.exists(jpath):
        if os.path.isdir(jdir):
            _drop_dir(jdir)  # journal never completed: nothing touched
        return False
    import json

    with open(jpath, encoding="utf-8") as fh:
        entries = json.load(fh)
    _restore(root, entries)
    os.unlink(jpath)
    _drop_dir(jdir)
    return True


def _restore(root: str, entries: list[dict[str, Any]]) -> None:
    jdir = os.path.join(root, JOURNAL_DIR)
    for e in entries:
        path = os.path.join(root, e["path"])
        d, base = os.path.split(path)
        with _signals.suppress(OSError):
            os.unlink(os.path.join(d, f".{base}.dryboot-tmp"))
        if e["backup"] is not None:
            with open(os.path.join(jdir, e["backup"]), "rb") as fh:
                data = fh.read()
            os.makedirs(d, exist_ok=True)
            cur = None
            with _signals.suppress(OSError), open(path, "rb") as fh2:
                cur = fh2.read()
            if cur != data or not os.path.isfile(path):
                _write_atomic(path, data, e["mode"])
            else:
                os.chmod(path, e["mode"])
        else:
            with _signals.suppress(FileNotFoundError):
                os.unlink(path)
            _remove_empty_dirs(root, e["path"])


def _journal_text(entries: list[dict[str, Any]]) -> str:
    """``entries`` as JSON (what ``json.dumps`` writes, without importing :mod:`json` for the
    plain names every real tree has)."""

    def text(v: object) -> str:
        if v is None:
            return "null"
        if isinstance(v, int):
            return str(v)
        assert isinstance(v, str)
        if v.isascii() and v.isprintable() and '"' not in v and "\\" not in v:
            return f'"{v}"'
        import json

        return json.dumps(v)

    return "[" + ", ".join("{" + ", ".join(f'"{k}": {text(v)}' for k, v in e.items()) + "}" for e in entries) + "]"


def commit(root: str, changes: dict[str, bytes | None], modes: dict[str, int]) -> None:
    """Write ``changes`` (target-relative path -> new bytes, or None to delete) and ``modes``
    (path -> permission bits) under ``root`` as one transaction.

    Paths must already be confined (see :func:`dryboot.patching.paths.confine`).

    :raises Interrupted: a signal arrived; every touched file was restored.
    :raises OSError: a write failed; every touched file was restored.
    :raises InputError: another transaction's journal directory is in the way.
    """

    if not changes and not modes:
        return
    recover(root)
    jdir = os.path.join(root, JOURNAL_DIR)
    try:
        os.mkdir(jdir)
    except FileExistsError:
        raise InputError(jdir, None, "exists: another dryboot transaction is running here") from None
    sync = os.environ.get("DRYBOOT_SYNC", "") not in ("", "0")
    paths = sorted(set(changes) | set(modes))
    entries: list[dict[str, Any]] = []
    try:
        for k, rel in enumerate(paths):
            full = os.path.join(root, rel)
            entry: dict[str, Any] = {"path": rel, "backup": None, "mode": None}
            try:
                st = os.lstat(full)
            except OSError:
                st = None
            if st is not None and stat.S_ISREG(st.st_mode):
                name = f"b{k}"
                backup = os.path.join(jdir, name)
                # A hard link keeps the original bytes at no copying cost: files are only ever
                # replaced (temp file + rename) or unlinked, never written in place, so the
                # journal's link still holds the old content. Copy where links are refused.
                try:
                    os.link(full, backup)
                except OSError:
                    import shutil

                    shutil.copyfile(full, backup)
                entry["backup"] = name
                entry["mode"] = st.st_mode & 0o7777
            entries.append(entry)
        tmp = os.path.join(jdir, JOURNAL + ".tmp")
        with open(tmp, "w", encoding="utf-8") as fh:
            fh.write(_journal_text(entries))
            fh.flush()
            if sync:
                os.fsync(fh.fileno())
        os.replace(tmp, os.path.join(jdir, JOURNAL))
        if sync:
            _fsync_dir(jdir)
    except BaseException:
        _drop_dir(jdir)
        raise
    try:
        with _signals.handling(_raise_interrupted):
            deleted = []
            written: list[str] = []
            for e in entries:
                rel = e["path"]
                full = os.path.join(root, rel)
                if rel in changes:
                    data = changes[rel]
                    if data is None:
                        with _signals.suppress(FileNotFoundError):
                            os.unlink(full)
                        deleted.append(rel)
                        continue
                    if e["backup"] is None:  # a new file (an existing one's directory exists)
                        os.makedirs(os.path.dirname(full), exist_ok=True)
                    mode = modes.get(rel, e["mode"])
                    _write_atomic(full, data, mode, durable=False)
                    written.append(full)
                elif rel in modes and os.path.exists(full):
                    os.chmod(full, modes[rel])
            for rel in deleted:
                _remove_empty_dirs(root, rel)
            if sync:
                _make_durable(root, written)  # every new content on disk before the commit point
            os.unlink(os.path.join(jdir, JOURNAL))  # the commit point
    except BaseException:
        with _signals.handling(_signals.SIG_IGN):  # nothing stops the restore
            _restore(root, entries)
            with _signals.suppress(OSError):
                os.unlink(os.path.join(jdir, JOURNAL))
            _drop_dir(jdir)
        raise
    _drop_dir(jdir)

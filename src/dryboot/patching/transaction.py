"""All-or-nothing writes to a target directory, with a journal.

:func:`commit` writes a set of file changes so that either every file ends up changed or every
file it touched is restored, also when interrupted: before touching anything it saves each
original (bytes and mode) under ``<target>/.dryboot-txn/`` and atomically writes a journal
listing them; each file is then written to a temporary file in its own directory and renamed
over the original. SIGINT/SIGTERM/SIGHUP during the write phase roll back; a process killed
outright leaves the journal behind, and :func:`recover` (run at the start of every writing
command) restores from it. Nothing is written outside the target directory.

The journal is data found in the target, so it is not trusted: before anything is restored,
every entry must be well-formed and name a path inside the target (relative, no ``..``, no
symlinked parent, not in the journal directory) and a backup that is a regular file in the
journal directory (itself a real directory, not a symlink) under the name the entry's place
gives it (``b<k>``, k counted from 0) and at most :data:`MAX_BACKUP` bytes; the journal itself
is a regular file of at most :data:`MAX_JOURNAL` bytes; else :class:`InputError`, and nothing is
touched. A restored file gets permission bits only: the journal's mode masked to ``0o777`` (as a
patch's mode is: no setuid, setgid or sticky bit is ever set from a journal) and to the bits
the backup file itself has (a backup hard-linked to a file outside cannot be restored readable
to more people than that file is). The threat model: whoever can write in the target can
change any file in it anyway; a journal must not let them reach outside it, raise a file's
privileges, or hang or exhaust the run. :func:`locked` holds an advisory lock (``flock``) on the target directory
for a whole transaction: a second writer waits for the first to finish, then sees its result.

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

import fcntl
import os
import stat

from dryboot.errors import InputError
from dryboot.patching import _signals
from dryboot.patching.paths import JOURNAL_DIR

TYPE_CHECKING = False
if TYPE_CHECKING:  # typing is not imported at run time: it costs a fair share of a quick start
    from typing import Any

JOURNAL = "journal.json"
#: The largest journal read (bytes): about 60 bytes an entry, so a million files fit in 64 MiB.
MAX_JOURNAL = 64 << 20
#: The largest backup restored (bytes); dryboot reads every file it patches whole, so no real
#: transaction saves a larger one.
MAX_BACKUP = 4 << 30


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
    import ctypes  # at call: DRYBOOT_SYNC=1 only; ctypes costs every other run's start

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


def write_atomic(path: str, data: bytes, mode: int | None, durable: bool = True) -> None:
    """Write ``data`` to ``path`` via a temporary file in the same directory + rename
    (``durable``: fsync before the rename; else the caller flushes, see :func:`_make_durable`)."""
    d, base = os.path.split(path)
    tmp = os.path.join(d, f".{base}.dryboot-tmp")
    with _signals.suppress(FileNotFoundError):
        os.unlink(tmp)  # a leftover (or planted) temp file, never written through
    fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW, 0o666)
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
        import shutil  # at call: a journal directory someone added files to (rare; shutil is slow to import)

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


def _journal_dir(root: str) -> str | None:
    """The journal directory of ``root`` when there is one (None when absent); a symlink or a
    non-directory in its place is refused (its files would be outside the target)."""
    jdir = os.path.join(root, JOURNAL_DIR)
    try:
        st = os.lstat(jdir)
    except FileNotFoundError:
        return None
    if not stat.S_ISDIR(st.st_mode):
        raise InputError(jdir, None, "not a directory (a symlink or a file where dryboot's journal belongs): refused")
    return jdir


def _bad(jpath: str, what: str) -> InputError:
    return InputError(
        jpath,
        None,
        f"damaged journal of an interrupted transaction ({what}): nothing was restored; inspect it, "
        "then remove the directory to discard it",
    )


def _inside(root: str, rel: str) -> bool:
    """``rel`` names a path inside ``root`` that no symlink leads out of: relative, no ``..``,
    not in the journal directory, no component before the last a symlink or a non-directory."""
    if not rel or rel.startswith("/") or "\x00" in rel:
        return False
    try:
        raw = os.fsencode(rel)
    except UnicodeError:  # a lone surrogate from the JSON: no file system name
        return False
    parts = rel.split("/")
    if any(p in ("", ".", "..") for p in parts) or parts[0] == JOURNAL_DIR:
        return False
    # no name the system could hold (NAME_MAX 255 bytes a component, PATH_MAX 4096 in all)
    if len(os.fsencode(root)) + 1 + len(raw) >= 4096 or any(len(c) > 255 for c in raw.split(b"/")):
        return False
    cur = root
    for comp in parts[:-1]:
        cur = os.path.join(cur, comp)
        try:
            st = os.lstat(cur)
        except FileNotFoundError:
            return True  # the rest does not exist: restoring creates it as directories
        except OSError:  # a name too long, a loop, no permission: not a path to restore
            return False
        if not stat.S_ISDIR(st.st_mode):
            return False
    return True


def _checked(root: str, jdir: str, jpath: str, entries: object) -> list[dict[str, Any]]:
    """The journal's entries once every one is well-formed and confined (see the module
    docstring); :class:`InputError` naming the first that is not."""
    if not isinstance(entries, list):
        raise _bad(jpath, "not a list of entries")
    seen: set[str] = set()
    checked: list[dict[str, Any]] = []
    for k, e in enumerate(entries, 1):
        if not isinstance(e, dict) or set(e) != {"path", "backup", "mode"}:
            raise _bad(jpath, f"entry {k} is not {{path, backup, mode}}")
        rel, backup, mode = e["path"], e["backup"], e["mode"]
        if not isinstance(rel, str) or not _inside(root, rel):
            raise _bad(jpath, f"entry {k}: path {rel!r} is not inside the target")
        if rel in seen:
            raise _bad(jpath, f"entry {k}: path {rel!r} listed twice")
        seen.add(rel)
        if backup is None:
            if mode is not None:
                raise _bad(jpath, f"entry {k}: a mode without a backup")
            checked.append({"path": rel, "backup": None, "mode": None})
            continue
        if not (isinstance(backup, str) and backup[:1] == "b" and backup[1:].isdigit() and backup.isascii()):
            raise _bad(jpath, f"entry {k}: backup {backup!r} is not a journal file name")
        if backup != f"b{k - 1}":  # commit names entry k's backup b<k-1>; no two entries share one
            raise _bad(jpath, f"entry {k}: backup {backup!r} is not this entry's (b{k - 1})")
        if not (isinstance(mode, int) and not isinstance(mode, bool) and 0 <= mode <= 0o7777):
            raise _bad(jpath, f"entry {k}: mode {mode!r} is not permission bits")
        try:
            bst = os.lstat(os.path.join(jdir, backup))
        except OSError:
            raise _bad(jpath, f"entry {k}: backup {backup} is missing") from None
        if not stat.S_ISREG(bst.st_mode):
            raise _bad(jpath, f"entry {k}: backup {backup} is not a regular file")
        if bst.st_size > MAX_BACKUP:
            raise _bad(jpath, f"entry {k}: backup {backup} is {bst.st_size} bytes, above {MAX_BACKUP}")
        # permission bits only, never more than the backup itself grants (see the module docstring)
        checked.append({"path": rel, "backup": backup, "mode": mode & 0o777 & stat.S_IMODE(bst.st_mode)})
    return checked


def _read_journal_file(path: str, limit: int) -> bytes:
    """The bytes of the journal's file ``path``: not through a symlink, never blocking on a FIFO
    (non-blocking open), a regular file of at most ``limit`` bytes; else OSError or ValueError
    saying why."""
    fd = os.open(path, os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK | os.O_NOCTTY)
    try:
        st = os.fstat(fd)
        if not stat.S_ISREG(st.st_mode):
            raise ValueError("not a regular file")
        if st.st_size > limit:
            raise ValueError(f"{st.st_size} bytes, above {limit}")
        parts = [os.read(fd, st.st_size + 1)]
        total = len(parts[0])
        while parts[-1] and total <= limit:
            parts.append(os.read(fd, 1 << 20))
            total += len(parts[-1])
        if total > limit:
            raise ValueError(f"grew above {limit} bytes while read")
    finally:
        os.close(fd)
    return parts[0] if len(parts) <= 2 else b"".join(parts)


def _backup(jdir: str, name: str) -> bytes:
    """The bytes of backup ``name`` (checked by :func:`_checked`; read again safely: it may have
    been swapped for a symlink or a FIFO since)."""
    try:
        return _read_journal_file(os.path.join(jdir, name), MAX_BACKUP)
    except (OSError, ValueError) as exc:
        raise _bad(os.path.join(jdir, JOURNAL), f"backup {name}: {exc}") from None


def pending(root: str) -> list[dict[str, Any]] | None:
    """The journal of an interrupted transaction in ``root`` (one entry per file it touched:
    ``path``, ``backup`` name or None for a file it created, ``mode``), checked (see the module
    docstring), or None when there is none. Reading it changes nothing.

    :raises InputError: the journal is unreadable, damaged, or names anything outside the target.
    """
    jdir = _journal_dir(root)
    if jdir is None:
        return None
    jpath = os.path.join(jdir, JOURNAL)
    try:
        raw = _read_journal_file(jpath, MAX_JOURNAL)
    except FileNotFoundError:
        return None
    except OSError as exc:
        raise _bad(jpath, f"cannot read it: {exc.strerror}") from None
    except ValueError as exc:
        raise _bad(jpath, f"cannot read it: {exc}") from None
    try:
        import json  # at call: only when there is a journal (json costs the common start)

        entries = json.loads(raw.decode("utf-8"))
    except (ValueError, RecursionError) as exc:
        raise _bad(jpath, f"unreadable: {exc}") from None
    return _checked(root, jdir, jpath, entries)


def rolled_back(root: str, entries: list[dict[str, Any]]) -> tuple[dict[str, bytes | None], dict[str, int]]:
    """What :func:`recover` would restore, as pending changes (path -> bytes or None, path ->
    mode): lay them over the tree to see it as it will be after the roll-back. ``entries`` as
    :func:`pending` returns them."""
    jdir = os.path.join(root, JOURNAL_DIR)
    changes: dict[str, bytes | None] = {}
    modes: dict[str, int] = {}
    for e in entries:
        if e["backup"] is None:
            changes[e["path"]] = None
            continue
        changes[e["path"]] = _backup(jdir, e["backup"])
        modes[e["path"]] = e["mode"]
    return changes, modes


def recover(root: str) -> list[dict[str, Any]] | None:
    """Roll back an interrupted transaction in ``root`` if its journal is present (checked
    first: see :func:`pending`).

    :returns: the journal's entries when something was restored, else None.
    :raises InputError: a damaged or hostile journal (nothing is touched).
    """
    jdir = _journal_dir(root)
    if jdir is None:
        return None
    entries = pending(root)
    if entries is None:
        _drop_dir(jdir)  # journal never completed: nothing touched
        return None
    _restore(root, entries)
    os.unlink(os.path.join(jdir, JOURNAL))
    _drop_dir(jdir)
    return entries


def _restore(root: str, entries: list[dict[str, Any]]) -> None:
    """Put back what ``entries`` (checked) saved; a path that another kind of file (a directory)
    now occupies is left as it is rather than removed."""
    jdir = os.path.join(root, JOURNAL_DIR)
    # what the transaction created goes first: a directory it made for a new file (``a/x``) may
    # stand where a saved file (``a``) goes back; then what was saved, parents before children
    for e in sorted(entries, key=lambda e: e["backup"] is not None):
        path = os.path.join(root, e["path"])
        d, base = os.path.split(path)
        with _signals.suppress(OSError):
            os.unlink(os.path.join(d, f".{base}.dryboot-tmp"))
        try:
            st: os.stat_result | None = os.lstat(path)
        except OSError:
            st = None
        if st is not None and stat.S_ISDIR(st.st_mode):
            continue  # never written by a transaction (commit refuses a directory in the way)
        if e["backup"] is not None:
            data = _backup(jdir, e["backup"])
            os.makedirs(d, exist_ok=True)
            cur = None
            if st is not None and stat.S_ISREG(st.st_mode):
                with _signals.suppress(OSError), open(path, "rb") as fh2:
                    cur = fh2.read()
            if cur != data or st is None or not stat.S_ISREG(st.st_mode):
                write_atomic(path, data, e["mode"])
            else:
                os.chmod(path, e["mode"])
        else:
            with _signals.suppress(FileNotFoundError, NotADirectoryError):
                os.unlink(path)
            _remove_empty_dirs(root, e["path"])


def _in_the_way(
    root: str, rel: str, data: bytes | None, dirs: set[str], deleted: frozenset[str] = frozenset()
) -> str | None:
    """Why ``rel`` cannot be written (``data``) or deleted (None) under ``root``: a directory
    (or other non-regular file) where the file goes, or a non-directory among its parents.
    ``dirs``: the directories already seen to be directories (added to). ``deleted``: the files
    the same transaction deletes first (GNU patch applied patch by patch: a file ``a`` deleted,
    then ``a/x`` created; or ``a/x`` deleted, its emptied directory removed, then ``a`` created)."""
    parts = rel.split("/")
    cur = root
    for k, comp in enumerate(parts):
        cur = os.path.join(cur, comp)
        last = k == len(parts) - 1
        if not last and cur in dirs:
            continue
        try:
            st = os.lstat(cur)
        except FileNotFoundError:
            return None
        if not last and stat.S_ISDIR(st.st_mode):
            dirs.add(cur)
        if last and not stat.S_ISREG(st.st_mode):
            if data is not None and stat.S_ISDIR(st.st_mode) and _emptied(root, rel, deleted):
                return None
            kind = "a directory" if stat.S_ISDIR(st.st_mode) else "not a regular file"
            return f"{rel}: {kind} is where the patch {'creates' if data is not None else 'deletes'} a file"
        if not last and not stat.S_ISDIR(st.st_mode):
            if stat.S_ISREG(st.st_mode) and "/".join(parts[: k + 1]) in deleted:
                return None  # deleted first: its path becomes the new file's directory
            return f"{rel}: {'/'.join(parts[: k + 1])} is a file, not a directory"
    return None


def _emptied(root: str, rel: str, deleted: frozenset[str]) -> bool:
    """Whether deleting ``deleted`` empties the directory ``rel`` and removes it: every entry
    under it a regular file in ``deleted``, and no directory left empty (a removal climbs from
    a deleted file's directory only)."""
    top = os.path.join(root, rel)
    for dirpath, dirnames, filenames in os.walk(top):
        if not dirnames and not filenames:
            return False
        for fn in filenames:
            full = os.path.join(dirpath, fn)
            if not stat.S_ISREG(os.lstat(full).st_mode) or os.path.relpath(full, root) not in deleted:
                return False
        for dn in dirnames:
            if os.path.islink(os.path.join(dirpath, dn)):
                return False
    return True


def locked(root: str, shared: bool = False, on_wait: Any = None) -> _Lock:
    """``with locked(root):`` an advisory lock (``flock``) on the target directory ``root`` for
    the block: exclusive for a writer, ``shared`` for a reader. A second writer waits until
    the first is done (calling ``on_wait()`` once, when it has to wait), then sees the first's
    result: two runs never interleave, and neither's changes are lost."""
    return _Lock(root, shared, on_wait)


class _Lock:
    def __init__(self, root: str, shared: bool, on_wait: Any) -> None:
        self.root, self.shared, self.on_wait = root, shared, on_wait
        self.fd = -1

    def __enter__(self) -> None:
        self.fd = os.open(self.root, os.O_RDONLY | os.O_DIRECTORY)
        op = fcntl.LOCK_SH if self.shared else fcntl.LOCK_EX
        try:
            fcntl.flock(self.fd, op | fcntl.LOCK_NB)
        except BlockingIOError:
            if self.on_wait is not None:
                self.on_wait()
            fcntl.flock(self.fd, op)
        except OSError:  # a file system without flock: run unlocked, as GNU patch always does
            pass

    def __exit__(self, *exc: object) -> None:
        os.close(self.fd)  # releases the lock


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
        import json  # at call: a name with quotes or non-ASCII only (json costs the common start)

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
    seen: set[str] = set()
    deleting = frozenset(rel for rel, data in changes.items() if data is None)
    for rel in sorted(changes):
        why = _in_the_way(root, rel, changes[rel], seen, deleting)
        if why is not None:
            raise InputError(os.path.join(root, rel), None, f"cannot write: {why}; nothing was written")
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
                # journal's link still holds the old content and mode. A file whose mode alone
                # changes is chmod-ed in place (its inode's mode would change under the link) and
                # is copied, as is every file where links are refused; a copy gets the file's
                # permission bits (a restore never grants more than its backup has).
                try:
                    if rel not in changes:
                        raise OSError("a mode change: copied")
                    os.link(full, backup)
                except OSError:
                    import shutil  # at call: mode changes and file systems refusing hard links (start-up time)

                    shutil.copyfile(full, backup)
                    os.chmod(backup, st.st_mode & 0o777)
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
            written: list[str] = []
            # deletions first, and the directories they empty: a deleted ``a`` makes room for
            # a new ``a/x``, a deleted ``a/x`` for a new ``a`` (as GNU patch, patch by patch)
            for rel in deleting:
                with _signals.suppress(FileNotFoundError):
                    os.unlink(os.path.join(root, rel))
            for rel in deleting:
                _remove_empty_dirs(root, rel)
            for e in entries:
                rel = e["path"]
                full = os.path.join(root, rel)
                if rel in changes:
                    data = changes[rel]
                    if data is None:
                        continue
                    if e["backup"] is None:  # a new file (an existing one's directory exists)
                        os.makedirs(os.path.dirname(full), exist_ok=True)
                    mode = modes.get(rel, e["mode"])
                    write_atomic(full, data, mode, durable=False)
                    written.append(full)
                elif rel in modes and os.path.exists(full):
                    os.chmod(full, modes[rel])
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

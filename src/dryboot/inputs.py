"""Reading the files a user names, safely: a FIFO, a device, a socket or a directory given where a
file is expected is refused in one line instead of hanging (a FIFO with no writer blocks ``open``
and ``read`` forever) or reading an endless device.

An input that is read whole (a patch, a series file, a file inside a patch target; meant for
configs and logs too) goes through :func:`read_regular` or is checked with
:func:`require_regular`.
The refusal is an :class:`~dryboot.errors.InputError` naming the input: ``<source>: is a FIFO
(named pipe), not a regular file``.
"""

from __future__ import annotations

import os
import stat

from .errors import InputError

TYPE_CHECKING = False  # not typing's: the patch fast path (dryboot.__main__) imports neither typing nor pathlib
if TYPE_CHECKING:
    from pathlib import Path
    from typing import Any, BinaryIO

__all__ = ["check_regular", "file_kind", "open_regular", "read_regular", "require_regular"]


#: ``st_mode`` tests and their words, the first that holds naming the kind
_KINDS = (
    (stat.S_ISREG, "a regular file"),
    (stat.S_ISDIR, "a directory"),
    (stat.S_ISFIFO, "a FIFO (named pipe)"),
    (stat.S_ISCHR, "a character device"),
    (stat.S_ISBLK, "a block device"),
    (stat.S_ISSOCK, "a socket"),
    (stat.S_ISLNK, "a symbolic link"),
)


def file_kind(mode: int) -> str:
    """What a ``st_mode`` is, in words: ``a regular file``, ``a directory``, ``a FIFO (named
    pipe)``, ``a character device``, ``a block device``, ``a socket``, ``a symbolic link``."""
    return next((words for test, words in _KINDS if test(mode)), "not a regular file")


def _refuse(source: str, where: str | None, mode: int) -> InputError:
    return InputError(source, where, f"is {file_kind(mode)}, not a regular file")


def require_regular(path: str, source: str | None = None, where: str | None = None) -> os.stat_result:
    """``os.stat(path)`` (symbolic links followed) when it is a regular file.

    :param source: the name the refusal gives (default ``path``); ``where`` its second part.
    :raises InputError: missing or unreadable (``cannot read: <strerror>``), or not a regular
        file (``is a FIFO (named pipe), not a regular file``, and so on).
    """
    name = path if source is None else source
    try:
        st = os.stat(path)
    except OSError as exc:
        raise InputError(name, where, f"cannot read: {exc.strerror}") from None
    if not stat.S_ISREG(st.st_mode):
        raise _refuse(name, where, st.st_mode)
    return st


def read_regular(path: str, source: str | None = None, where: str | None = None) -> bytes:
    """The bytes of the regular file at ``path``, never blocking on a FIFO or a device.

    The path is stat-ed first; the open is non-blocking and the opened descriptor is checked
    again (the file may be swapped between the two), so a FIFO, device, socket or directory is
    refused without being read.

    :param source: the name the refusal gives (default ``path``); ``where`` its second part.
    :raises InputError: missing, unreadable or not a regular file (see :func:`require_regular`).
    """
    name = path if source is None else source
    require_regular(path, source, where)
    fd, size = _open_regular_fd(path, name, where)
    try:
        parts = [os.read(fd, size + 1)]
        while parts[-1]:
            parts.append(os.read(fd, 1 << 20))
    except OSError as exc:
        raise InputError(name, where, f"cannot read: {exc.strerror}") from None
    finally:
        os.close(fd)
    return parts[0] if len(parts) <= 2 else b"".join(parts)


def check_regular(path: str | Path, source: str, *, allow_dir: bool = False) -> None:
    """Refuse ``path`` unless it is a regular file (or, with ``allow_dir``, a directory); a path
    that does not exist passes (the caller says what is missing). Never opens the file (for a
    path read later by code that cannot take a stream: a ``--model`` directory, a drafter).

    :raises InputError: ``<source>: is a FIFO (named pipe), not a regular file``.
    """
    try:
        mode = os.stat(path).st_mode
    except OSError:
        return
    if stat.S_ISREG(mode) or (allow_dir and stat.S_ISDIR(mode)):
        return
    raise _refuse(source, None, mode)


def open_regular(path: str | Path, source: str | None = None) -> BinaryIO:
    """The regular file at ``path`` open for reading in binary, to be read in chunks (a log of
    any size), refused without blocking when it is anything else (opened ``O_NONBLOCK``, its
    type read from the open descriptor; blocking is restored for the reads).

    :param source: the name a refusal gives (default: the path).
    :raises InputError: no such file, unreadable, a directory, a FIFO, a device or a socket.
    """
    name = str(path) if source is None else source
    fd, _ = _open_regular_fd(path, name, None)
    try:
        os.set_blocking(fd, True)
        return os.fdopen(fd, "rb")
    except BaseException:
        os.close(fd)
        raise


def read_toml(path: str | Path, source: str | None = None) -> dict[str, Any]:
    """The TOML document of the regular file at ``path`` (a profiles file, a matrix file).

    :param source: the name a refusal gives (default: the path).
    :raises InputError: the file cannot be read (not regular, not UTF-8), or is not TOML (the line named).
    """
    import tomllib  # at call: the patch fast path never reads TOML

    name = str(path) if source is None else source
    try:
        with open_regular(path, name) as fh:
            return tomllib.loads(fh.read().decode("utf-8"))
    except (OSError, UnicodeDecodeError) as exc:
        raise InputError(name, None, f"cannot read: {exc}") from None
    except tomllib.TOMLDecodeError as exc:
        raise InputError(name, None, f"invalid TOML: {exc}") from None


def _open_regular_fd(path: str | Path, name: str, where: str | None) -> tuple[int, int]:
    """(descriptor, size in bytes) of ``path`` opened for reading without blocking (``O_NONBLOCK``:
    a FIFO with no writer would block ``open`` itself), once the open descriptor is known to be a
    regular file (the path may have been swapped since any earlier stat). The caller closes it.

    :raises InputError: no such file, a directory, unreadable, or not a regular file.
    """
    try:
        fd = os.open(path, os.O_RDONLY | os.O_NONBLOCK | os.O_NOCTTY | getattr(os, "O_CLOEXEC", 0))
    except FileNotFoundError:
        raise InputError(name, where, "no such file") from None
    except IsADirectoryError:
        raise InputError(name, where, "is a directory, not a regular file") from None
    except OSError as exc:
        raise InputError(name, where, f"cannot read: {exc.strerror or exc}") from None
    try:
        st = os.fstat(fd)
        if not stat.S_ISREG(st.st_mode):
            raise _refuse(name, where, st.st_mode)
    except BaseException:
        os.close(fd)
        raise
    return fd, st.st_size

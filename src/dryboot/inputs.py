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

__all__ = ["file_kind", "read_regular", "require_regular"]


def file_kind(mode: int) -> str:
    """What a ``st_mode`` is, in words: ``a regular file``, ``a directory``, ``a FIFO (named
    pipe)``, ``a character device``, ``a block device``, ``a socket``, ``a symbolic link``."""
    if stat.S_ISREG(mode):
        return "a regular file"
    if stat.S_ISDIR(mode):
        return "a directory"
    if stat.S_ISFIFO(mode):
        return "a FIFO (named pipe)"
    if stat.S_ISCHR(mode):
        return "a character device"
    if stat.S_ISBLK(mode):
        return "a block device"
    if stat.S_ISSOCK(mode):
        return "a socket"
    if stat.S_ISLNK(mode):
        return "a symbolic link"
    return "not a regular file"


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
    try:
        fd = os.open(path, os.O_RDONLY | os.O_NONBLOCK | os.O_NOCTTY | getattr(os, "O_CLOEXEC", 0))
    except OSError as exc:
        raise InputError(name, where, f"cannot read: {exc.strerror}") from None
    try:
        st = os.fstat(fd)
        if not stat.S_ISREG(st.st_mode):
            raise _refuse(name, where, st.st_mode)
        parts = [os.read(fd, st.st_size + 1)]
        while parts[-1]:
            parts.append(os.read(fd, 1 << 20))
    except OSError as exc:
        raise InputError(name, where, f"cannot read: {exc.strerror}") from None
    finally:
        os.close(fd)
    return parts[0] if len(parts) <= 2 else b"".join(parts)

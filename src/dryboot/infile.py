"""Input files are regular files: a FIFO, a device or a socket given as a config, a log or a
YAML file is refused in one line instead of blocking the command on a read that may never end.

The file is opened with ``O_NONBLOCK`` (opening a FIFO for reading without a writer returns at
once instead of waiting) and its type read from the open descriptor (``fstat``), so what is
checked is what is read. Bottom layer: imports only :mod:`dryboot.errors`.
"""

from __future__ import annotations

import os
import stat
from pathlib import Path
from typing import BinaryIO

from dryboot.errors import InputError


def describe_type(mode: int) -> str | None:
    """What a file of ``mode`` (``st_mode``) is, when it is neither a regular file nor a
    directory (``a FIFO (named pipe)``, ``a character device``...); ``None`` otherwise."""
    if stat.S_ISREG(mode) or stat.S_ISDIR(mode):
        return None
    if stat.S_ISFIFO(mode):
        return "a FIFO (named pipe)"
    if stat.S_ISCHR(mode):
        return "a character device"
    if stat.S_ISBLK(mode):
        return "a block device"
    if stat.S_ISSOCK(mode):
        return "a socket"
    return "not a regular file"


def not_regular_reason(kind: str) -> str:
    """The refusal's wording for a special file of ``kind`` (:func:`describe_type`)."""
    return f"{kind}, not a regular file: dryboot reads inputs only from regular files"


def check_regular(path: str | Path, source: str, *, allow_dir: bool = False) -> None:
    """Refuse ``path`` unless it is a regular file (or, with ``allow_dir``, a directory); a path
    that does not exist passes (the caller says what is missing). Never opens the file.

    :raises InputError: ``<source>: a FIFO (named pipe), not a regular file: ...``.
    """
    try:
        mode = os.stat(path).st_mode
    except OSError:
        return
    if stat.S_ISDIR(mode) and not allow_dir:
        raise InputError(source, None, "a directory, not a file")
    kind = describe_type(mode)
    if kind is not None:
        raise InputError(source, None, not_regular_reason(kind))


def open_regular(path: str | Path, source: str | None = None) -> BinaryIO:
    """Open ``path`` for reading in binary, refusing anything but a regular file without
    blocking on it.

    :param source: the name a refusal carries (default: the path).
    :raises InputError: no such file, unreadable, a directory, a FIFO / device / socket.
    """
    name = str(path) if source is None else source
    try:
        fd = os.open(path, os.O_RDONLY | getattr(os, "O_NONBLOCK", 0) | getattr(os, "O_CLOEXEC", 0))
    except FileNotFoundError:
        raise InputError(name, None, "no such file") from None
    except IsADirectoryError:
        raise InputError(name, None, "a directory, not a file") from None
    except OSError as exc:
        raise InputError(name, None, f"cannot read: {exc.strerror or exc}") from None
    try:
        mode = os.fstat(fd).st_mode
        if stat.S_ISDIR(mode):
            raise InputError(name, None, "a directory, not a file")
        kind = describe_type(mode)
        if kind is not None:
            raise InputError(name, None, not_regular_reason(kind))
        if hasattr(os, "set_blocking"):
            os.set_blocking(fd, True)
        return os.fdopen(fd, "rb")
    except BaseException:
        os.close(fd)
        raise

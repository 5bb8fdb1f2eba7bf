"""dryboot.inputs: a FIFO, device, socket or directory named as an input is refused, never read
(issue 28: a FIFO hung every command that read it)."""

from __future__ import annotations

import os
import socket
import threading
from pathlib import Path

import pytest

from dryboot.errors import InputError
from dryboot.inputs import file_kind, read_regular, require_regular


def _no_hang(fn: object, *args: str) -> BaseException | bytes:
    """Run ``fn(*args)`` in a thread; fail the test if it has not returned within 10 s."""
    out: list[BaseException | bytes] = []

    def go() -> None:
        try:
            out.append(fn(*args))  # type: ignore[operator]
        except BaseException as exc:
            out.append(exc)

    t = threading.Thread(target=go, daemon=True)
    t.start()
    t.join(10)
    assert out, "hung"
    return out[0]


def test_regular_file_is_read_whole(tmp_path: Path) -> None:
    f = tmp_path / "x"
    f.write_bytes(b"a\nb\n" * 300_000)
    assert read_regular(str(f)) == b"a\nb\n" * 300_000
    (tmp_path / "empty").write_bytes(b"")
    assert read_regular(str(tmp_path / "empty")) == b""


def test_fifo_is_refused_without_hanging(tmp_path: Path) -> None:
    fifo = tmp_path / "p.patch"
    os.mkfifo(fifo)
    got = _no_hang(read_regular, str(fifo))
    assert isinstance(got, InputError)
    assert got.line() == f"{fifo}: is a FIFO (named pipe), not a regular file"


def test_directory_device_socket_refused(tmp_path: Path) -> None:
    with pytest.raises(InputError, match="is a directory, not a regular file"):
        read_regular(str(tmp_path))
    with pytest.raises(InputError, match="is a character device, not a regular file"):
        read_regular("/dev/zero")
    sock = tmp_path / "s"
    s = socket.socket(socket.AF_UNIX)
    try:
        s.bind(str(sock))
        with pytest.raises(InputError, match="is a socket, not a regular file"):
            require_regular(str(sock), "series", "line 3")
    finally:
        s.close()


def test_missing_names_the_source(tmp_path: Path) -> None:
    with pytest.raises(InputError) as e:
        read_regular(str(tmp_path / "nope"), "--config")
    assert e.value.line() == "--config: cannot read: No such file or directory"


def test_file_kind_words() -> None:
    assert file_kind(os.stat("/dev/null").st_mode) == "a character device"
    assert file_kind(os.stat("/").st_mode) == "a directory"

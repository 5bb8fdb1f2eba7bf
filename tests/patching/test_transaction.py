"""Transactions: all files or none, also on a failed write and on a kill -9 mid-way."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from dryboot.patching import transaction
from dryboot.patching.paths import JOURNAL_DIR

from .helpers import snapshot


def _tree(tmp: Path) -> Path:
    root = tmp / "t"
    (root / "d").mkdir(parents=True)
    for i in range(5):
        (root / f"f{i}").write_bytes(f"orig {i}\r\n".encode())
    (root / "d" / "x").write_bytes(b"x\n")
    os.chmod(root / "f1", 0o755)
    return root


def _changes() -> dict[str, bytes | None]:
    ch: dict[str, bytes | None] = {f"f{i}": f"new {i}\n".encode() for i in range(5)}
    ch["d/x"] = None
    ch["new/dir/file"] = b"created\n"
    return ch


def test_commit_writes_everything(tmp_path: Path) -> None:
    root = _tree(tmp_path)
    transaction.commit(str(root), _changes(), {"f2": 0o700})
    assert (root / "f0").read_bytes() == b"new 0\n"
    assert (root / "f1").stat().st_mode & 0o777 == 0o755
    assert (root / "f2").stat().st_mode & 0o777 == 0o700
    assert not (root / "d").exists(), "emptied directories are removed, as GNU patch does"
    assert (root / "new/dir/file").read_bytes() == b"created\n"
    assert not (root / JOURNAL_DIR).exists()


def test_failed_write_restores_every_file(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    root = _tree(tmp_path)
    before = snapshot(root)
    real = os.replace
    calls = {"n": 0}

    def flaky(a: str, b: str) -> None:
        if b.endswith("f3"):
            raise OSError(28, "No space left on device")
        calls["n"] += 1
        real(a, b)

    monkeypatch.setattr(transaction.os, "replace", flaky)
    with pytest.raises(OSError):
        transaction.commit(str(root), _changes(), {})
    monkeypatch.setattr(transaction.os, "replace", real)
    assert calls["n"] >= 2  # some files had been replaced before the failure
    assert snapshot(root) == before
    assert (root / "f1").stat().st_mode & 0o777 == 0o755


def test_killed_mid_commit_is_recovered(tmp_path: Path) -> None:
    root = _tree(tmp_path)
    before = snapshot(root)
    script = f"""
import os, time, sys
from dryboot.patching import transaction
real = os.replace
def slow(a, b):
    real(a, b)
    if b.endswith("f2"):
        print("mid", flush=True)
        time.sleep(60)
transaction.os.replace = slow
transaction.commit({str(root)!r}, {{f"f{{i}}": b"new" for i in range(5)}}, {{}})
"""
    p = subprocess.Popen([sys.executable, "-c", script], stdout=subprocess.PIPE)
    assert p.stdout is not None
    assert p.stdout.readline().strip() == b"mid"
    p.send_signal(signal.SIGKILL)
    p.wait()
    assert (root / "f0").read_bytes() == b"new"  # half-written...
    assert (root / JOURNAL_DIR / "journal.json").exists()
    assert transaction.recover(str(root))  # ...until the next run recovers
    assert snapshot(root) == before


def test_sigterm_mid_commit_rolls_back(tmp_path: Path) -> None:
    root = _tree(tmp_path)
    before = snapshot(root)
    script = f"""
import os, time
from dryboot.patching import transaction
real = os.replace
done = []
def slow(a, b):
    real(a, b)
    if b.endswith("f2") and not done:
        done.append(1)
        print("mid", flush=True)
        time.sleep(30)
transaction.os.replace = slow
try:
    transaction.commit({str(root)!r}, {{f"f{{i}}": b"new" for i in range(5)}}, {{}})
except transaction.Interrupted:
    print("rolled back", flush=True)
"""
    p = subprocess.Popen([sys.executable, "-c", script], stdout=subprocess.PIPE)
    assert p.stdout is not None
    assert p.stdout.readline().strip() == b"mid"
    time.sleep(0.05)
    p.send_signal(signal.SIGTERM)
    out, _ = p.communicate(timeout=20)
    assert out.strip() == b"rolled back"
    assert snapshot(root) == before


def test_mode_only_change_is_rolled_back(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """A mode change of a file whose backup shares its inode (hard-linked journal) is undone."""
    root = _tree(tmp_path)
    before = snapshot(root)
    real = os.replace

    def flaky(a: str, b: str) -> None:
        if b.endswith("f3"):
            raise OSError(28, "No space left on device")
        real(a, b)

    monkeypatch.setattr(transaction.os, "replace", flaky)
    with pytest.raises(OSError):
        # f0: mode only (chmod in place); f3: a content change that fails
        transaction.commit(str(root), {"f3": b"new 3\n"}, {"f0": 0o700})
    monkeypatch.setattr(transaction.os, "replace", real)
    assert snapshot(root) == before
    assert (root / "f0").stat().st_mode & 0o777 == 0o666 & ~_umask()


def _umask() -> int:
    mask = os.umask(0)
    os.umask(mask)
    return mask


@pytest.mark.parametrize("sync", ["", "1"])
def test_flushes_only_with_dryboot_sync(tmp_path: Path, monkeypatch: pytest.MonkeyPatch, sync: str) -> None:
    """Default: nothing is fsynced (GNU patch flushes nothing either; a killed run is still rolled
    back). DRYBOOT_SYNC=1: the journal is fsynced before any file is replaced, and the new
    contents are flushed before the commit point."""
    root = _tree(tmp_path)
    monkeypatch.setenv("DRYBOOT_SYNC", sync)
    calls: list[str] = []
    real_fsync, real_durable = os.fsync, transaction._make_durable

    def fsync(fd: int) -> None:
        journal = (root / JOURNAL_DIR / "journal.json").exists()
        calls.append("fsync after journal" if journal else "fsync before journal")
        real_fsync(fd)

    def durable(r: str, paths: list[str]) -> None:
        calls.append("flush")
        real_durable(r, paths)

    monkeypatch.setattr(transaction.os, "fsync", fsync)
    monkeypatch.setattr(transaction, "_make_durable", durable)
    transaction.commit(str(root), _changes(), {})
    assert (root / "f0").read_bytes() == b"new 0\n"
    if sync:
        assert calls[0] == "fsync before journal" and calls[-1] == "flush"
    else:
        assert calls == []


@pytest.mark.parametrize(
    ("before", "changes", "after"),
    [
        # a file deleted, a file created under its name (GNU patch: patch 1 deletes a, patch 2 creates a/x)
        ({"a": b"1\n"}, {"a": None, "a/x": b"2\n"}, {"a/": b"<dir>", "a/x": b"2\n"}),
        # a directory emptied by its deletions, a file created in its place
        ({"a/x": b"1\n", "a/b/y": b"1\n"}, {"a/x": None, "a/b/y": None, "a": b"2\n"}, {"a": b"2\n"}),
    ],
)
def test_a_deleted_path_makes_room_as_gnu_patch_does(
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    before: dict[str, bytes],
    changes: dict[str, bytes | None],
    after: dict[str, bytes],
) -> None:
    """What a series deletes makes room for what it then creates (the hypothesis example of
    tests/patching/test_status_agrees.py: status said applicable, apply refused); a failed
    write puts the deleted file back even where a new directory stood."""
    root = tmp_path / "t"
    for rel, data in before.items():
        (root / rel).parent.mkdir(parents=True, exist_ok=True)
        (root / rel).write_bytes(data)
    original = snapshot(root)
    real = os.replace
    failed: list[str] = []

    def full_disk(a: str, b: str) -> None:
        if JOURNAL_DIR not in b and not failed:  # the first write of the new contents fails
            failed.append(b)
            raise OSError(28, "No space left on device")
        real(a, b)

    monkeypatch.setattr(transaction.os, "replace", full_disk)
    with pytest.raises(OSError):
        transaction.commit(str(root), changes, {})
    monkeypatch.setattr(transaction.os, "replace", real)
    assert snapshot(root) == original
    transaction.commit(str(root), changes, {})
    assert snapshot(root) == after

"""Hostile input: every case is a one-line error, exit 2, no traceback, nothing written."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from .helpers import run_cli, snapshot

GOOD = b"--- a/f.py\n+++ b/f.py\n@@ -1,3 +1,3 @@\n a\n-b\n+B\n c\n"


def _stack(tmp: Path, *patches: tuple[str, bytes]) -> tuple[Path, Path]:
    s = tmp / "stack"
    t = tmp / "target"
    s.mkdir()
    t.mkdir()
    (t / "f.py").write_bytes(b"a\nb\nc\n")
    for name, data in patches:
        (s / name).write_bytes(data)
    (s / "series").write_bytes(b"".join(n.encode() + b"\n" for n, _ in patches))
    return s, t


CASES = {
    "absolute": (b"--- /etc/passwd\n+++ /etc/passwd\n@@ -1 +1 @@\n-a\n+b\n", "absolute path"),
    "dotdot": (b"--- a/../../x\n+++ b/../../x\n@@ -1 +1 @@\n-a\n+b\n", "contains '..'"),
    "ed": (b"1,3c\nhello\n.\nw\n", "ed script"),
    "huge": (b"--- a/f.py\n+++ b/f.py\n@@ -1,99999999 +1,99999999 @@\n a\n-b\n+B\n c\n", "declares 99999999 old lines"),
    "truncated": (GOOD[:-8], "body has"),
    "nul": (GOOD.replace(b"+++ b/f.py", b"+++ b/f\x00.py"), "NUL byte in a file name"),
    "binary": (b"diff --git a/x.bin b/x.bin\nindex 1..2 100644\nGIT binary patch\nliteral 3\n", "binary patch"),
    "context": (b"*** a/f.py\n--- b/f.py\n***************\n*** 1,3 ****\n", "context diff"),
    "empty": (b"just prose, no diff\n", "no unified diff"),
}


@pytest.mark.parametrize("case", sorted(CASES))
def test_hostile_patch_exit_2_nothing_written(tmp_path: Path, case: str) -> None:
    data, needle = CASES[case]
    # a good patch first: it must not be kept either
    s, t = _stack(tmp_path, ("0001-good.patch", GOOD), ("0002-bad.patch", data))
    if case == "absolute":  # -p1 would strip the leading '/', as GNU patch does
        (s / "series").write_bytes(b"0001-good.patch\n0002-bad.patch -p0\n")
    before = snapshot(tmp_path)
    r = run_cli("series", "apply", str(s), "--to", str(t))
    assert r.exit_code == 2, r.output
    assert needle in r.stderr
    assert len(r.stderr.strip().splitlines()) == 1
    assert "Traceback" not in r.output
    assert snapshot(tmp_path) == before


def test_symlink_escape_refused(tmp_path: Path) -> None:
    outside = tmp_path / "outside"
    outside.mkdir()
    (outside / "f.py").write_bytes(b"a\nb\nc\n")
    s, t = _stack(tmp_path, ("0001-x.patch", GOOD.replace(b"f.py", b"link/f.py")))
    os.symlink(outside, t / "link")
    before = snapshot(tmp_path)
    r = run_cli("series", "apply", str(s), "--to", str(t))
    assert r.exit_code == 2
    assert "resolves through the symlink link to outside the target directory" in r.stderr
    assert snapshot(tmp_path) == before


def test_symlinked_file_refused(tmp_path: Path) -> None:
    s, t = _stack(tmp_path, ("0001-x.patch", GOOD.replace(b"f.py", b"l.py")))
    os.symlink(t / "f.py", t / "l.py")
    r = run_cli("series", "apply", str(s), "--to", str(t))
    assert r.exit_code == 2 and "is a symlink" in r.stderr


def test_series_typo_named(tmp_path: Path) -> None:
    s, _t = _stack(tmp_path, ("0001-a.patch", GOOD))
    (s / "0002-stray.patch").write_bytes(GOOD)  # not listed: never applied, not an error
    (s / "series").write_bytes(b"0001-a.patch\n0003-typo.patch -p1\n# comment\n\n")
    r = run_cli("series", "list", str(s))
    assert r.exit_code == 2
    assert "0003-typo.patch" in r.stderr
    assert len(r.stderr.strip().splitlines()) == 1


def test_series_unknown_option(tmp_path: Path) -> None:
    s, _ = _stack(tmp_path, ("0001-a.patch", GOOD))
    (s / "series").write_bytes(b"0001-a.patch --fuzz=3\n")
    r = run_cli("series", "list", str(s))
    assert r.exit_code == 2
    assert r.stderr.strip().endswith("line 1: 0001-a.patch: unknown option '--fuzz=3' (known: -pN, -R)")


def test_hunks_check_missing_file() -> None:
    r = run_cli("hunks", "check", "/nonexistent/x.patch")
    assert r.exit_code == 2 and "cannot read" in r.stderr

"""A FIFO (or a device, a socket, a directory) given as a patch, a series file, a listed patch or
a file inside the target is refused in one line naming it, exit 2; nothing hangs (issue 28: each
of these blocked ``series`` and ``hunks`` forever)."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[2]
PATCH = b"--- a/f\n+++ b/f\n@@ -1,3 +1,3 @@\n a\n-b\n+B\n c\n"


def _dryboot(cwd: Path, *args: str) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "PYTHONPATH": str(REPO / "src")}
    try:
        return subprocess.run(
            [sys.executable, "-m", "dryboot", *args], cwd=cwd, capture_output=True, text=True, env=env, timeout=60
        )
    except subprocess.TimeoutExpired:
        pytest.fail(f"dryboot {' '.join(args)} hung")


@pytest.fixture
def work(tmp_path: Path) -> Path:
    (tmp_path / "t").mkdir()
    (tmp_path / "t" / "f").write_bytes(b"a\nb\nc\n")
    (tmp_path / "p").mkdir()
    (tmp_path / "p" / "1.patch").write_bytes(PATCH)
    (tmp_path / "p" / "series").write_text("1.patch\n")
    return tmp_path


def _refused(r: subprocess.CompletedProcess[str], name: str, kind: str = "a FIFO (named pipe)") -> None:
    assert r.returncode == 2, (r.stdout, r.stderr)
    assert r.stderr.strip().splitlines() == [f"dryboot: error: {name}: is {kind}, not a regular file"]
    assert "Traceback" not in r.stderr


def test_fifo_as_hunks_input(work: Path) -> None:
    os.mkfifo(work / "x.patch")
    _refused(_dryboot(work, "hunks", "check", "x.patch"), "x.patch")
    _refused(_dryboot(work, "hunks", "fix", "x.patch"), "x.patch")


def test_fifo_as_series_file(work: Path) -> None:
    (work / "p" / "series").unlink()
    os.mkfifo(work / "p" / "series")
    for cmd in ("status", "list"):
        _refused(_dryboot(work, "series", cmd, "p", *(["--on", "t"] if cmd == "status" else [])), "p/series")
    _refused(_dryboot(work, "series", "apply", "p", "--to", "t"), "p/series")


def test_fifo_listed_in_series(work: Path) -> None:
    os.mkfifo(work / "p" / "2.patch")
    (work / "p" / "series").write_text("1.patch\n2.patch\n")
    _refused(_dryboot(work, "series", "status", "p", "--on", "t"), "p/2.patch")
    _refused(_dryboot(work, "series", "apply", "p", "--to", "t"), "p/2.patch")
    assert (work / "t" / "f").read_bytes() == b"a\nb\nc\n"


def test_directory_listed_in_series(work: Path) -> None:
    (work / "p" / "2.patch").mkdir()
    (work / "p" / "series").write_text("1.patch\n2.patch\n")
    _refused(_dryboot(work, "series", "status", "p", "--on", "t"), "p/2.patch", "a directory")


def test_fifo_inside_the_target(work: Path) -> None:
    (work / "t" / "f").unlink()
    os.mkfifo(work / "t" / "f")
    target = os.path.realpath(work / "t")
    _refused(_dryboot(work, "series", "status", "p", "--on", "t"), f"{target}/f")
    _refused(_dryboot(work, "series", "apply", "p", "--to", "t"), f"{target}/f")
    assert not os.path.exists(work / "t" / ".dryboot-txn")

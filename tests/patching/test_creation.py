"""GNU patch creates a missing file from a plain diff whose hunks have empty old sides."""

from __future__ import annotations

import subprocess
from pathlib import Path

from .helpers import gnu_patch_bin, run_cli

PATCH = b"--- a/new.txt\n+++ b/new.txt\n@@ -0,0 +1,2 @@\n+hello\n+world\n"


def test_plain_diff_creates_missing_file_like_gnu_patch(tmp_path: Path) -> None:
    gnu = tmp_path / "gnu"
    gnu.mkdir()
    (tmp_path / "p.patch").write_bytes(PATCH)
    r = subprocess.run(
        [gnu_patch_bin(), "-p1", "-i", str(tmp_path / "p.patch")], cwd=gnu, capture_output=True, check=False
    )
    assert r.returncode == 0, r.stderr

    stack = tmp_path / "stack"
    stack.mkdir()
    (stack / "p.patch").write_bytes(PATCH)
    (stack / "series").write_text("p.patch\n")
    target = tmp_path / "target"
    target.mkdir()
    result = run_cli("series", "apply", str(stack), "--to", str(target))
    assert result.exit_code == 0, result.output
    assert (target / "new.txt").read_bytes() == (gnu / "new.txt").read_bytes()


def test_missing_file_with_old_lines_still_fails(tmp_path: Path) -> None:
    stack = tmp_path / "stack"
    stack.mkdir()
    (stack / "p.patch").write_bytes(b"--- a/old.txt\n+++ b/old.txt\n@@ -1 +1 @@\n-a\n+b\n")
    (stack / "series").write_text("p.patch\n")
    target = tmp_path / "target"
    target.mkdir()
    result = run_cli("series", "apply", str(stack), "--to", str(target))
    assert result.exit_code == 1
    assert "file to patch does not exist" in result.output
    assert list(target.iterdir()) == []

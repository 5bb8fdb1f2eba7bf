"""---/+++ names that are not the 'diff --git' line's.

git apply (2.39) silently turns such a section into a rename: ``x => elsewhere/y``. A patch
stack whose headers disagree with themselves was hand-edited or crafted; dryboot refuses it
with the line and both names instead of guessing.
"""

from __future__ import annotations

import subprocess
from pathlib import Path

from .helpers import run_cli

PATCH = b"diff --git a/x b/x\n--- a/x\n+++ b/elsewhere/y\n@@ -1 +1 @@\n-x\n+y\n"


def test_inconsistent_new_filename_is_refused_not_renamed(tmp_path: Path) -> None:
    repo = tmp_path / "repo"
    repo.mkdir()
    (repo / "x").write_bytes(b"x\n")
    subprocess.run(["git", "init", "-q", "."], cwd=repo, check=True)
    (tmp_path / "p.patch").write_bytes(PATCH)
    git = subprocess.run(["git", "apply", "-v", "--check", str(tmp_path / "p.patch")], cwd=repo, capture_output=True)
    assert git.returncode == 0 and b"x => elsewhere/y" in git.stderr  # git's silent rename

    stack = tmp_path / "stack"
    stack.mkdir()
    (stack / "p.patch").write_bytes(PATCH)
    (stack / "series").write_text("p.patch\n")
    before = (repo / "x").read_bytes()
    result = run_cli("series", "apply", str(stack), "--to", str(repo))
    assert result.exit_code == 2
    assert "line 3: inconsistent new filename" in result.output
    assert (repo / "x").read_bytes() == before
    assert not (repo / "elsewhere").exists()

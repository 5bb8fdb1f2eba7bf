"""A pure-deletion hunk whose context needs all the fuzz allowed (issue 28): at ``--fuzz 3``
its new side (context only) is trimmed to nothing and "fits" anywhere, which proves nothing.
It was read "already applied" and skipped (exit 0, the lines left in place) where GNU patch
deletes them; ``swap --fuzz 3`` run twice applied NEW twice. Judged against GNU patch."""

from __future__ import annotations

import os
import subprocess
from pathlib import Path

import pytest

from .helpers import gnu_patch_bin, run_cli

LEAD_ONLY = b"--- a/f\n+++ b/f\n@@ -1,6 +1,3 @@\n a\n b\n c\n-d1\n-d2\n-d3\n"
BOTH = b"--- a/f\n+++ b/f\n@@ -1,9 +1,6 @@\n a\n b\n c\n-d1\n-d2\n-d3\n q\n r\n s\n"
TREES = {LEAD_ONLY: b"x\ny\nz\nd1\nd2\nd3\n", BOTH: b"x\ny\nz\nd1\nd2\nd3\nq\nr\ns\n"}


def _gnu(tree: Path, patch: Path, *args: str) -> int:
    p = subprocess.run(
        [gnu_patch_bin(), "-p1", "-f", "--no-backup-if-mismatch", "-s", *args, "-i", str(patch)],
        cwd=tree,
        capture_output=True,
        env={**os.environ, "LC_ALL": "C"},
    )
    return p.returncode


@pytest.mark.parametrize("patch", [LEAD_ONLY, BOTH], ids=["lead-context-only", "context-both-ends"])
def test_fuzz_3_deletion_is_applied_as_gnu_patch_does(tmp_path: Path, patch: bytes) -> None:
    s, t, g = tmp_path / "s", tmp_path / "t", tmp_path / "g"
    for d in (s, t, g):
        d.mkdir()
    (s / "1.patch").write_bytes(patch)
    (s / "series").write_text("1.patch\n")
    (t / "f").write_bytes(TREES[patch])
    (g / "f").write_bytes(TREES[patch])
    assert _gnu(g, s / "1.patch", "--fuzz", "3") == 0
    r = run_cli("series", "apply", str(s), "--to", str(t), "--fuzz", "3")
    assert r.exit_code == 0, r.output
    assert "already applied" not in r.stdout
    assert (t / "f").read_bytes() == (g / "f").read_bytes()
    assert b"d1" not in (t / "f").read_bytes()
    again = run_cli("series", "apply", str(s), "--to", str(t), "--fuzz", "3")
    assert again.exit_code == 0 and "already applied" in again.stdout, again.output
    assert (t / "f").read_bytes() == (g / "f").read_bytes()


def test_swap_fuzz_3_twice_exits_0_and_changes_nothing_the_second_time(tmp_path: Path) -> None:
    """OLD deletes d1..d3, NEW replaces them with n1; the tree has OLD applied."""
    old, new = tmp_path / "old.patch", tmp_path / "new.patch"
    old.write_bytes(BOTH)
    new.write_bytes(b"--- a/f\n+++ b/f\n@@ -1,9 +1,7 @@\n a\n b\n c\n-d1\n-d2\n-d3\n+n1\n q\n r\n s\n")
    t, g = tmp_path / "t", tmp_path / "g"
    for d in (t, g):
        d.mkdir()
        (d / "f").write_bytes(b"x\ny\nz\nq\nr\ns\n")
    assert _gnu(g, old, "-R", "--fuzz", "3") == 0 and _gnu(g, new, "--fuzz", "3") == 0
    first = run_cli("swap", str(old), str(new), "--in", str(t), "--fuzz", "3")
    assert first.exit_code == 0, first.output
    assert (t / "f").read_bytes() == (g / "f").read_bytes() == b"x\ny\nz\nn1\nq\nr\ns\n"
    for _ in range(2):
        again = run_cli("swap", str(old), str(new), "--in", str(t), "--fuzz", "3")
        assert again.exit_code == 0, again.output
        assert "already applied" in again.stdout
        assert (t / "f").read_bytes() == b"x\ny\nz\nn1\nq\nr\ns\n"

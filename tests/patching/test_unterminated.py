"""A patch whose last line is a hunk line with no newline and no "\\ No newline at end of file"
marker (issue 28): it applied silently, as if the line ended. GNU patch says "patch unexpectedly
ends in middle of line" and fails at fuzz 0 (exit 1; "malformed patch", exit 2, for an added
line); git apply calls it a corrupt patch. dryboot refuses it, naming the line."""

from __future__ import annotations

import os
import subprocess
from pathlib import Path

import pytest

from .helpers import gnu_patch_bin, run_cli

HEAD = b"--- a/f\n+++ b/f\n@@ -1,3 +1,3 @@\n"
CASES = {
    "context": HEAD + b" a\n-b\n+B\n c",
    "removed": b"--- a/f\n+++ b/f\n@@ -1,3 +1,2 @@\n a\n b\n-c",
    "added": HEAD + b" a\n b\n-c\n+C",
}


def _tree(d: Path) -> None:
    d.mkdir()
    (d / "f").write_bytes(b"a\nb\nc\n")


@pytest.mark.parametrize("name", sorted(CASES))
def test_unterminated_last_line_fails_as_gnu_patch_and_git_do(tmp_path: Path, name: str) -> None:
    patch = tmp_path / "1.patch"
    patch.write_bytes(CASES[name])
    env = {**os.environ, "LC_ALL": "C"}
    _tree(tmp_path / "g")
    gnu = subprocess.run(
        [gnu_patch_bin(), "-p1", "-f", "--fuzz", "0", "--no-backup-if-mismatch", "-r", "-", "-i", str(patch)],
        cwd=tmp_path / "g",
        capture_output=True,
        text=True,
        env=env,
    )
    assert gnu.returncode != 0 and "patch unexpectedly ends in middle of line" in gnu.stdout + gnu.stderr
    _tree(tmp_path / "git")
    subprocess.run(["git", "init", "-q"], cwd=tmp_path / "git", check=True, env=env)
    git = subprocess.run(["git", "apply", str(patch)], cwd=tmp_path / "git", capture_output=True, text=True, env=env)
    assert git.returncode != 0 and "corrupt patch" in git.stderr

    s, t = tmp_path / "s", tmp_path / "t"
    s.mkdir()
    _tree(t)
    (s / "1.patch").write_bytes(CASES[name])
    (s / "series").write_text("1.patch\n")
    for args in (("series", "apply", str(s), "--to", str(t)), ("series", "status", str(s), "--on", str(t))):
        r = run_cli(*args)
        assert r.exit_code == 2, r.output
        assert "1.patch: line" in r.stderr and "ends in the middle of a line" in r.stderr
    assert (t / "f").read_bytes() == b"a\nb\nc\n"
    chk = run_cli("hunks", "check", str(patch))
    assert chk.exit_code == 1 and "ends in the middle of a line" in chk.stdout


def test_marker_or_trailer_without_newline_still_applies(tmp_path: Path) -> None:
    """With the marker the line really has no newline; a mail trailer without one is not a
    hunk line."""
    for k, (patch, want) in enumerate(
        [
            (HEAD + b" a\n-b\n+B\n c\n\\ No newline at end of file", None),
            (HEAD + b" a\n-b\n+B\n c\n-- \n2.39.5", b"a\nB\nc\n"),
        ]
    ):
        s, t = tmp_path / f"s{k}", tmp_path / f"t{k}"
        s.mkdir()
        _tree(t)
        (s / "1.patch").write_bytes(patch)
        (s / "series").write_text("1.patch\n")
        r = run_cli("series", "apply", str(s), "--to", str(t))
        if want is None:  # the context "c" without newline does not match "c\n": a conflict, not a refusal
            assert r.exit_code == 1, r.output
        else:
            assert r.exit_code == 0, r.output
            assert (t / "f").read_bytes() == want

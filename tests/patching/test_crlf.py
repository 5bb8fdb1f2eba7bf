"""CRLF patch files (issue 28): GNU patch strips the trailing CRs of a file section whose
headers end in CRLF ("Stripping trailing CRs from patch") and applies it to LF files; dryboot
refused the patch. Decided: match GNU patch, with a warning naming the patch. Each case is run
through GNU patch 2.7.6 and dryboot on the same tree: same exit status class, same tree."""

from __future__ import annotations

import os
import shutil
import subprocess
from pathlib import Path

import pytest

from .helpers import gnu_patch_bin, run_cli, snapshot

LF_PATCH = b"--- a/f\n+++ b/f\n@@ -1,3 +1,3 @@\n a\n-b\n+B\n c\n"
CASES = {
    "all-crlf": LF_PATCH.replace(b"\n", b"\r\n"),
    "headers-crlf-body-lf": b"--- a/f\r\n+++ b/f\r\n@@ -1,3 +1,3 @@\r\n a\n-b\n+B\n c\n",
    "plus-header-only": b"--- a/f\n+++ b/f\r\n@@ -1,3 +1,3 @@\n a\n-b\n+B\n c\n",
    "prose-crlf-body-crlf": b"Subject: x\r\n\r\n--- a/f\n+++ b/f\n@@ -1,3 +1,3 @@\n a\r\n-b\r\n+B\r\n c\r\n",
}
TREES = {"lf": b"a\nb\nc\n", "crlf": b"a\r\nb\r\nc\r\n"}


def _gnu(tree: Path, patch: Path) -> int:
    p = subprocess.run(
        [gnu_patch_bin(), "-p1", "-f", "--fuzz", "0", "--no-backup-if-mismatch", "-r", "-", "-i", str(patch)],
        cwd=tree,
        capture_output=True,
        env={**os.environ, "LC_ALL": "C"},
    )
    return p.returncode


@pytest.mark.parametrize("tree", sorted(TREES))
@pytest.mark.parametrize("case", sorted(CASES))
def test_crlf_patch_as_gnu_patch(tmp_path: Path, case: str, tree: str) -> None:
    s, t = tmp_path / "s", tmp_path / "t"
    s.mkdir()
    t.mkdir()
    (s / "1.patch").write_bytes(CASES[case])
    (s / "series").write_text("1.patch\n")
    (t / "f").write_bytes(TREES[tree])
    g = shutil.copytree(t, tmp_path / "g")
    gnu_rc = _gnu(g, s / "1.patch")
    r = run_cli("series", "apply", str(s), "--to", str(t))
    assert r.exit_code == gnu_rc, (r.output, gnu_rc)
    assert snapshot(t) == snapshot(g)
    stripped = case != "prose-crlf-body-crlf"
    assert ("CRLF line endings in the patch headers" in r.stderr) == stripped, r.stderr
    if gnu_rc == 0:
        assert (t / "f").read_bytes() == TREES[tree].replace(b"b", b"B")


def test_crlf_section_among_lf_sections(tmp_path: Path) -> None:
    """Only the sections whose headers end in CR are stripped: an LF section's CRs are content."""
    patch = LF_PATCH.replace(b"\n", b"\r\n") + b"--- a/g\n+++ b/g\n@@ -1 +1 @@\n-x\r\n+y\r\n"
    s, t = tmp_path / "s", tmp_path / "t"
    s.mkdir()
    t.mkdir()
    (s / "1.patch").write_bytes(patch)
    (s / "series").write_text("1.patch\n")
    (t / "f").write_bytes(b"a\nb\nc\n")
    (t / "g").write_bytes(b"x\r\n")
    g = shutil.copytree(t, tmp_path / "g")
    assert _gnu(g, s / "1.patch") == 0
    r = run_cli("series", "apply", str(s), "--to", str(t))
    assert r.exit_code == 0, r.output
    assert snapshot(t) == snapshot(g) == {"f": b"a\nB\nc\n", "g": b"y\r\n"}

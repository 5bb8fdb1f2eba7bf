"""A rerun after ``series apply --fuzz N`` (issue 28): the patch applied with fuzz keeps the
tree's context, not its own, so a rerun without ``--fuzz`` stopped at it ("FAILED ... hint:
--fuzz N accepts it"). A rerun recognises a patch applied with fuzz up to 2 (GNU patch's
default maximum; ``RECOGNISE_FUZZ``): it changes nothing and exits 0, as the docs promise."""

from __future__ import annotations

import os
import shutil
import subprocess
from pathlib import Path

import pytest

from dryboot.patching.state import RECOGNISE_FUZZ

from .helpers import run_cli, snapshot

PATCH = b"--- a/f\n+++ b/f\n@@ -1,7 +1,7 @@\n l1\n l2\n l3\n-l4\n+L4\n l5\n l6\n l7\n"
#: the tree's context differs in its first line (fuzz 1 trims it) or first two (fuzz 2)
TREES = {1: b"X1\nl2\nl3\nl4\nl5\nl6\nl7\n", 2: b"X1\nX2\nl3\nl4\nl5\nl6\nl7\nl8\n"}


def _stack(tmp: Path, fuzz: int) -> tuple[Path, Path]:
    s, t = tmp / "s", tmp / "t"
    s.mkdir()
    t.mkdir()
    (s / "1.patch").write_bytes(PATCH)
    (s / "series").write_text("1.patch\n")
    (t / "f").write_bytes(TREES[fuzz])
    return s, t


@pytest.mark.parametrize("fuzz", [1, 2])
def test_rerun_without_fuzz_changes_nothing_and_exits_0(tmp_path: Path, fuzz: int) -> None:
    assert fuzz <= RECOGNISE_FUZZ
    s, t = _stack(tmp_path, fuzz)
    g = shutil.copytree(t, tmp_path / "g")
    gp = subprocess.run(
        ["patch", "-p1", "-f", "--fuzz", str(fuzz), "-i", str(s / "1.patch")],
        cwd=g,
        capture_output=True,
        text=True,
        env={**os.environ, "LC_ALL": "C"},
    )
    assert gp.returncode == 0 and f"with fuzz {fuzz}" in gp.stdout
    first = run_cli("series", "apply", str(s), "--to", str(t), "--fuzz", str(fuzz))
    assert first.exit_code == 0, first.output
    assert (t / "f").read_bytes() == (g / "f").read_bytes()
    before = snapshot(t)
    for args in ((), ("--fuzz", str(fuzz))):
        again = run_cli("series", "apply", str(s), "--to", str(t), *args)
        assert again.exit_code == 0, again.output
        assert "== 1.patch (already applied)" in again.stdout
        assert snapshot(t) == before
    st = run_cli("series", "status", str(s), "--on", str(t))
    assert st.exit_code == 0 and st.stdout.startswith("1.patch: applied"), st.output
    assert f"applied with fuzz {fuzz}" in st.stdout


def test_not_applied_tree_still_fails_without_fuzz(tmp_path: Path) -> None:
    """Recognising never applies: the same tree before the fuzzed apply still needs --fuzz."""
    s, t = _stack(tmp_path, 1)
    r = run_cli("series", "apply", str(s), "--to", str(t))
    assert r.exit_code == 1 and "== 1.patch: FAILED" in r.stdout
    assert (t / "f").read_bytes() == TREES[1]

"""series check against a real git repository and tag, with GNU patch and git apply."""

from __future__ import annotations

import os
import subprocess
from pathlib import Path

from .helpers import run_cli, snapshot


def _env(home: Path) -> dict[str, str]:
    env = dict(os.environ)  # conftest left only its GIT_CONFIG_GLOBAL and GIT_CONFIG_NOSYSTEM pins
    env.update(
        GIT_AUTHOR_NAME="t", GIT_AUTHOR_EMAIL="t@t", GIT_COMMITTER_NAME="t", GIT_COMMITTER_EMAIL="t@t", HOME=str(home)
    )
    return env


def _upstream(tmp: Path) -> Path:
    repo = tmp / "upstream"
    (repo / "vllm").mkdir(parents=True)
    (repo / "vllm" / "a.py").write_bytes(b"".join(b"a%d\n" % i for i in range(1, 31)))
    (repo / "vllm" / "b.py").write_bytes(b"".join(b"b%d\n" % i for i in range(1, 31)))
    (repo / "README").write_bytes(b"upstream\n")
    env = _env(tmp)
    for args in (["init", "-q"], ["add", "-A"], ["commit", "-qm", "v1"], ["tag", "v1"]):
        subprocess.run(["git", *args], cwd=repo, env=env, check=True)
    # the user's checkout has local, uncommitted work that must survive
    (repo / "vllm" / "a.py").write_bytes(b"local edit\n")
    return repo


def _stack(tmp: Path, extra: bytes = b"") -> Path:
    s = tmp / "stack"
    s.mkdir()
    (s / "0001-a.patch").write_bytes(
        b"Fix a.\n\ndiff --git a/a.py b/a.py\n--- a/a.py\n+++ b/a.py\n@@ -10,3 +10,3 @@\n a10\n-a11\n+A11\n a12\n"
    )
    (s / "0002-b.patch").write_bytes(b"--- a/b.py\n+++ b/b.py\n@@ -2,4 +2,5 @@\n b2\n b3\n+new\n b4\n b5\n")
    names = b"0001-a.patch\n0002-b.patch\n"
    if extra:
        (s / "0003-merged.patch").write_bytes(extra)
        names += b"0003-merged.patch\n"
    (s / "series").write_bytes(names)
    return s


def test_check_ok_and_checkout_untouched(tmp_path: Path) -> None:
    repo = _upstream(tmp_path)
    s = _stack(tmp_path)
    before = snapshot(repo / "vllm")
    r = run_cli(
        "series", "check", str(s), "--upstream", str(repo), "--ref", "v1", "--prefix", "vllm", "--git-apply", "all"
    )
    assert r.exit_code == 0, r.output
    assert r.stdout.splitlines()[-1] == "patch integrity: OK"
    assert "pass 2: 0001-a.patch: git apply ok" in r.stdout
    assert snapshot(repo / "vllm") == before
    wl = subprocess.run(
        ["git", "worktree", "list"], cwd=repo, capture_output=True, text=True, env=_env(tmp_path)
    ).stdout
    assert len(wl.strip().splitlines()) == 1


def test_check_reports_each_failure_by_name(tmp_path: Path) -> None:
    repo = _upstream(tmp_path)
    merged = b"--- a/b.py\n+++ b/b.py\n@@ -19,3 +19,3 @@\n b19\n-b20\n+b20\n b21\n"
    s = _stack(tmp_path, merged.replace(b"-b20\n+b20", b"-b99\n+b20"))
    r = run_cli("series", "check", str(s), "--upstream", str(repo), "--ref", "v1", "--prefix", "vllm")
    assert r.exit_code == 1
    assert r.stdout.splitlines()[-1] == "patch integrity: FAILED: 0003-merged.patch"


def test_check_wrong_prefix_is_not_a_pass(tmp_path: Path) -> None:
    repo = _upstream(tmp_path)
    s = _stack(tmp_path)
    # no --prefix: the patches' paths (a.py, b.py) do not exist at the repository root
    r = run_cli("series", "check", str(s), "--upstream", str(repo), "--ref", "v1", "--git-apply", "0001-a.patch")
    assert r.exit_code == 1
    assert "0001-a.patch" in r.stdout.splitlines()[-1]


def test_check_bad_ref_is_bad_input(tmp_path: Path) -> None:
    repo = _upstream(tmp_path)
    s = _stack(tmp_path)
    r = run_cli("series", "check", str(s), "--upstream", str(repo), "--ref", "v9")
    assert r.exit_code == 2 and "v9: no such tag or commit" in r.stderr


def test_census_disagreement_reads_as_words() -> None:
    from dryboot.patching.check import census_text

    assert census_text([]) == "every hunk exact"
    assert census_text([(1, "FAILED", 0), (3, "offset", 4)]) == "hunk #1 FAILED, hunk #3 at offset +4"

"""series list/apply/status, swap, hunks fix, and git file operations -- compared with GNU patch
and git where they decide."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
from pathlib import Path

from .helpers import gnu_patch_bin, run_cli, snapshot


def mk(root: Path, files: dict[str, bytes]) -> Path:
    for rel, data in files.items():
        p = root / rel
        p.parent.mkdir(parents=True, exist_ok=True)
        p.write_bytes(data)
    return root


def numbered(n: int, tag: str = "l") -> bytes:
    return b"".join(f"{tag}{i}\n".encode() for i in range(1, n + 1))


def diff(old: Path, new: Path, cwd: Path) -> bytes:
    return subprocess.run(["diff", "-ruN", old.name, new.name], cwd=cwd, capture_output=True).stdout


def test_series_apply_offsets_census_matches_gnu(tmp_path: Path) -> None:
    a = mk(tmp_path / "a", {"m.py": numbered(40), "n.py": numbered(30, "n")})
    b = mk(
        tmp_path / "b",
        {"m.py": numbered(40).replace(b"l5\n", b"L5\n").replace(b"l30\n", b"L30\n"), "n.py": numbered(30, "n")},
    )
    c = mk(
        tmp_path / "c",
        {"m.py": (tmp_path / "b/m.py").read_bytes(), "n.py": numbered(30, "n").replace(b"n9\n", b"N9\n")},
    )
    s = tmp_path / "stack"
    s.mkdir()
    (s / "0001-m.patch").write_bytes(diff(a, b, tmp_path))
    (s / "0002-n.patch").write_bytes(diff(b, c, tmp_path))
    (s / "series").write_bytes(b"0001-m.patch\n0002-n.patch\n")
    # target: the pristine tree with unrelated lines inserted at the top of m.py
    t = tmp_path / "t"
    shutil.copytree(a, t)
    (t / "m.py").write_bytes(b"# header\n# header\n" + numbered(40))
    g = tmp_path / "g"
    shutil.copytree(t, g)
    gnu_out = []
    for name in ("0001-m.patch", "0002-n.patch"):
        p = subprocess.run(
            [gnu_patch_bin(), "-f", "--no-backup-if-mismatch", "--fuzz", "0", "-p1", "-d", str(g), "-i", str(s / name)],
            capture_output=True,
            text=True,
        )
        assert p.returncode == 0
        gnu_out.append(p.stdout)
    assert gnu_out[0].count("(offset 2 lines)") == 2
    r = run_cli("series", "apply", str(s), "--to", str(t))
    assert r.exit_code == 0, r.output
    assert r.stdout.splitlines()[0] == "== 0001-m.patch (2 hunks at an offset)"
    assert "== 0002-n.patch" in r.stdout.splitlines()
    assert r.stdout.splitlines()[-1] == ("2 patches applied with exact context, 1 of them at an offset, 0 with fuzz")
    assert snapshot(t) == snapshot(g)
    # status on the patched tree: everything applied; on the pristine one: applicable
    st = run_cli("series", "status", str(s), "--on", str(t), "--json")
    assert [p["state"] for p in json.loads(st.stdout)] == ["applied", "applied"]
    st = run_cli("series", "status", str(s), "--on", str(a))
    assert st.exit_code == 0
    assert st.stdout.splitlines()[0] == "0001-m.patch: applicable"


def test_series_apply_stops_and_keeps_nothing(tmp_path: Path) -> None:
    t = mk(tmp_path / "t", {"x.py": numbered(10), "y.py": numbered(10, "y")})
    s = mk(
        tmp_path / "s",
        {
            "0001-x.patch": b"--- a/x.py\n+++ b/x.py\n@@ -1,3 +1,3 @@\n l1\n-l2\n+L2\n l3\n",
            "0002-y.patch": b"--- a/y.py\n+++ b/y.py\n@@ -4,3 +4,3 @@\n y4\n-nope\n+Y5\n y6\n",
            "series": b"0001-x.patch\n0002-y.patch\n",
        },
    )
    before = snapshot(t)
    r = run_cli("series", "apply", str(s), "--to", str(t))
    assert r.exit_code == 1
    assert "== 0002-y.patch: FAILED" in r.stdout
    assert "removed line 2 of the hunk ('nope') does not match line 5 ('y5')" in r.stdout
    assert snapshot(t) == before
    st = run_cli("series", "status", str(s), "--on", str(t))
    assert st.exit_code == 1 and "0002-y.patch: conflict" in st.stdout


def test_fuzz_measured_refused_then_accepted_like_gnu(tmp_path: Path) -> None:
    base = numbered(20)
    t = mk(tmp_path / "t", {"f": base.replace(b"l3\n", b"CHANGED\n")})
    s = mk(
        tmp_path / "s",
        {
            "0001.patch": b"--- a/f\n+++ b/f\n@@ -3,7 +3,7 @@\n l3\n l4\n l5\n-l6\n+L6\n l7\n l8\n l9\n",
            "series": b"0001.patch\n",
        },
    )
    r = run_cli("series", "apply", str(s), "--to", str(t))
    assert r.exit_code == 1 and "would need fuzz 1: refused" in r.stdout
    g = tmp_path / "g"
    shutil.copytree(t, g)
    p = subprocess.run(
        ["patch", "-f", "--no-backup-if-mismatch", "-p1", "--fuzz", "2", "-d", str(g), "-i", str(s / "0001.patch")],
        capture_output=True,
        text=True,
    )
    assert "with fuzz 1" in p.stdout
    r = run_cli("series", "apply", str(s), "--to", str(t), "--fuzz", "2")
    assert r.exit_code == 0, r.output
    assert r.stdout.splitlines()[-1].endswith("0 of them at an offset, 1 with fuzz")
    assert snapshot(t) == snapshot(g)


def test_tie_reported_and_gnu_choice_followed(tmp_path: Path) -> None:
    body = b"x\ny\nz\n"
    data = b"".join([b"pad\n" * 3, body, b"pad\n" * 5, body, b"pad\n" * 3])
    t = mk(tmp_path / "t", {"f": data})
    # expected at line 8: copies at lines 4 and 12, 4 lines from each; GNU takes the later
    s = mk(
        tmp_path / "s",
        {"0001.patch": b"--- a/f\n+++ b/f\n@@ -8,3 +8,3 @@\n x\n-y\n+Y\n z\n", "series": b"0001.patch\n"},
    )
    g = tmp_path / "g"
    shutil.copytree(t, g)
    subprocess.run(
        ["patch", "-f", "--no-backup-if-mismatch", "-p1", "-d", str(g), "-i", str(s / "0001.patch")],
        check=True,
        capture_output=True,
    )
    r = run_cli("series", "apply", str(s), "--to", str(t))
    assert r.exit_code == 0
    assert "tie: the old side also matches at line 4, equally near" in r.stdout
    assert snapshot(t) == snapshot(g)


def test_git_create_delete_rename_mode(tmp_path: Path) -> None:
    repo = tmp_path / "repo"
    mk(repo, {"keep.py": numbered(10), "old.py": numbered(12, "o"), "gone.py": b"bye\n", "run.sh": b"#!/bin/sh\n"})
    env = dict(os.environ)  # conftest left only its GIT_CONFIG_GLOBAL and GIT_CONFIG_NOSYSTEM pins
    env.update(
        GIT_AUTHOR_NAME="t",
        GIT_AUTHOR_EMAIL="t@t",
        GIT_COMMITTER_NAME="t",
        GIT_COMMITTER_EMAIL="t@t",
        HOME=str(tmp_path),
    )

    def git(*a: str) -> str:
        return subprocess.run(["git", *a], cwd=repo, env=env, check=True, capture_output=True, text=True).stdout

    git("init", "-q")
    git("add", "-A")
    git("commit", "-qm", "base")
    pristine = tmp_path / "pristine"
    shutil.copytree(repo, pristine, ignore=shutil.ignore_patterns(".git"))
    git("mv", "old.py", "new.py")
    (repo / "new.py").write_bytes(numbered(12, "o").replace(b"o6\n", b"O6\n"))
    git("rm", "-q", "gone.py")
    (repo / "born.py").write_bytes(b"hello\n")
    os.chmod(repo / "run.sh", 0o755)
    git("add", "-A")
    patch = git("diff", "--cached", "-M", "--binary")
    assert "rename from old.py" in patch and "new mode 100755" in patch
    s = mk(tmp_path / "s", {"0001.patch": patch.encode(), "series": b"0001.patch\n"})
    r = run_cli("series", "apply", str(s), "--to", str(pristine))
    assert r.exit_code == 0, r.output
    want = {k: v for k, v in snapshot(repo).items() if not k.startswith(".git")}
    assert snapshot(pristine) == want
    assert (pristine / "run.sh").stat().st_mode & 0o111
    # applied now; reverse through swap-less status
    st = run_cli("series", "status", str(s), "--on", str(pristine))
    assert st.stdout.splitlines()[0] == "0001.patch: applied"


def test_swap(tmp_path: Path) -> None:
    t = mk(tmp_path / "t", {"f": numbered(10).replace(b"l4\n", b"OLD\n")})
    old = mk(tmp_path, {"old.patch": b"--- a/f\n+++ b/f\n@@ -3,3 +3,3 @@\n l3\n-l4\n+OLD\n l5\n"})
    new = mk(tmp_path, {"new.patch": b"--- a/f\n+++ b/f\n@@ -3,3 +3,3 @@\n l3\n-l4\n+NEW\n l5\n"})
    del old, new
    r = run_cli("swap", str(tmp_path / "old.patch"), str(tmp_path / "new.patch"), "--in", str(t))
    assert r.exit_code == 0, r.output
    assert (t / "f").read_bytes() == numbered(10).replace(b"l4\n", b"NEW\n")
    # swapping again (issue 20, item 8): NEW is applied and OLD is not: nothing to do, exit 0
    # (as a second `series apply`), nothing written
    before = snapshot(t)
    r = run_cli("swap", str(tmp_path / "old.patch"), str(tmp_path / "new.patch"), "--in", str(t))
    assert r.exit_code == 0 and snapshot(t) == before, r.output
    assert r.stdout.strip().endswith(
        "already applied and " + str(tmp_path / "old.patch") + " not: nothing to do in " + str(t)
    )
    # neither applied: still a failure, nothing written
    (t / "f").write_bytes(numbered(10))
    before = snapshot(t)
    r = run_cli("swap", str(tmp_path / "old.patch"), str(tmp_path / "new.patch"), "--in", str(t))
    assert r.exit_code == 1 and snapshot(t) == before


def test_hunks_fix_doc_example_cli(tmp_path: Path) -> None:
    ctx = [b" c%d" % i for i in range(3)]
    added = [b"+a%d" % i for i in range(137)]
    comments = [b"+# note %d" % i for i in range(5)]
    h1 = ctx + added[:60] + comments + added[60:] + [b" d%d" % i for i in range(3)]
    h2 = [b" q"] * 3 + [b"+n"] * 6 + [b" r"] * 3
    text = (
        b"Prose: --- not a header\n@@ not a hunk\n\n--- a/x.py\t2024-01-01\n+++ b/x.py\n"
        b"@@ -1033,6 +1033,143 @@ def f():\n" + b"\n".join(h1) + b"\n@@ -1060,6 +1197,12 @@\n" + b"\n".join(h2) + b"\n"
    )
    p = tmp_path / "doc.patch"
    p.write_bytes(text)
    r = run_cli("hunks", "check", str(p))
    assert r.exit_code == 1
    assert "hunk 1 of b/x.py declares 143 new lines, body has 148" in r.stdout
    r = run_cli("hunks", "fix", str(p))
    assert r.exit_code == 0, r.output
    assert r.stdout.splitlines() == [
        f"{p}:6: @@ -1033,6 +1033,143 @@ def f(): -> @@ -1033,6 +1033,148 @@ def f():",
        f"{p}:155: @@ -1060,6 +1197,12 @@ -> @@ -1060,6 +1202,12 @@",
    ]
    fixed = p.read_bytes()
    assert fixed == text.replace(b"+1033,143", b"+1033,148").replace(b"+1197,12", b"+1202,12")
    r = run_cli("hunks", "fix", str(p))
    assert r.exit_code == 0 and r.stdout == "" and p.read_bytes() == fixed
    assert run_cli("hunks", "check", str(p)).exit_code == 0

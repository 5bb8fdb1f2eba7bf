"""Issue 9's failure kinds: the state of an applied tree, an idempotent apply, no silent double
application. Every expected tree comes from running GNU patch 2.7.6 (or git) live; the
double-application hazards are shown on GNU patch itself, then refused by dryboot."""

from __future__ import annotations

import json
import os
import shutil
import signal
import stat
import subprocess
import sys
from pathlib import Path

import pytest

from .helpers import gnu_patch_bin, run_cli, snapshot

ENV = {**os.environ, "LC_ALL": "C"}


def mk(root: Path, files: dict[str, bytes]) -> Path:
    for rel, data in files.items():
        p = root / rel
        p.parent.mkdir(parents=True, exist_ok=True)
        p.write_bytes(data)
    return root


def udiff(a: bytes, b: bytes, name: str, tmp: Path) -> bytes:
    """``diff -u a/NAME b/NAME`` of two contents."""
    d = tmp / "_diff"
    if d.exists():
        shutil.rmtree(d)
    mk(d, {f"a/{name}": a, f"b/{name}": b})
    return subprocess.run(["diff", "-u", f"a/{name}", f"b/{name}"], cwd=d, capture_output=True).stdout


def gnu(target: Path, patch: Path, *opts: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [gnu_patch_bin(), "-f", "--no-backup-if-mismatch", "-p1", *opts, "-d", str(target), "-i", str(patch)],
        capture_output=True,
        text=True,
        env=ENV,
    )


def states(stack: Path, target: Path, *opts: str) -> list[str]:
    r = run_cli("series", "status", str(stack), "--on", str(target), "--json", *opts)
    return [p["state"] for p in json.loads(r.stdout)]


def lines(*xs: str) -> bytes:
    return "".join(x + "\n" for x in xs).encode()


# -- 1. a later patch edits an earlier patch's lines ------------------------------------------


def _kind1(tmp: Path) -> tuple[Path, Path]:
    v0 = lines(*[f"k{i} = {i}" for i in range(1, 13)])
    v1 = v0.replace(b"k5 = 5\n", b"k5 = 50\n")
    v2 = v1.replace(b"k6 = 6\n", b"k6 = 60\n")
    stack = mk(
        tmp / "stack",
        {
            "0001-k5.patch": udiff(v0, v1, "conf.py", tmp),
            "0002-k6.patch": udiff(v1, v2, "conf.py", tmp),
            "series": b"0001-k5.patch\n0002-k6.patch\n",
        },
    )
    assert b" k5 = 50\n" in (stack / "0002-k6.patch").read_bytes()  # 0001's line is 0002's context
    return mk(tmp / "t", {"conf.py": v0}), stack


def test_1_later_patch_edits_earlier_lines(tmp_path: Path) -> None:
    t, stack = _kind1(tmp_path)
    g = shutil.copytree(t, tmp_path / "g")
    assert states(stack, t) == ["applicable", "applicable"]
    for name in ("0001-k5.patch", "0002-k6.patch"):
        assert gnu(g, stack / name).returncode == 0
    r = run_cli("series", "apply", str(stack), "--to", str(t))
    assert r.exit_code == 0, r.output
    assert snapshot(t) == snapshot(g)
    # GNU patch: 0001 alone cannot be reversed on the full tree (its context k6 = 6 is gone),
    # which is why per-patch status called it a conflict
    assert gnu(shutil.copytree(g, tmp_path / "g2"), stack / "0001-k5.patch", "-R", "--dry-run").returncode == 1
    st = run_cli("series", "status", str(stack), "--on", str(t))
    assert st.exit_code == 0, st.output
    assert st.stdout.splitlines()[0] == "0001-k5.patch: applied"
    assert st.stdout.splitlines()[-1] == "series status: all 2 patches applied"
    before = snapshot(t)
    r = run_cli("series", "apply", str(stack), "--to", str(t))
    assert r.exit_code == 0, r.output
    assert r.stdout.splitlines()[:2] == ["== 0001-k5.patch (already applied)", "== 0002-k6.patch (already applied)"]
    assert snapshot(t) == before


def test_1_every_prefix(tmp_path: Path) -> None:
    t, stack = _kind1(tmp_path)
    assert gnu(t, stack / "0001-k5.patch").returncode == 0
    assert states(stack, t) == ["applied", "applicable"]
    g = shutil.copytree(t, tmp_path / "g")
    assert gnu(g, stack / "0002-k6.patch").returncode == 0
    r = run_cli("series", "apply", str(stack), "--to", str(t))
    assert r.exit_code == 0, r.output
    assert r.stdout.splitlines()[0] == "== 0001-k5.patch (already applied)"
    assert snapshot(t) == snapshot(g)


def test_1_hand_edited_tree_writes_nothing_and_names_the_hunk(tmp_path: Path) -> None:
    t, stack = _kind1(tmp_path)
    assert run_cli("series", "apply", str(stack), "--to", str(t)).exit_code == 0
    (t / "conf.py").write_bytes((t / "conf.py").read_bytes().replace(b"k6 = 60\n", b"k6 = 61\n"))
    before = snapshot(t)
    g = shutil.copytree(t, tmp_path / "g")
    assert gnu(g, stack / "0002-k6.patch", "-R", "--dry-run").returncode == 1  # GNU cannot undo it either
    r = run_cli("series", "apply", str(stack), "--to", str(t))
    assert r.exit_code == 1
    assert "== 0001-k5.patch: FAILED" in r.stdout
    assert "   conf.py: hunk 1: FAILED" in r.stdout
    assert r.stdout.splitlines()[-1] == f"series apply: stopped at 0001-k5.patch; nothing was written to {t}"
    assert snapshot(t) == before
    st = run_cli("series", "status", str(stack), "--on", str(t))
    assert st.exit_code == 1 and st.stdout.splitlines()[0] == "0001-k5.patch: conflict"


# -- 2. the old side also occurs elsewhere -----------------------------------------------------


def _kind2_file() -> bytes:
    block = ["A", "B", "C", "D"]
    after = ["q", "r", "s"]
    xs = [f"h{i}" for i in range(1, 10)] + block + after  # block at 10..13
    xs += [f"f{i}" for i in range(len(xs) + 1, 40)] + block + after  # block at 40..43
    xs += [f"t{i}" for i in range(len(xs) + 1, 61)]
    assert xs[9] == xs[39] == "A"
    return lines(*xs)


def test_2_old_side_elsewhere_is_not_removed_twice(tmp_path: Path) -> None:
    v0 = _kind2_file()
    xs = v0.split(b"\n")
    v1 = b"\n".join(xs[:42] + xs[43:])  # remove line 43 (the second block's D)
    patch = udiff(v0, v1, "f.txt", tmp_path)
    stack = mk(tmp_path / "s", {"0001-drop-d.patch": patch, "series": b"0001-drop-d.patch\n"})
    t = mk(tmp_path / "t", {"f.txt": v0})
    g = shutil.copytree(t, tmp_path / "g")
    assert gnu(g, stack / "0001-drop-d.patch").returncode == 0
    # GNU patch run again removes the first block's D too (offset -30): the corruption to avoid
    g2 = shutil.copytree(g, tmp_path / "g2")
    again = gnu(g2, stack / "0001-drop-d.patch")
    assert again.returncode == 0 and "(offset -30 lines)" in again.stdout
    assert (g2 / "f.txt").read_bytes().count(b"D\n") == 0
    r = run_cli("series", "apply", str(stack), "--to", str(t))
    assert r.exit_code == 0 and snapshot(t) == snapshot(g)
    r = run_cli("series", "apply", str(stack), "--to", str(t))
    assert r.exit_code == 0, r.output
    assert r.stdout.splitlines()[0] == "== 0001-drop-d.patch (already applied)"
    assert snapshot(t) == snapshot(g)
    st = run_cli("series", "status", str(stack), "--on", str(t))
    assert st.exit_code == 0
    out = st.stdout.splitlines()
    assert out[0] == "0001-drop-d.patch: applied"
    assert "applied (new side present, exact); the old side also fits at line 10 (offset -30)" in out[1]
    assert out[2].startswith("   note: both directions fit: f.txt hunk 1's new side at line ")


def test_2_displaced_old_side_never_applied_over_present_new_side(tmp_path: Path) -> None:
    """A two-hunk patch whose first hunk is already in (new side at its header, old side only
    30 lines away) and whose second is not: GNU patch applies both, removing the other D; dryboot
    reads the patch partial and writes nothing."""
    v0 = _kind2_file()
    xs = v0.split(b"\n")
    v1 = b"\n".join(xs[:42] + xs[43:58] + [b"T59"] + xs[59:])
    patch = udiff(v0, v1, "f.txt", tmp_path)
    assert patch.count(b"\n@@ ") == 2
    half = b"\n".join(xs[:42] + xs[43:])  # only the first hunk applied
    stack = mk(tmp_path / "s", {"0001.patch": patch, "series": b"0001.patch\n"})
    t = mk(tmp_path / "t", {"f.txt": half})
    g = shutil.copytree(t, tmp_path / "g")
    p = gnu(g, stack / "0001.patch")
    assert p.returncode == 0 and "Hunk #1 succeeded at 10 (offset -30 lines)" in p.stdout
    before = snapshot(t)
    r = run_cli("series", "apply", str(stack), "--to", str(t))
    assert r.exit_code == 1
    assert "== 0001.patch: partially applied" in r.stdout
    assert "not applied twice: f.txt hunk 1: the new side is already at the header's line" in r.stdout
    assert snapshot(t) == before
    assert states(stack, t) == ["partial"]


# -- 3. applied with fuzz -----------------------------------------------------------------------


def test_3_applied_with_fuzz(tmp_path: Path) -> None:
    base = lines(*[f"l{i}" for i in range(1, 21)])
    drifted = base.replace(b"l3\n", b"CHANGED\n")
    old = lines(" l3", " l4", " l5", "-l6", "+L6", " l7", " l8", " l9")
    new = lines(" l3", " l4", " l5", "-l6", "+N6", " l7", " l8", " l9")
    stack = mk(tmp_path / "s", {"0001.patch": b"--- a/f\n+++ b/f\n@@ -3,7 +3,7 @@\n" + old, "series": b"0001.patch\n"})
    (tmp_path / "new.patch").write_bytes(b"--- a/f\n+++ b/f\n@@ -3,7 +3,7 @@\n" + new)
    t = mk(tmp_path / "t", {"f": drifted})
    r = run_cli("series", "apply", str(stack), "--to", str(t))
    assert r.exit_code == 1
    assert "would need fuzz 1: refused" in r.stdout
    assert "hint: --fuzz 1 accepts it; better, refresh the patch" in r.stdout
    g = shutil.copytree(t, tmp_path / "g")
    assert "with fuzz 1" in gnu(g, stack / "0001.patch", "--fuzz", "1").stdout
    assert run_cli("series", "apply", str(stack), "--to", str(t), "--fuzz", "1").exit_code == 0
    assert snapshot(t) == snapshot(g)
    assert states(stack, t, "--fuzz", "1") == ["applied"]
    r = run_cli("series", "apply", str(stack), "--to", str(t), "--fuzz", "1")
    assert r.exit_code == 0 and r.stdout.splitlines()[0] == "== 0001.patch (already applied)"
    assert snapshot(t) == snapshot(g)
    # swap at the fuzz it was applied with == GNU patch -R --fuzz 1 then --fuzz 1
    assert gnu(g, stack / "0001.patch", "-R", "--fuzz", "1").returncode == 0
    assert gnu(g, tmp_path / "new.patch", "--fuzz", "1").returncode == 0
    assert run_cli("swap", str(stack / "0001.patch"), str(tmp_path / "new.patch"), "--in", str(t)).exit_code == 1
    r = run_cli("swap", str(stack / "0001.patch"), str(tmp_path / "new.patch"), "--in", str(t), "--fuzz", "1")
    assert r.exit_code == 0, r.output
    assert snapshot(t) == snapshot(g)


# -- 4. mode-only git patches -------------------------------------------------------------------


def test_4_mode_only_patch(tmp_path: Path) -> None:
    patch = b"diff --git a/run.sh b/run.sh\nold mode 100644\nnew mode 100755\n"
    stack = mk(tmp_path / "s", {"0001-exec.patch": patch, "series": b"0001-exec.patch\n"})
    t = mk(tmp_path / "t", {"run.sh": b"#!/bin/sh\n"})
    os.chmod(t / "run.sh", 0o664)
    g = shutil.copytree(t, tmp_path / "g")
    assert gnu(g, stack / "0001-exec.patch").returncode == 0
    repo = shutil.copytree(t, tmp_path / "repo")
    subprocess.run(["git", "init", "-q"], cwd=repo, check=True)
    subprocess.run(["git", "apply", str(stack / "0001-exec.patch")], cwd=repo, check=True)
    assert stat.S_IMODE((g / "run.sh").stat().st_mode) == stat.S_IMODE((repo / "run.sh").stat().st_mode) == 0o755
    assert states(stack, t) == ["applicable"]
    r = run_cli("series", "apply", str(stack), "--to", str(t))
    assert r.exit_code == 0, r.output
    assert stat.S_IMODE((t / "run.sh").stat().st_mode) == 0o755
    assert states(stack, t) == ["applied"]
    r = run_cli("series", "apply", str(stack), "--to", str(t))
    assert r.exit_code == 0 and r.stdout.splitlines()[0] == "== 0001-exec.patch (already applied)"
    assert stat.S_IMODE((t / "run.sh").stat().st_mode) == 0o755


# -- 5. interrupted applies are visible -----------------------------------------------------------

SLOW_APPLY = """
import os, sys, time
from dryboot.patching import transaction
real = os.replace
done = []
def slow(a, b):
    real(a, b)
    if b.endswith("f2") and not done:
        done.append(1)
        print("mid", flush=True)
        for _ in range(600):  # short sleeps: the handler runs within 0.1 s whichever thread got the signal
            time.sleep(0.1)
transaction.os.replace = slow
from dryboot.cli import main
main(sys.argv[1:])
"""


def _five(tmp: Path) -> tuple[Path, Path]:
    t = mk(tmp / "t", {f"f{i}": lines(*[f"f{i} {j}" for j in range(5)]) for i in range(5)})
    parts = b"".join(
        b"--- a/f%d\n+++ b/f%d\n@@ -2,3 +2,3 @@\n f%d 1\n-f%d 2\n+F%d 2\n f%d 3\n" % ((i,) * 6) for i in range(5)
    )
    stack = mk(tmp / "s", {"0001.patch": parts, "series": b"0001.patch\n"})
    return t, stack


def _start(t: Path, stack: Path) -> subprocess.Popen[bytes]:
    p = subprocess.Popen(
        [sys.executable, "-c", SLOW_APPLY, "series", "apply", str(stack), "--to", str(t)],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
    )
    assert p.stdout is not None
    assert p.stdout.readline().strip() == b"mid"
    return p


def test_5_killed_apply_is_pending_then_rolled_back(tmp_path: Path) -> None:
    t, stack = _five(tmp_path)
    before = snapshot(t)
    p = _start(t, stack)
    p.send_signal(signal.SIGKILL)
    p.wait()
    assert (t / "f0").read_bytes() != before["f0"]  # half-written
    st = run_cli("series", "status", str(stack), "--on", str(t))
    first = st.stdout.splitlines()[0]
    assert first.startswith(f"interrupted transaction pending in {t} (5 files): the next `series apply` or `swap`")
    assert "first rolls it back" in first
    assert st.stdout.splitlines()[1] == "0001.patch: applicable"  # judged on the rolled-back view
    r = run_cli("series", "apply", str(stack), "--to", str(t))
    assert r.exit_code == 0, r.output
    assert r.stdout.splitlines()[0] == (
        f"rolled back an interrupted transaction in {t} (5 files restored to what they were before it)"
    )
    g = mk(tmp_path / "g", {k: v for k, v in before.items()})
    assert gnu(g, stack / "0001.patch").returncode == 0
    assert snapshot(t) == snapshot(g)


@pytest.mark.parametrize(("sig", "code"), [(signal.SIGTERM, 143), (signal.SIGINT, 130)])
def test_5_signals_roll_back_with_exit_code(tmp_path: Path, sig: signal.Signals, code: int) -> None:
    t, stack = _five(tmp_path)
    before = snapshot(t)
    p = _start(t, stack)
    p.send_signal(sig)
    _, err = p.communicate(timeout=30)
    assert p.returncode == code, err
    assert b"interrupted" in err
    assert snapshot(t) == before


# -- also fixed ---------------------------------------------------------------------------------


def _git(repo: Path, *a: str) -> str:
    env = dict(os.environ)  # conftest left only its GIT_CONFIG_GLOBAL and GIT_CONFIG_NOSYSTEM pins
    env.update(GIT_AUTHOR_NAME="t", GIT_AUTHOR_EMAIL="t@t", GIT_COMMITTER_NAME="t", GIT_COMMITTER_EMAIL="t@t")
    env.update(HOME=str(repo.parent), GIT_CONFIG_NOSYSTEM="1")
    return subprocess.run(["git", *a], cwd=repo, env=env, check=True, capture_output=True).stdout.decode()


def test_hunks_fix_recomputes_later_new_starts_from_old_starts(tmp_path: Path) -> None:
    """Damaged headers of a real ``diff -u`` patch are fixed back to what diff wrote (the
    ground truth), whichever way the hand edit went; a correct later start is never shifted."""
    xs = [f"line {i}" for i in range(1, 901)]
    ys = [*xs[:842], "added a", "added b", *xs[842:854], "changed 855", *xs[855:]]
    good = udiff(lines(*xs), lines(*ys), "big.py", tmp_path)
    headers = [ln for ln in good.split(b"\n") if ln.startswith(b"@@")]
    assert headers == [b"@@ -840,6 +840,8 @@", b"@@ -852,7 +854,7 @@"]
    for bad in (
        good.replace(b"+840,8 @@", b"+840,10 @@"),  # over-declared count (the +852 -> +850 report)
        good.replace(b"+840,8 @@", b"+840,7 @@"),  # under-declared
        good.replace(b"+854,7 @@", b"+851,7 @@"),  # a later start edited by hand
    ):
        p = tmp_path / "x.patch"
        p.write_bytes(bad)
        assert run_cli("hunks", "fix", str(p)).exit_code == 0
        assert p.read_bytes() == good


def test_hunks_fix_unwritable_cli_message(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    from dryboot.cli import main
    from dryboot.patching import recount

    p = tmp_path / "x.patch"
    p.write_bytes(b"--- a/f\n+++ b/f\n@@ -1,2 +1,2 @@\n a\n-b\n+B\n c\n")

    def refuse(*a: object, **kw: object) -> None:  # as root, chmod cannot make a directory unwritable
        raise PermissionError(13, "Permission denied")

    monkeypatch.setattr(recount, "write_atomic", refuse)
    with pytest.raises(SystemExit) as ex:
        main(["hunks", "fix", str(p)])
    assert ex.value.code == 2
    err = capsys.readouterr().err
    assert err == f"dryboot: error: {p}: cannot write the fixed patch (Permission denied); the file is unchanged\n"


def test_crlf_body_then_crlf_signature_applies_like_git_and_gnu(tmp_path: Path) -> None:
    repo = tmp_path / "repo"
    mk(repo, {"f": b"a\r\nb\r\nc\r\n"})
    _git(repo, "init", "-q")
    _git(repo, "add", "f")
    _git(repo, "commit", "-qm", "base")
    (repo / "f").write_bytes(b"a\r\nB\r\nc\r\n")
    _git(repo, "commit", "-qam", "change b")
    mbox = _git(repo, "format-patch", "-1", "--stdout").encode()
    assert b"\n-- \n" in mbox
    mbox = mbox.replace(b"\n-- \n", b"\n-- \r\n")  # a mail saved with CRLF after the diff
    stack = mk(tmp_path / "s", {"0001.patch": mbox, "series": b"0001.patch\n"})
    t = mk(tmp_path / "t", {"f": b"a\r\nb\r\nc\r\n"})
    g = shutil.copytree(t, tmp_path / "g")
    assert gnu(g, stack / "0001.patch").returncode == 0
    _git(repo, "checkout", "-q", "HEAD~1", "--", "f")
    _git(repo, "apply", str(stack / "0001.patch"))
    r = run_cli("series", "apply", str(stack), "--to", str(t))
    assert r.exit_code == 0, r.output
    assert (t / "f").read_bytes() == (g / "f").read_bytes() == (repo / "f").read_bytes() == b"a\r\nB\r\nc\r\n"


def test_reverse_mbox_with_two_commits_on_one_line_like_git_apply(tmp_path: Path) -> None:
    repo = tmp_path / "repo"
    mk(repo, {"f": lines("one", "two", "three")})
    _git(repo, "init", "-q")
    _git(repo, "add", "f")
    _git(repo, "commit", "-qm", "base")
    for old, new in (("two", "TWO"), ("TWO", "2")):
        (repo / "f").write_bytes((repo / "f").read_bytes().replace(old.encode(), new.encode()))
        _git(repo, "commit", "-qam", new)
    mbox = _git(repo, "format-patch", "-2", "--stdout").encode()
    stack = mk(tmp_path / "s", {"two.patch": mbox, "series": b"two.patch -R\n"})
    final = (repo / "f").read_bytes()
    _git(repo, "apply", "-R", str(stack / "two.patch"))
    assert (repo / "f").read_bytes() == lines("one", "two", "three")  # git apply -R: pristine
    g = mk(tmp_path / "g", {"f": final})
    assert gnu(g, stack / "two.patch", "-R").returncode == 1  # GNU patch: not
    t = mk(tmp_path / "t", {"f": final})
    assert states(stack, t) == ["applicable"]
    r = run_cli("series", "apply", str(stack), "--to", str(t))
    assert r.exit_code == 0, r.output
    assert (t / "f").read_bytes() == (repo / "f").read_bytes()
    assert states(stack, t) == ["applied"]


def test_commented_out_series_line_is_disabled(tmp_path: Path) -> None:
    stack = mk(
        tmp_path / "s",
        {
            "0001-a.patch": b"--- a/f\n+++ b/f\n@@ -1,3 +1,3 @@\n a\n-b\n+B\n c\n",
            "0003-x.patch": b"--- a/f\n+++ b/f\n@@ -1,3 +1,3 @@\n a\n-b\n+X\n c\n",
            "series": b"0001-a.patch\n# 0003-x.patch\n",
        },
    )
    t = mk(tmp_path / "t", {"f": lines("a", "b", "c")})
    r = run_cli("series", "list", str(stack))
    assert r.exit_code == 0
    assert r.stdout.splitlines() == ["0001-a.patch", "# 0003-x.patch (disabled: commented out in the series)"]
    st = run_cli("series", "status", str(stack), "--on", str(t))
    assert st.exit_code == 0 and "0003-x.patch: disabled (commented out in the series)" in st.stdout.splitlines()
    assert run_cli("series", "apply", str(stack), "--to", str(t)).exit_code == 0
    assert (t / "f").read_bytes() == lines("a", "B", "c")
    # a file that is neither listed nor commented out is noted, never applied (issue 20: as quilt
    # and dpkg-source, which ignore it)
    (stack / "0004-y.patch").write_bytes((stack / "0003-x.patch").read_bytes())
    r = run_cli("series", "list", str(stack))
    assert r.exit_code == 0 and "patch files not in the series are never applied" in r.stderr
    assert "0004-y.patch" in r.stderr

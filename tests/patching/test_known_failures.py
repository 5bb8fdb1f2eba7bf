"""The 12 "Known failures" of docs/patch-semantics.md, each compared with GNU patch or git where
they have an opinion."""

from __future__ import annotations

import os
import subprocess
from pathlib import Path

import pytest

from dryboot.errors import InputError
from dryboot.patching.apply import Tree, apply_patch, patch_status
from dryboot.patching.parse import parse_patch
from dryboot.patching.place import run_hunks, sides, split_keep
from dryboot.patching.recount import check_patch, fix_patch

from .helpers import gnu_patch, run_cli


def lines(*xs: str) -> bytes:
    return "".join(x + "\n" for x in xs).encode()


def test_1_deleted_plus_line_reported_and_recount_flags_noop(tmp_path: Path) -> None:
    p = b"--- a/f\n+++ b/f\n@@ -3,6 +3,7 @@\n" + lines(" c", " d", " e", " f", " g", " h")
    probs = check_patch(p, "one.patch")
    assert [x.message for x in probs] == ["hunk 1 of b/f declares 7 new lines, body has 6 (the patch file ends)"]
    res = fix_patch(p, "one.patch")
    assert [(c.old, c.new) for c in res.changes] == [(b"@@ -3,6 +3,7 @@", b"@@ -3,6 +3,6 @@")]
    assert [u.kind for u in res.unfixable] == ["noop"]
    # GNU patch agrees that such a hunk is malformed
    rc, _, _ = gnu_patch(lines("a", "b", "c", "d", "e", "f", "g", "h"), res.data)
    assert rc == 2


def test_2_count_does_not_swallow_next_file_header() -> None:
    p = b"--- a/x\n+++ b/x\n@@ -1,2 +1,4 @@\n x1\n-x2\n+X2\n+X3\n--- a/y\n+++ b/y\n@@ -1,2 +1,2 @@\n y1\n-y2\n+Y2\n"
    pf = parse_patch(p, "two.patch")
    assert len(pf.sections) == 2, "the second file's header must start a new section"
    probs = pf.all_problems()
    assert [(x.lineno, x.message) for x in probs] == [
        (3, "hunk 1 of b/x declares 4 new lines, body has 3 (line 8 ends the hunk)")
    ]
    # the real tools misbehave on it: git refuses the whole patch as corrupt
    with pytest.raises(InputError):
        pf.require_valid()


def test_3_stray_line_between_hunks_is_an_error_naming_the_line() -> None:
    body1 = lines(" a", "-b", "+B", " c")
    body2 = lines(" x", "-y", "+Y", " z")
    p = b"--- a/f\n+++ b/f\n@@ -1,3 +1,3 @@\n" + body1 + b"\n@@ -10,3 +10,3 @@\n" + body2
    pf = parse_patch(p, "three.patch")
    assert [len(s.hunks) for s in pf.sections] == [2], "the later hunk must not be dropped"
    probs = pf.all_problems()
    assert len(probs) == 1 and probs[0].lineno == 8 and probs[0].kind == "stray"
    assert "stray blank line after hunk 1" in probs[0].message
    r = run_cli("hunks", "check", "-")  # '-' does not exist: bad input
    assert r.exit_code == 2


def test_3_cli(tmp_path: Path) -> None:
    p = tmp_path / "three.patch"
    p.write_bytes(
        b"--- a/f\n+++ b/f\n@@ -1,3 +1,3 @@\n"
        + lines(" a", "-b", "+B", " c")
        + b"\n@@ -10,3 +10,3 @@\n"
        + lines(" x", "-y", "+Y", " z")
    )
    r = run_cli("hunks", "check", str(p))
    assert r.exit_code == 1
    assert r.stdout.startswith(f"{p}:8: stray blank line after hunk 1")


def test_4_new_file_recount_keeps_0_0() -> None:
    body = lines(*[f"+n{i}" for i in range(22)])
    p = b"--- /dev/null\n+++ b/new.txt\n@@ -0,0 +1,20 @@\n" + body
    res = fix_patch(p, "four.patch")
    assert [(c.old, c.new) for c in res.changes] == [(b"@@ -0,0 +1,20 @@", b"@@ -0,0 +1,22 @@")]


def test_5_omitted_count_means_one() -> None:
    p = b"--- a/f\n+++ b/f\n@@ -2 +2 @@\n" + lines(" l2", "-l3", "+l3x", " l4")
    probs = check_patch(p, "five.patch")
    assert [x.message for x in probs] == [
        "hunk 1 of b/f declares 1 old line, body has 3 (the patch file ends)",
        "hunk 1 of b/f declares 1 new line, body has 3 (the patch file ends)",
    ]
    res = fix_patch(p, "five.patch")
    assert res.changes[0].new == b"@@ -2,3 +2,3 @@"
    data = lines("l1", "l2", "l3", "l4", "l5")
    rc, gnu_out, _ = gnu_patch(data, res.data)
    pf = parse_patch(res.data, "five")
    out = run_hunks(split_keep(data), [sides(h) for h in pf.sections[0].hunks])
    assert rc == 0 and out.data == gnu_out == lines("l1", "l2", "l3x", "l4", "l5")


def test_6_exact_match_at_offset_minus_one_not_fuzz() -> None:
    data = lines("A", "B", "C", "Y", "D", "E", "F", "X")
    p = b"--- a/f\n+++ b/f\n@@ -2,7 +2,7 @@\n" + lines(" A", " B", " C", "-Y", "+Z", " D", " E", " F")
    pf = parse_patch(p, "six")
    out = run_hunks(split_keep(data), [sides(h) for h in pf.sections[0].hunks], max_fuzz=2)
    _rc, gnu_out, notable = gnu_patch(data, p, fuzz=2)
    assert out.data == gnu_out == lines("A", "B", "C", "Z", "D", "E", "F", "X")
    assert [(r.status, r.offset) for r in out.results] == [("offset", -1)]
    assert notable == [(1, "offset", -1)]


def test_7_already_applied_is_reported_never_reversed(tmp_path: Path) -> None:
    (tmp_path / "t").mkdir()
    (tmp_path / "t/f").write_bytes(lines("a", "B", "c"))
    p = parse_patch(b"--- a/f\n+++ b/f\n@@ -1,3 +1,3 @@\n" + lines(" a", "-b", "+B", " c"), "s")
    tree = Tree.open(str(tmp_path / "t"))
    st = patch_status(tree, p)
    assert st.state == "applied"
    assert [h.state for h in st.hunks] == ["applied"]
    # series apply skips it and leaves the file alone
    (tmp_path / "s").mkdir()
    (tmp_path / "s/fix.patch").write_bytes(b"--- a/f\n+++ b/f\n@@ -1,3 +1,3 @@\n" + lines(" a", "-b", "+B", " c"))
    (tmp_path / "s/series").write_bytes(b"fix.patch\n")
    r = run_cli("series", "apply", str(tmp_path / "s"), "--to", str(tmp_path / "t"))
    assert r.exit_code == 0, r.output
    assert "== fix.patch (already applied)" in r.stdout
    assert (tmp_path / "t/f").read_bytes() == lines("a", "B", "c")


def test_8_partial(tmp_path: Path) -> None:
    base = [f"l{i}" for i in range(1, 21)]
    p = (
        b"--- a/f\n+++ b/f\n@@ -2,3 +2,3 @@\n"
        + lines(" l2", "-l3", "+L3", " l4")
        + b"@@ -15,3 +15,3 @@\n"
        + lines(" l15", "-l16", "+L16", " l17")
    )
    now = list(base)
    now[2] = "L3"  # only hunk 1 is in the file
    (tmp_path / "f").write_bytes(lines(*now))
    st = patch_status(Tree.open(str(tmp_path)), parse_patch(p, "eight"))
    assert [h.state for h in st.hunks] == ["applied", "applicable"]
    assert st.state == "partial"
    # GNU patch -N judges by the first hunk and would skip the whole file: not a safe test
    rc, _, _ = gnu_patch(lines(*now), p)
    assert rc == 1


def _git(cwd: Path, *args: str) -> subprocess.CompletedProcess[str]:
    env = dict(os.environ)  # conftest left only its GIT_CONFIG_GLOBAL and GIT_CONFIG_NOSYSTEM pins
    env.update(
        GIT_AUTHOR_NAME="t",
        GIT_AUTHOR_EMAIL="t@t",
        GIT_COMMITTER_NAME="t",
        GIT_COMMITTER_EMAIL="t@t",
        GIT_CONFIG_NOSYSTEM="1",
        HOME=str(cwd),
    )
    return subprocess.run(["git", *args], cwd=cwd, env=env, capture_output=True, text=True)


def test_9_git_apply_from_subdirectory_of_enclosing_repo(tmp_path: Path) -> None:
    from dryboot.patching.check import git_apply

    outer = tmp_path / "outer"
    pkg = outer / "sub" / "pkg"
    pkg.mkdir(parents=True)
    (pkg / "m.py").write_bytes(lines("a", "b", "c"))
    _git(outer, "init", "-q")
    patch = tmp_path / "p.patch"
    patch.write_bytes(
        b"diff --git a/m.py b/m.py\n--- a/m.py\n+++ b/m.py\n@@ -1,3 +1,3 @@\n" + lines(" a", "-b", "+B", " c")
    )
    # the trap is real: git apply --check from the subdirectory exits 0 and touches nothing
    r = _git(pkg, "apply", "--check", "-v", str(patch))
    assert r.returncode == 0 and "Skipped patch" in r.stderr
    r = _git(pkg, "apply", str(patch))
    assert r.returncode == 0 and (pkg / "m.py").read_bytes() == lines("a", "b", "c")
    # dryboot's git apply runs in an isolated repository whose work tree is the package
    res = git_apply(str(pkg), str(patch))
    assert res.ok, res.message
    assert (pkg / "m.py").read_bytes() == lines("a", "B", "c")
    # and a run that changes nothing (the patch's file is elsewhere) is an error, not a pass
    other = tmp_path / "other"
    other.mkdir()
    (other / "m.py").write_bytes(lines("a", "B", "c"))
    bad = git_apply(str(other), str(patch), reverse=False)
    assert not bad.ok


def test_10_no_final_newline_gains_a_line(tmp_path: Path) -> None:
    old, new = b"a\nb\nc", b"a\nb\nc\nd"
    (tmp_path / "o").write_bytes(old)
    (tmp_path / "n").write_bytes(new)
    p = subprocess.run(["diff", "-u", "o", "n"], cwd=tmp_path, capture_output=True).stdout
    pf = parse_patch(p, "ten")
    pf.require_valid()
    out = run_hunks(split_keep(old), [sides(h) for h in pf.sections[0].hunks])
    rc, gnu_out, _ = gnu_patch(old, p)
    assert rc == 0 and out.data == gnu_out == new
    back = run_hunks(split_keep(new), [sides(h, True) for h in pf.sections[0].hunks])
    assert back.data == old


def test_11_bare_cr_in_added_line(tmp_path: Path) -> None:
    old = b"x\r\ny\n"
    new = b"x\r\nmid\rdle\ny\n"
    (tmp_path / "o").write_bytes(old)
    (tmp_path / "n").write_bytes(new)
    p = subprocess.run(["diff", "-u", "o", "n"], cwd=tmp_path, capture_output=True).stdout
    assert b"+mid\rdle\n" in p
    pf = parse_patch(p, "eleven")
    pf.require_valid()
    out = run_hunks(split_keep(old), [sides(h) for h in pf.sections[0].hunks])
    _rc, gnu_out, _ = gnu_patch(old, p)
    assert out.data == gnu_out == new


def test_12_crlf_headers_stripped_as_gnu_patch_does(tmp_path: Path) -> None:
    """Issue 28 changed item 12: a section with CRLF headers has its CRs stripped, as GNU patch
    does, and says so (tests/patching/test_crlf.py compares with GNU patch); ``hunks fix``
    refuses to rewrite it (it would change the line endings)."""
    p = b"--- a/f\r\n+++ b/f\r\n@@ -1,1 +1,1 @@\r\n-a\r\n+b\r\n"
    pf = parse_patch(p, "twelve.patch")
    pf.require_valid()
    assert pf.crlf_stripped == 5
    assert pf.notes()[0].startswith("twelve.patch: CRLF line endings in the patch headers: the trailing CR of 5 ")
    f = tmp_path / "twelve.patch"
    f.write_bytes(p)
    assert run_cli("hunks", "check", str(f)).exit_code == 0
    r = run_cli("hunks", "fix", str(f))
    assert r.exit_code == 1 and "does not rewrite a CRLF patch" in r.stdout
    assert f.read_bytes() == p
    assert "Traceback" not in r.output


def test_applier_refuses_invalid_patch_before_touching_anything(tmp_path: Path) -> None:
    (tmp_path / "f").write_bytes(lines("a", "b", "c"))
    p = parse_patch(b"--- a/f\n+++ b/f\n@@ -1,3 +1,4 @@\n" + lines(" a", "-b", "+B", " c"), "x")
    with pytest.raises(InputError):
        apply_patch(Tree.open(str(tmp_path)), p)

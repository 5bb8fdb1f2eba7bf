"""Issue 35, items 1-4: patches as git writes them (a bare ``--`` signature separator after the
last hunk), a patch entirely upstream, a second ``swap --fuzz 3``, and what ``series port``
writes (git's funcname after ``@@``, ``--out``'s mode, a CRLF patch's line endings). Each test
failed before the change it checks."""

from __future__ import annotations

import os
import shutil
from pathlib import Path

from click.testing import CliRunner

from dryboot.cli import cli
from dryboot.patching.port import port_series, with_funcnames

from . import corpus as C
from .helpers import run_cli
from .test_port import git, git_am3, lines, make, tree, udiff

BASE = lines(40)
#: git format-patch's mail: the diff, then its signature separator; some mailers (and hands)
#: drop the trailing space of "-- ", leaving a bare "--" that reads like a removed line "-"
FORMAT_PATCH = (
    "From 1111111111111111111111111111111111111111 Mon Sep 17 00:00:00 2001\n"
    "From: A Packager <a@example.org>\nSubject: [PATCH] fix line 20\n\n---\n f.txt | 2 +-\n\n"
    "diff --git a/f.txt b/f.txt\nindex 0000001..0000002 100644\n"
)


def _footer_patch(footer: str) -> str:
    return FORMAT_PATCH + udiff(BASE, BASE.replace("line 20\n", "line 20 fixed\n"), "f.txt") + footer


def test_bare_signature_separator_is_not_a_removed_line(tmp_path: Path) -> None:
    for k, footer in enumerate(["--\n2.39.2\n\n", "--\n", "--\r\n2.39.2\r\n"]):
        s, t = tmp_path / f"s{k}", tmp_path / f"t{k}"
        s.mkdir()
        t.mkdir()
        (s / "1.patch").write_text(_footer_patch(footer))
        (s / "series").write_text("1.patch\n")
        (t / "f.txt").write_text(BASE)
        g = shutil.copytree(t, tmp_path / f"g{k}")
        assert C.gnu_apply(g, s / "1.patch", [])[0] == 0  # GNU patch reads the hunk by its counts
        r = run_cli("hunks", "check", str(s / "1.patch"))
        assert r.exit_code == 0, r.output  # before: "declares 3 old lines, body has 4"
        r = run_cli("series", "apply", str(s), "--to", str(t))
        assert r.exit_code == 0, r.output
        assert tree(t) == tree(g)
        new = tmp_path / f"n{k}"
        new.mkdir()
        (new / "f.txt").write_text("header\n" + BASE)
        old = tmp_path / f"o{k}"
        old.mkdir()
        (old / "f.txt").write_text(BASE)
        res = port_series(str(s), str(old), str(new), str(tmp_path / f"out{k}"))
        assert [p.status for p in res.patches] == ["ported"]
        assert (tmp_path / f"out{k}" / "1.patch").read_text().endswith(footer.replace("\r", ""))


#: Buildroot's snooze series: its first patch is a real git format-patch mail whose last hunk is
#: followed by a bare "--" (see its SOURCE)
SNOOZE = Path(__file__).resolve().parent.parent / "data" / "port" / "buildroot-snooze"


def test_a_real_patch_ending_in_a_bare_separator(tmp_path: Path) -> None:
    """Buildroot's snooze series on snooze 0.5 (the tree Buildroot applies it to): the bare
    ``--`` after the last hunk ends the hunk, as GNU patch reads it; ported to 0.5.1, which
    carries both changes, the two patches are upstream and the tree is git am -3's."""
    series = SNOOZE / "patches"
    first = series / "0001-fix-snooze-n-format-string.patch"
    assert b"\n \t\t\t} else {\n--\n2.43.0\n" in first.read_bytes()  # the input is what this test is about
    r = run_cli("hunks", "check", str(first))
    assert r.exit_code == 0, r.output
    gnu, failed = C.gnu_series(SNOOZE / "releases" / "0.5", series, tmp_path / "gnu")
    assert not failed, failed
    mine = shutil.copytree(SNOOZE / "releases" / "0.5", tmp_path / "mine")
    r = run_cli("series", "apply", str(series), "--to", str(mine))
    assert r.exit_code == 0, r.output
    assert tree(mine) == tree(gnu)
    old, new = SNOOZE / "releases" / "0.5", SNOOZE / "releases" / "0.5.1"
    res = port_series(str(series), str(old), str(new), str(tmp_path / "out"))
    assert [p.status for p in res.patches] == ["upstream", "upstream"]
    want, applied_count = git_am3(old, new, series, tmp_path / "am3")
    assert want == tree(new) and applied_count == 2  # "No changes -- Patch already applied", twice


def test_a_bare_separator_before_an_orphan_hunk_stays_an_error(tmp_path: Path) -> None:
    """Only prose may follow it: a later ``@@`` with no file header (GNU patch would drop it
    silently) keeps the count error."""
    p = tmp_path / "p.patch"
    p.write_text(_footer_patch("--\n@@ -1,1 +1,1 @@\n-line 1\n+x\n"))
    assert run_cli("hunks", "check", str(p)).exit_code == 1


def test_patch_entirely_upstream_is_upstream(tmp_path: Path) -> None:
    """A patch whose change NEW has, a created file included (same content): upstream, its
    series line commented out, no patch written -- as git am -3 ("No changes")."""
    patched = BASE.replace("line 20\n", "line 20 fixed\n")
    text = udiff(BASE, patched, "f.txt") + udiff(None, "new file\n", "g.txt")
    old, new, s = make(
        tmp_path, {"f.txt": BASE}, {"f.txt": "top\n" + patched, "g.txt": "new file\n"}, [("a.patch", text)]
    )
    res = port_series(str(s), str(old), str(new), str(tmp_path / "out"))
    assert [p.status for p in res.patches] == ["upstream"]  # before: "ported", an empty creation section
    assert all(h.status == "upstream" for h in res.patches[0].hunks())
    assert not (tmp_path / "out" / "a.patch").exists()
    assert (tmp_path / "out" / "series").read_text().startswith("# a.patch  # upstream in --to")
    am3, _ = git_am3(old, new, s, tmp_path / "am")
    assert am3 == tree(new)


def test_partly_upstream_counts_the_hunks_new_has(tmp_path: Path) -> None:
    patched = BASE.replace("line 5\n", "line 5 fixed\n").replace("line 30\n", "line 30 fixed\n")
    new_text = BASE.replace("line 5\n", "line 5 fixed\n")
    old, new, s = make(tmp_path, {"f.txt": BASE}, {"f.txt": new_text}, [("a.patch", udiff(BASE, patched, "f.txt"))])
    res = port_series(str(s), str(old), str(new), str(tmp_path / "out"))
    p = res.patches[0]
    assert p.status == "partly upstream" and p.upstream_hunks() == (1, 2)
    assert b"line 5 fixed" not in (tmp_path / "out" / "a.patch").read_bytes().split(b"@@", 1)[1].replace(
        b" line 5 fixed", b""
    )


def _swap_dir(tmp: Path) -> tuple[Path, Path, Path]:
    t = tmp / "t"
    t.mkdir(parents=True)
    base = lines(11, "l{}")
    (t / "f").write_text(base.replace("l6\n", "X6\n"))  # OLD applied
    o, n = tmp / "old.patch", tmp / "new.patch"
    o.write_text("--- a/f\n+++ b/f\n@@ -3,7 +3,7 @@\n l3\n l4\n l5\n-l6\n+X6\n l7\n l8\n l9\n")
    n.write_text("--- a/f\n+++ b/f\n@@ -3,6 +3,7 @@\n l3\n l4\n l5\n+A\n l6\n l7\n l8\n")
    return o, n, t


def test_second_swap_at_fuzz_3_does_nothing(tmp_path: Path) -> None:
    """NEW applied, OLD not: OLD's removed line alone "fits" once fuzz 3 trimmed all of its
    context; such a placement proves nothing, so the rerun says nothing to do, as fuzz 0 and 2 do."""
    for fuzz in ("0", "2", "3"):
        o, n, t = _swap_dir(tmp_path / fuzz)
        r = run_cli("swap", str(o), str(n), "--in", str(t), "--fuzz", fuzz)
        assert r.exit_code == 0, r.output
        done = (t / "f").read_bytes()
        r = run_cli("swap", str(o), str(n), "--in", str(t), "--fuzz", fuzz)
        assert r.exit_code == 0 and "nothing to do" in r.output, (fuzz, r.output)  # before: exit 1 at fuzz 3
        assert (t / "f").read_bytes() == done


C_FILE = "".join(
    ["#include <stdio.h>\n", "\n", "static int helper(int x)\n", "{\n"]
    + [f"\tint v{i} = x + {i};\n" for i in range(20)]
    + ["\treturn x;\n", "}\n", "\n", "int main(void)\n", "{\n"]
    + [f'\tputs("{i}");\n' for i in range(20)]
    + ["\treturn 0;\n", "}\n"]
)


def _git_diff(tmp: Path, a: str, b: str) -> str:
    repo = tmp / "repo"
    shutil.rmtree(repo, ignore_errors=True)
    repo.mkdir()
    (repo / "f.c").write_text(a)
    git(repo, "init", "-q")
    git(repo, "add", "-A")
    (repo / "f.c").write_text(b)
    return git(repo, "diff").stdout


def test_ported_hunk_headers_keep_gits_funcname(tmp_path: Path) -> None:
    patched = C_FILE.replace('\tputs("10");\n', '\tputs("ten");\n').replace("\tint v12", "\tint w12")
    new_text = "/* upstream header */\n" * 7 + C_FILE
    text = _git_diff(tmp_path, C_FILE, patched)
    assert "@@ int main(void)" in text  # git writes its funcname
    old, new, s = make(tmp_path, {"f.c": C_FILE}, {"f.c": new_text}, [("a.patch", text)])
    port_series(str(s), str(old), str(new), str(tmp_path / "out"))
    got = [ln for ln in (tmp_path / "out" / "a.patch").read_text().splitlines() if ln.startswith("@@")]
    want = [
        ln
        for ln in _git_diff(tmp_path, new_text, "/* upstream header */\n" * 7 + patched).splitlines()
        if ln.startswith("@@")
    ]
    assert got == want  # before: "@@ -34,7 +34,7 @@" with no funcname
    assert with_funcnames([b"@@ -1,3 +1,3 @@"], [b"x\n"]) == [b"@@ -1,3 +1,3 @@"]  # nothing above line 1


def test_out_is_created_with_the_umasks_mode(tmp_path: Path) -> None:
    patched = BASE.replace("line 20\n", "line 20 fixed\n")
    old, new, s = make(tmp_path, {"f.txt": BASE}, {"f.txt": BASE}, [("a.patch", udiff(BASE, patched, "f.txt"))])
    mask = os.umask(0o022)
    try:
        port_series(str(s), str(old), str(new), str(tmp_path / "out"))
    finally:
        os.umask(mask)
    assert (tmp_path / "out").stat().st_mode & 0o777 == 0o755  # before: 0700 (mkdtemp's)


def test_crlf_patch_is_written_crlf_throughout(tmp_path: Path) -> None:
    """A patch saved with CRLF (GNU patch strips its CRs) was written with its description in
    CRLF and its refreshed hunks in LF; now CRLF throughout, and GNU patch applies it."""
    patched = BASE.replace("line 20\n", "line 20 fixed\n")
    text = ("Description: fix\nAuthor: x\n\n" + udiff(BASE, patched, "f.txt")).replace("\n", "\r\n")
    old, new, s = make(tmp_path, {"f.txt": BASE}, {"f.txt": "top\n" + BASE}, [])
    (s / "a.patch").write_bytes(text.encode())
    (s / "series").write_text("a.patch\n")
    port_series(str(s), str(old), str(new), str(tmp_path / "out"))
    out = (tmp_path / "out" / "a.patch").read_bytes()
    assert out.count(b"\n") == out.count(b"\r\n")
    g = shutil.copytree(new, tmp_path / "g")
    assert C.gnu_apply(g, tmp_path / "out" / "a.patch", [])[0] == 0
    assert (g / "f.txt").read_text() == "top\n" + patched


def test_lf_lines_ported_into_a_crlf_file_are_warned(tmp_path: Path) -> None:
    """A patch whose added line ends in LF alone, on a CRLF file: ported, with a warning that the
    file now mixes line endings (before: silently)."""
    crlf = BASE.replace("\n", "\r\n")
    text = udiff(BASE, BASE.replace("line 20\n", "line 20\nadded\n"), "f.txt")
    head, body = text.split("@@", 1)[1].split("\n", 1)
    body = head + "\n" + body.replace("\n", "\r\n").replace("+added\r\n", "+added\n")
    old, new, s = make(tmp_path, {}, {}, [])
    (old / "f.txt").write_bytes(crlf.encode())
    (new / "f.txt").write_bytes(b"top\r\n" + crlf.encode())
    (s / "a.patch").write_bytes(("--- a/f.txt\n+++ b/f.txt\n@@" + body).encode())
    (s / "series").write_text("a.patch\n")
    r = CliRunner().invoke(cli, ["series", "port", str(s), "--from", str(old), "--to", str(new), "--check"])
    assert r.exit_code == 0, r.output
    assert "NEW's file is CRLF; 1 line(s) the patch brings end in LF alone (mixed line endings)" in r.output


def test_resolved_creation_of_a_file_new_has_becomes_a_modification(tmp_path: Path) -> None:
    """A git patch creating ``g.txt`` that NEW ships with other content: a conflict whose reject
    is the patch as a change of NEW's file; resolved (the fork's content kept) and continued, the
    written section modifies NEW's file (no ``new file mode``, ``--- a/g.txt``) and GNU patch
    applies it to NEW."""
    fork = "".join(f"fork {i}\n" for i in range(12))
    theirs = fork.replace("fork 3\n", "upstream 3\n").replace("fork 9\n", "")
    text = "Subject: add g\n\ndiff --git a/g.txt b/g.txt\nnew file mode 100644\nindex 0000000..1111111\n"
    text += udiff(None, fork, "g.txt")
    old, new, s = make(tmp_path, {"f.txt": BASE}, {"f.txt": BASE, "g.txt": theirs}, [("a.patch", text)])
    out = tmp_path / "out"
    args = ["series", "port", str(s), "--from", str(old), "--to", str(new), "--out", str(out)]
    r = CliRunner().invoke(cli, args)
    assert r.exit_code == 1 and "conflict (creates a file NEW has)" in r.output, r.output
    rej = (out / "a.patch.rej").read_text()
    assert rej.startswith("--- a/g.txt\n+++ b/g.txt\n@@")
    (out / "conflicts" / "a.patch" / "g.txt").write_text(fork)
    r = CliRunner().invoke(cli, [*args, "--continue"])
    assert r.exit_code == 0, r.output
    written = (out / "a.patch").read_text()
    assert "new file mode" not in written and "--- a/g.txt\n+++ b/g.txt\n" in written
    assert "index " + git(tmp_path, "hash-object", str(new / "g.txt")).stdout.strip()[:7] in written
    g = shutil.copytree(new, tmp_path / "g")
    assert C.gnu_apply(g, out / "a.patch", [])[0] == 0
    assert (g / "g.txt").read_text() == fork


def _chopped_patch(missing: int) -> str:
    """A patch whose last hunk ends in three blank context lines, ``missing`` of them cut off
    (as a mailer or an editor that strips trailing blank lines leaves it)."""
    base = BASE.replace("line 22\n", "\n").replace("line 23\n", "\n").replace("line 24\n", "\n")
    text = udiff(base, base.replace("line 21\n", "line 21 fixed\n"), "f.txt")
    assert text.endswith("\n \n \n \n")
    return text[: len(text) - 2 * missing] if missing else text


def test_blank_context_lines_chopped_at_the_end_are_read_as_gnu_patch_reads_them(tmp_path: Path) -> None:
    """GNU patch: where the file ends inside the last hunk, 1 to 3 missing lines (the same on
    both sides) are blank context lines ("assume blank lines got chopped"); 4 are an error."""
    base = BASE.replace("line 22\n", "\n").replace("line 23\n", "\n").replace("line 24\n", "\n")
    for missing in (1, 2, 3, 4):
        s, t = tmp_path / f"s{missing}", tmp_path / f"t{missing}"
        s.mkdir()
        t.mkdir()
        (s / "1.patch").write_text(_chopped_patch(missing))
        (s / "series").write_text("1.patch\n")
        (t / "f.txt").write_text(base)
        g = shutil.copytree(t, tmp_path / f"g{missing}")
        gnu_rc = C.gnu_apply(g, s / "1.patch", [])[0]
        r = run_cli("series", "apply", str(s), "--to", str(t))
        if missing <= 3:
            assert gnu_rc == 0
            assert r.exit_code == 0, r.output  # before: "declares 27 old lines, body has 26", exit 2
            assert tree(t) == tree(g)
            check = run_cli("hunks", "check", str(s / "1.patch"))
            assert check.exit_code == 1 and "short of its declared counts" in check.output
        else:
            assert gnu_rc != 0 and r.exit_code == 2 and tree(t) == {"f.txt": base.encode()}


def test_a_short_side_is_not_padded(tmp_path: Path) -> None:
    """Only the same shortfall on both sides is GNU patch's chopped blank context: a hunk
    missing a removed line keeps the count error."""
    p = tmp_path / "p.patch"
    text = udiff(BASE, BASE.replace("line 20\n", ""), "f.txt")
    p.write_text(text.replace(" line 21\n line 22\n line 23\n", "").replace("-line 20\n", ""))
    r = run_cli("hunks", "check", str(p))
    assert r.exit_code == 1 and "short of" not in r.output and "declares" in r.output


#: conda-forge's lua series: both patches end one blank context line short (see its SOURCE)
LUA = Path(__file__).resolve().parent.parent / "data" / "port" / "conda-forge-lua"


def test_real_patches_chopped_at_the_end(tmp_path: Path) -> None:
    """conda-forge's lua patches on lua 5.4.4: read as GNU patch reads them (series apply leaves
    its tree), and luaconf.patch ported to 5.4.7 leaves the tree conda-forge's own 5.4.7 copy
    of it leaves, written with complete counts."""
    series = LUA / "patches"
    assert (series / "luaconf.patch").read_bytes().endswith(b' #define LUA_CDIR\tLUA_ROOT "lib/lua/" LUA_VDIR "/"\n')
    old, new = LUA / "releases" / "5.4.4", LUA / "releases" / "5.4.7"
    gnu, failed = C.gnu_series(old, series, tmp_path / "gnu")
    assert not failed, failed
    mine = shutil.copytree(old, tmp_path / "mine")
    r = run_cli("series", "apply", str(series), "--to", str(mine))
    assert r.exit_code == 0, r.output  # before: "declares 7 old lines, body has 6", exit 2
    assert tree(mine) == tree(gnu)
    one = tmp_path / "one"
    one.mkdir()
    shutil.copyfile(series / "luaconf.patch", one / "luaconf.patch")
    (one / "series").write_text("luaconf.patch\n")
    res = port_series(str(one), str(old), str(new), str(tmp_path / "out"))
    assert [p.status for p in res.patches] == ["ported"]
    truth, failed = C.gnu_series(new, one, tmp_path / "truth")  # conda-forge's 5.4.7 patch: the same bytes
    assert not failed
    ported, failed = C.gnu_series(new, tmp_path / "out", tmp_path / "ported")
    assert not failed
    assert tree(ported) == tree(truth)
    assert run_cli("hunks", "check", str(tmp_path / "out" / "luaconf.patch")).exit_code == 0

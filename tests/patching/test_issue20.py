"""Issue 20's items, each against GNU patch 2.7.6 (and git where it has a say): every test here
failed on main before its fix."""

from __future__ import annotations

import os
import subprocess
from pathlib import Path

from .helpers import gnu_patch_bin, run_cli, snapshot

ENV = {**os.environ, "LC_ALL": "C"}


def _stack(
    tmp: Path, files: dict[str, bytes], patches: dict[str, bytes], series: str | None = None
) -> tuple[Path, Path]:
    s, t = tmp / "stack", tmp / "target"
    s.mkdir()
    t.mkdir()
    for rel, data in files.items():
        (t / rel).parent.mkdir(parents=True, exist_ok=True)
        (t / rel).write_bytes(data)
    for name, data in patches.items():
        (s / name).parent.mkdir(parents=True, exist_ok=True)
        (s / name).write_bytes(data)
    (s / "series").write_text(series if series is not None else "".join(n + "\n" for n in patches))
    return s, t


def _gnu_loop(tmp: Path, files: dict[str, bytes], patches: dict[str, bytes], names: list[str] | None = None) -> Path:
    g = tmp / "gnu"
    g.mkdir()
    for rel, data in files.items():
        (g / rel).parent.mkdir(parents=True, exist_ok=True)
        (g / rel).write_bytes(data)
    for name in names if names is not None else list(patches):
        pf = tmp / "p.tmp"
        pf.write_bytes(patches[name])
        p = subprocess.run(
            [gnu_patch_bin(), "-f", "-s", "--fuzz", "0", "--no-backup-if-mismatch", "-p1", "-d", str(g), "-i", str(pf)],
            capture_output=True,
            env=ENV,
        )
        assert p.returncode == 0, p.stdout + p.stderr
        pf.unlink()
    return g


LINES = b"".join(b"l%d\n" % k for k in range(1, 7))


# -- 1. a zero-context deletion hunk -------------------------------------------------------


def test_zero_context_deletion_is_applied_not_skipped(tmp_path: Path) -> None:
    files = {"f": LINES}
    patches = {"0001-del.patch": b"--- a/f\n+++ b/f\n@@ -4,2 +3,0 @@\n-l4\n-l5\n"}
    s, t = _stack(tmp_path, files, patches)
    st = run_cli("series", "status", str(s), "--on", str(t))
    assert st.stdout.startswith("0001-del.patch: applicable"), st.output
    r = run_cli("series", "apply", str(s), "--to", str(t))
    assert r.exit_code == 0, r.output
    assert snapshot(t) == snapshot(_gnu_loop(tmp_path, files, patches)) == {"f": b"l1\nl2\nl3\nl6\n"}
    again = run_cli("series", "status", str(s), "--on", str(t))
    assert again.stdout.startswith("0001-del.patch: applied"), again.output
    r = run_cli("series", "apply", str(s), "--to", str(t))
    assert r.exit_code == 0 and "already applied" in r.stdout
    assert (t / "f").read_bytes() == b"l1\nl2\nl3\nl6\n"


def test_zero_context_insertion_still_reads_right(tmp_path: Path) -> None:
    files = {"f": LINES}
    patches = {"0001-ins.patch": b"--- a/f\n+++ b/f\n@@ -3,0 +4,2 @@\n+n1\n+n2\n"}
    s, t = _stack(tmp_path, files, patches)
    assert run_cli("series", "status", str(s), "--on", str(t)).stdout.startswith("0001-ins.patch: applicable")
    assert run_cli("series", "apply", str(s), "--to", str(t)).exit_code == 0
    assert snapshot(t) == snapshot(_gnu_loop(tmp_path, files, patches))
    assert run_cli("series", "status", str(s), "--on", str(t)).stdout.startswith("0001-ins.patch: applied")


# -- 5. shapes real stacks ship -------------------------------------------------------------

GIT_A = (
    b"diff --git a/a.py b/a.py\nindex 1111111..2222222 100644\n--- a/a.py\n+++ b/a.py\n"
    b"@@ -1,3 +1,3 @@\n x\n-y\n+Y\n z\n"
)
GIT_B = (
    b"diff --git a/b.py b/b.py\nindex 3333333..4444444 100644\n--- a/b.py\n+++ b/b.py\n"
    b"@@ -1,3 +1,3 @@\n p\n-q\n+Q\n r\n"
)
AB = {"a.py": b"x\ny\nz\n", "b.py": b"p\nq\nr\n"}


def _applies_as_gnu(tmp_path: Path, patch: bytes) -> None:
    patches = {"0001-x.patch": patch}
    s, t = _stack(tmp_path, AB, patches)
    r = run_cli("series", "apply", str(s), "--to", str(t))
    assert r.exit_code == 0, r.output
    assert snapshot(t) == snapshot(_gnu_loop(tmp_path, AB, patches)) == {"a.py": b"x\nY\nz\n", "b.py": b"p\nQ\nr\n"}


def test_jetbrains_index_block_before_diff_git(tmp_path: Path) -> None:
    idea = b"Index: %s\nIDEA additional info:\nSubsystem: com.intellij.openapi.diff.impl.patch.CharsetEP\n<+>UTF-8\n"
    sep = b"===================================================================\n"
    _applies_as_gnu(tmp_path, idea % b"a.py" + sep + GIT_A + idea % b"b.py" + sep + GIT_B)


def test_blank_line_between_file_sections(tmp_path: Path) -> None:
    _applies_as_gnu(tmp_path, GIT_A + b"\n\n" + GIT_B)


def test_git_log_p_commit_block_between_sections(tmp_path: Path) -> None:
    commit = (
        b"commit 0123456789abcdef0123456789abcdef01234567\nAuthor: A U Thor <a@example.org>\n"
        b"Date:   Mon Jan 1 00:00:00 2024 +0000\n\n    second change\n\n    - with a list item\n\n"
    )
    _applies_as_gnu(tmp_path, commit + GIT_A + commit + GIT_B)


def test_stray_line_before_a_headerless_hunk_is_still_refused(tmp_path: Path) -> None:
    """GNU patch drops the hunk after the blank line (and exits 0); git refuses: dryboot refuses."""
    patch = b"--- a/a.py\n+++ b/a.py\n@@ -1,2 +1,2 @@\n-x\n+X\n y\n\n@@ -3 +3 @@\n-z\n+Z\n"
    s, _t = _stack(tmp_path, AB, {"0001-x.patch": patch})
    r = run_cli("series", "status", str(s), "--on", str(_t))
    assert r.exit_code == 2 and "stray blank line after hunk 1" in r.stderr


def test_nul_byte_inside_a_hunk_is_content(tmp_path: Path) -> None:
    files = {"a.py": b"x\ny\x00y\nz\n"}
    patches = {"0001-nul.patch": b"--- a/a.py\n+++ b/a.py\n@@ -1,3 +1,3 @@\n x\n-y\x00y\n+Y\x00Y\n z\n"}
    s, t = _stack(tmp_path, files, patches)
    assert run_cli("series", "status", str(s), "--on", str(t)).exit_code == 0
    r = run_cli("series", "apply", str(s), "--to", str(t))
    assert r.exit_code == 0, r.output
    assert snapshot(t) == snapshot(_gnu_loop(tmp_path, files, patches)) == {"a.py": b"x\nY\x00Y\nz\n"}


def test_patch_files_the_series_does_not_name_are_ignored_with_a_note(tmp_path: Path) -> None:
    patches = {"0001-a.patch": GIT_A, "hurd/unused.diff": GIT_B}
    s, t = _stack(tmp_path, AB, patches, series="0001-a.patch\n")
    r = run_cli("series", "apply", str(s), "--to", str(t))
    assert r.exit_code == 0, r.output
    assert "hurd/unused.diff" in r.stderr and "not in the series" in r.stderr
    assert (t / "b.py").read_bytes() == b"p\nq\nr\n"
    st = run_cli("series", "status", str(s), "--on", str(t))
    assert st.exit_code == 0 and "hurd/unused.diff" in st.stderr
    assert run_cli("series", "list", str(s)).exit_code == 0
    # a name listed without a file is still a typo
    (s / "series").write_text("0001-a.patch\n0002-typo.patch\n")
    assert run_cli("series", "list", str(s)).exit_code == 2


# -- 6. hunks fix and a '---' trailer; a symlinked patch --------------------------------------

TRAILER = b"--- a/a.py\n+++ b/a.py\n@@ -1,3 +1,3 @@\n x\n-y\n+Y\n z\n---\ntg: (abc123..) t/fix (depends on: master)\n"


def test_hunks_fix_leaves_a_correct_header_before_a_trailer(tmp_path: Path) -> None:
    p = tmp_path / "x.patch"
    p.write_bytes(TRAILER)
    assert run_cli("hunks", "check", str(p)).exit_code == 0
    r = run_cli("hunks", "fix", str(p))
    assert r.exit_code == 0 and r.stdout == ""
    assert p.read_bytes() == TRAILER
    patches = {"0001-x.patch": TRAILER}
    s, t = _stack(tmp_path, AB, patches)
    assert run_cli("series", "apply", str(s), "--to", str(t)).exit_code == 0
    assert snapshot(t) == snapshot(_gnu_loop(tmp_path, AB, patches))


def test_hunks_fix_keeps_a_symlinked_patch_a_symlink(tmp_path: Path) -> None:
    real = tmp_path / "real.patch"
    real.write_bytes(b"--- a/a.py\n+++ b/a.py\n@@ -1,3 +1,4 @@\n x\n-y\n+Y\n z\n")
    link = tmp_path / "link.patch"
    link.symlink_to(real.name)
    r = run_cli("hunks", "fix", str(link))
    assert r.exit_code == 0, r.output
    assert link.is_symlink() and os.readlink(link) == "real.patch"
    assert real.read_bytes().splitlines()[2] == b"@@ -1,3 +1,3 @@"


# -- 7. unquoted names with spaces -----------------------------------------------------------

SPACED = (
    b"diff --git a/Misc/Core and Builtins/n.rst b/Misc/Core and Builtins/n.rst\nnew file mode 100644\n"
    b"index 0000000..1111111\n--- /dev/null\n+++ b/Misc/Core and Builtins/n.rst\n@@ -0,0 +1,2 @@\n+x\n+y\n"
)


def test_unquoted_name_with_spaces_builds_gnus_tree_and_warns(tmp_path: Path) -> None:
    files = {"Misc/README": b"r\n"}
    patches = {"0001-news.patch": SPACED}
    s, t = _stack(tmp_path, files, patches)
    r = run_cli("series", "apply", str(s), "--to", str(t))
    assert r.exit_code == 0, r.output
    gnu = _gnu_loop(tmp_path, files, patches)
    assert snapshot(t) == snapshot(gnu)
    assert (t / "Misc" / "Core").read_bytes() == b"x\ny\n"
    assert "probably meant 'b/Misc/Core and Builtins/n.rst'" in r.stderr
    # a tree GNU built reads applied, not partial
    st = run_cli("series", "status", str(s), "--on", str(gnu))
    assert st.exit_code == 0 and st.stdout.startswith("0001-news.patch: applied"), st.output


def test_name_with_spaces_ended_by_a_tab_is_whole(tmp_path: Path) -> None:
    files = {"Core and Builtins/x.rst": b"a\nb\nc\n"}
    ts = b"\t2020-01-01 00:00:00.000000000 +0000"
    patch = (
        b"--- a/Core and Builtins/x.rst"
        + ts
        + b"\n+++ b/Core and Builtins/x.rst"
        + ts
        + b"\n@@ -1,3 +1,3 @@\n a\n-b\n+B\n c\n"
    )
    patches = {"0001-x.patch": patch}
    s, t = _stack(tmp_path, files, patches)
    r = run_cli("series", "apply", str(s), "--to", str(t))
    assert r.exit_code == 0 and "probably meant" not in r.stderr
    assert snapshot(t) == snapshot(_gnu_loop(tmp_path, files, patches))


def test_space_before_a_timestamp_is_no_name(tmp_path: Path) -> None:
    files = {"x.c": b"a\nb\nc\n"}
    patch = (
        b"--- a/x.c 2020-01-01 00:00:00 +0000\n+++ b/x.c 2020-01-01 00:00:00 +0000\n@@ -1,3 +1,3 @@\n a\n-b\n+B\n c\n"
    )
    patches = {"0001-x.patch": patch}
    s, t = _stack(tmp_path, files, patches)
    r = run_cli("series", "apply", str(s), "--to", str(t))
    assert r.exit_code == 0 and "probably meant" not in r.stderr, r.output
    assert snapshot(t) == snapshot(_gnu_loop(tmp_path, files, patches))


def test_binary_notice_without_data_creates_the_file_empty_as_gnu(tmp_path: Path) -> None:
    """glibc's git-updates.diff (Debian 12) holds ``Binary files /dev/null and b/... differ``
    for a new test file: GNU patch 2.7.6 creates it empty and exits 0; so does dryboot, warning."""
    patch = (
        b"diff --git a/t/XT6 b/t/XT6\nnew file mode 100644\nindex 0000000000..07b393bb7d\n"
        b"Binary files /dev/null and b/t/XT6 differ\n" + GIT_A
    )
    patches = {"0001-x.patch": patch}
    s, t = _stack(tmp_path, AB, patches)
    r = run_cli("series", "apply", str(s), "--to", str(t))
    assert r.exit_code == 0 and "a binary file with no data in the patch" in r.stderr, r.output
    assert snapshot(t) == snapshot(_gnu_loop(tmp_path, AB, patches))
    assert (t / "t" / "XT6").read_bytes() == b""


def test_context_past_the_counts_before_the_next_file_is_skipped_as_gnu_and_git(tmp_path: Path) -> None:
    """glibc's hurd-i386/tg-sysvshm.diff: a hunk whose body runs one context line past its counts,
    then the next file's ---/+++: GNU patch and git read by the counts; dryboot too, warning."""
    first = b"--- a/a.py\n+++ b/a.py\n@@ -1,3 +1,3 @@\n x\n-y\n+Y\n z\n not in the file\n"
    patches = {"0001-x.patch": first + GIT_B.split(b"\n", 2)[2]}
    s, t = _stack(tmp_path, AB, patches)
    r = run_cli("series", "apply", str(s), "--to", str(t))
    assert r.exit_code == 0 and "1 context line after its declared counts (-3 +3)" in r.stderr, r.output
    assert snapshot(t) == snapshot(_gnu_loop(tmp_path, AB, patches))
    g = tmp_path / "g"
    g.mkdir()
    for k, v in AB.items():
        (g / k).write_bytes(v)
    subprocess.run(["git", "init", "-q"], cwd=g, check=True)
    assert subprocess.run(["git", "apply", str(s / "0001-x.patch")], cwd=g, env=ENV).returncode == 0
    assert (g / "a.py").read_bytes() == (t / "a.py").read_bytes()

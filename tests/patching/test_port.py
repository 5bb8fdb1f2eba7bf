"""``dryboot series port`` (issue 30): the per-hunk states, the refreshed patch, the written
series, bad input, and two differential checks -- against ``git am -3`` on the same inputs, and a
property: a random base, a patch and an upstream edit elsewhere port to the tree holding both."""

from __future__ import annotations

import os
import shutil
import subprocess
from pathlib import Path

import pytest
from click.testing import CliRunner
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from dryboot.cli import cli
from dryboot.errors import InputError
from dryboot.patching.port import port_series
from dryboot.patching.stack import apply_series

from . import corpus as C
from .helpers import gnu_patch as _unused  # noqa: F401  (GNU patch is what the ported series is applied with)

GIT_ENV = {
    "PATH": os.environ.get("PATH", "/usr/bin:/bin"),
    "HOME": os.devnull,
    "GIT_CONFIG_NOSYSTEM": "1",
    "GIT_CONFIG_GLOBAL": os.devnull,
    "GIT_AUTHOR_NAME": "t",
    "GIT_AUTHOR_EMAIL": "t@example.invalid",
    "GIT_COMMITTER_NAME": "t",
    "GIT_COMMITTER_EMAIL": "t@example.invalid",
    "LC_ALL": "C",
}


def lines(n: int, fmt: str = "line {}") -> str:
    return "".join(fmt.format(i) + "\n" for i in range(1, n + 1))


def udiff(a: str | None, b: str | None, name: str, context: int = 3) -> str:
    """A plain ``diff -u`` section for ``name`` (a/ b/ prefixes)."""
    d = Path(os.environ.get("TMPDIR", "/tmp"))
    pa, pb = d / f"dryboot-port-a-{os.getpid()}", d / f"dryboot-port-b-{os.getpid()}"
    pa.write_text(a or "")
    pb.write_text(b or "")
    la = "/dev/null" if a is None else f"a/{name}"
    lb = "/dev/null" if b is None else f"b/{name}"
    out = subprocess.run(
        [
            "diff",
            f"-U{context}",
            "--label",
            la,
            "--label",
            lb,
            str(pa) if a is not None else os.devnull,
            str(pb) if b is not None else os.devnull,
        ],
        capture_output=True,
        text=True,
        check=False,
    ).stdout
    pa.unlink()
    pb.unlink()
    return out


def make(
    tmp: Path, old: dict[str, str], new: dict[str, str], patches: list[tuple[str, str]]
) -> tuple[Path, Path, Path]:
    """OLD and NEW trees and a series directory of ``patches`` (name, text)."""
    for root, files in (("old", old), ("new", new)):
        for name, text in files.items():
            p = tmp / root / name
            p.parent.mkdir(parents=True, exist_ok=True)
            p.write_text(text)
        (tmp / root).mkdir(exist_ok=True)
    s = tmp / "series"
    s.mkdir()
    for name, text in patches:
        (s / name).write_text(text)
    (s / "series").write_text("".join(n + "\n" for n, _ in patches))
    return tmp / "old", tmp / "new", s


def tree(root: Path) -> dict[str, bytes]:
    """Every file under ``root`` but git's own (relative path -> bytes; a link as its target)."""
    out = {}
    for dirpath, dirs, files in os.walk(root):
        dirs[:] = [d for d in dirs if d != ".git"]
        for f in files:
            p = Path(dirpath) / f
            out[str(p.relative_to(root))] = b"<link>" + os.readlink(p).encode() if p.is_symlink() else p.read_bytes()
    return out


def applied(new: Path, series: Path, work: Path) -> dict[str, bytes]:
    """``new`` with ``series`` applied by a GNU patch loop (-p1, fuzz 0)."""
    dest, failed = C.gnu_series(new, series, work / "applied")
    assert not failed, failed
    return tree(dest)


BASE = lines(60)
PATCHED = BASE.replace("line 30\n", "line 30 patched\n")


def test_moved_hunk_is_rewritten_at_its_new_place(tmp_path: Path) -> None:
    new_text = "header\n" * 5 + BASE
    old, new, s = make(
        tmp_path, {"f.txt": BASE}, {"f.txt": new_text}, [("p.patch", "desc\n\n" + udiff(BASE, PATCHED, "f.txt"))]
    )
    res = port_series(str(s), str(old), str(new), str(tmp_path / "out"))
    assert res.ok
    (h,) = res.patches[0].hunks()
    assert (h.status, h.offset) == ("moved", 5)
    text = (tmp_path / "out" / "p.patch").read_text()
    assert text.startswith("desc\n\n--- a/f.txt\n+++ b/f.txt\n@@ -32,7 +32,7 @@\n")
    assert applied(new, tmp_path / "out", tmp_path)["f.txt"] == ("header\n" * 5 + PATCHED).encode()


def test_unchanged_hunk_keeps_its_lines(tmp_path: Path) -> None:
    new_text = BASE.replace("line 55\n", "line 55 upstream\n")
    patch = udiff(BASE, PATCHED, "f.txt")
    old, new, s = make(tmp_path, {"f.txt": BASE}, {"f.txt": new_text}, [("p.patch", patch)])
    res = port_series(str(s), str(old), str(new), str(tmp_path / "out"))
    assert [h.status for h in res.patches[0].hunks()] == ["unchanged"]
    assert (tmp_path / "out" / "p.patch").read_text() == patch


def test_changed_context_is_merged_three_ways(tmp_path: Path) -> None:
    # inside the hunk's context, two lines away (git's merge conflicts on adjacent changes)
    new_text = BASE.replace("line 28\n", "line 28 upstream\n")
    old, new, s = make(tmp_path, {"f.txt": BASE}, {"f.txt": new_text}, [("p.patch", udiff(BASE, PATCHED, "f.txt"))])
    res = port_series(str(s), str(old), str(new), str(tmp_path / "out"))
    assert res.ok and [h.status for h in res.patches[0].hunks()] == ["merged"]
    want = new_text.replace("line 30\n", "line 30 patched\n").encode()
    assert applied(new, tmp_path / "out", tmp_path)["f.txt"] == want
    assert "+line 30 patched\n line 31\n" in (tmp_path / "out" / "p.patch").read_text()


def test_conflict_writes_markers_and_a_reject_and_stops(tmp_path: Path) -> None:
    new_text = BASE.replace("line 30\n", "line 30 upstream\n")
    p1 = udiff(BASE, PATCHED, "f.txt")
    later = udiff(BASE, BASE.replace("line 5\n", "line 5 second\n"), "g.txt")
    old, new, s = make(
        tmp_path,
        {"f.txt": BASE, "g.txt": BASE},
        {"f.txt": new_text, "g.txt": BASE},
        [("a.patch", p1), ("b.patch", later)],
    )
    out = tmp_path / "out"
    res = port_series(str(s), str(old), str(new), str(out))
    assert not res.ok
    assert [p.status for p in res.patches] == ["conflict", "not tried"]
    assert [h.status for h in res.patches[0].hunks()] == ["conflict"]
    assert not (out / "a.patch").exists() and (out / "a.patch.rej").read_text().startswith(
        "--- a/f.txt\n+++ b/f.txt\n@@"
    )
    marked = (out / "conflicts" / "a.patch" / "f.txt").read_text()
    assert "<<<<<<< NEW (a.patch)\nline 30 upstream\n=======\nline 30 patched\n>>>>>>> OLD+a.patch\n" in marked
    assert (out / "series").read_text() == "# a.patch  # not ported: conflict\n# b.patch  # not ported: not tried\n"


def test_one_hunk_of_two_conflicts(tmp_path: Path) -> None:
    patched = PATCHED.replace("line 5\n", "line 5 patched\n")
    new_text = BASE.replace("line 30\n", "line 30 upstream\n")
    old, new, s = make(tmp_path, {"f.txt": BASE}, {"f.txt": new_text}, [("p.patch", udiff(BASE, patched, "f.txt"))])
    res = port_series(str(s), str(old), str(new), None)
    assert [h.status for h in res.patches[0].hunks()] == ["unchanged", "conflict"]


def test_patch_already_upstream_is_left_out(tmp_path: Path) -> None:
    old, new, s = make(tmp_path, {"f.txt": BASE}, {"f.txt": PATCHED}, [("p.patch", udiff(BASE, PATCHED, "f.txt"))])
    res = port_series(str(s), str(old), str(new), str(tmp_path / "out"))
    assert res.ok and res.patches[0].status == "upstream"
    assert not (tmp_path / "out" / "p.patch").exists()
    assert (tmp_path / "out" / "series").read_text().startswith("# p.patch  # upstream in --to")


def test_create_and_delete(tmp_path: Path) -> None:
    patch = udiff(None, "new file\n", "n.txt") + udiff(BASE, None, "gone.txt")
    old, new, s = make(
        tmp_path, {"gone.txt": BASE, "f.txt": BASE}, {"gone.txt": BASE, "f.txt": "x\n" + BASE}, [("p.patch", patch)]
    )
    res = port_series(str(s), str(old), str(new), str(tmp_path / "out"))
    assert res.ok, res
    got = applied(new, tmp_path / "out", tmp_path)
    assert got["n.txt"] == b"new file\n" and "gone.txt" not in got


def test_stack_ports_cumulatively(tmp_path: Path) -> None:
    """The second patch's context is the first patch's output: each is ported onto NEW with the
    earlier ones ported."""
    p1 = BASE.replace("line 30\n", "line 30 first\n")
    p2 = p1.replace("line 31\n", "line 31 second\n")
    new_text = "top\n" + BASE
    old, new, s = make(
        tmp_path,
        {"f.txt": BASE},
        {"f.txt": new_text},
        [("1.patch", udiff(BASE, p1, "f.txt")), ("2.patch", udiff(p1, p2, "f.txt"))],
    )
    res = port_series(str(s), str(old), str(new), str(tmp_path / "out"))
    assert res.ok and [h.status for p in res.patches for h in p.hunks()] == ["moved", "moved"]
    assert applied(new, tmp_path / "out", tmp_path)["f.txt"] == ("top\n" + p2).encode()


def test_git_index_line_gets_new_blobs(tmp_path: Path) -> None:
    patch = "diff --git a/f.txt b/f.txt\nindex 1234567..89abcde 100644\n" + udiff(BASE, PATCHED, "f.txt")
    new_text = "top\n" + BASE
    old, new, s = make(tmp_path, {"f.txt": BASE}, {"f.txt": new_text}, [("p.patch", patch)])
    port_series(str(s), str(old), str(new), str(tmp_path / "out"))
    text = (tmp_path / "out" / "p.patch").read_text()

    def blob(text: str) -> str:
        done = subprocess.run(
            ["git", "hash-object", "--stdin"], input=text, capture_output=True, text=True, env=GIT_ENV
        )
        return done.stdout[:7]

    post = blob("top\n" + PATCHED)
    want = f"diff --git a/f.txt b/f.txt\nindex {blob(new_text)}..{post} 100644\n--- a/f.txt\n"
    assert text.startswith(want)
    assert "\n@@ -28,7 +28,7 @@\n" in text


def test_bad_input(tmp_path: Path) -> None:
    old, new, s = make(tmp_path, {"f.txt": lines(10)}, {"f.txt": BASE}, [("p.patch", udiff(BASE, PATCHED, "f.txt"))])
    with pytest.raises(InputError, match=r"p\.patch.*does not apply to --from"):
        port_series(str(s), str(old), str(new), None)
    (tmp_path / "full").mkdir()
    (tmp_path / "full" / "x").write_text("")
    with pytest.raises(InputError, match="not an empty directory"):
        port_series(str(s), str(new), str(new), str(tmp_path / "full"))


def test_cli_check_writes_nothing_and_exit_codes(tmp_path: Path) -> None:
    new_text = BASE.replace("line 30\n", "line 30 upstream\n")
    old, new, s = make(tmp_path, {"f.txt": BASE}, {"f.txt": new_text}, [("p.patch", udiff(BASE, PATCHED, "f.txt"))])
    r = CliRunner().invoke(cli, ["series", "port", str(s), "--from", str(old), "--to", str(new), "--check"])
    assert r.exit_code == 1, r.output
    assert "hunk 1 conflict" in r.output and "nothing written" in r.output
    r = CliRunner().invoke(cli, ["series", "port", str(s), "--from", str(old), "--to", str(new)])
    assert r.exit_code == 2 and "--out" in r.output
    r = CliRunner().invoke(cli, ["series", "port", str(s), "--from", str(old), "--to", str(old), "--check", "--json"])
    assert r.exit_code == 0 and '"unchanged": 1' in r.output


def test_cli_out_with_a_trailing_slash_prints_single_slashes(tmp_path: Path) -> None:
    """Before: `--out dir/` printed `dir//a.patch.rej` and `dir//conflicts/`."""
    new_text = BASE.replace("line 30\n", "line 30 upstream\n")
    old, new, s = make(tmp_path, {"f.txt": BASE}, {"f.txt": new_text}, [("a.patch", udiff(BASE, PATCHED, "f.txt"))])
    out = tmp_path / "out"
    r = CliRunner().invoke(cli, ["series", "port", str(s), "--from", str(old), "--to", str(new), "--out", f"{out}/"])
    assert r.exit_code == 1, r.output
    assert "//" not in r.output
    assert f"written: {out}/a.patch.rej, the conflicted files under {out}/conflicts/" in r.output


# --- against git am -3 ---------------------------------------------------------------------------


def git(cwd: Path, *args: str, check: bool = True) -> subprocess.CompletedProcess[str]:
    return subprocess.run(["git", *args], cwd=cwd, capture_output=True, text=True, check=check, env=GIT_ENV)


def git_am3(old: Path, new: Path, series: Path, work: Path) -> tuple[dict[str, bytes] | None, int]:
    """``git am -3`` of the series (made into commits on OLD) onto NEW: the tree, or None and
    the index of the patch git stopped at."""
    repo = work / "repo"
    shutil.copytree(old, repo, symlinks=True)
    git(repo, "init", "-q", "-b", "old")
    git(repo, "add", "-A")
    git(repo, "commit", "-q", "-m", "old")
    entries = [ln.split() for ln in (series / "series").read_text().split("\n") if ln and not ln.startswith("#")]
    names = [e[0] for e in entries]
    for name, *opts in entries:
        strip = next((o for o in opts if o.startswith("-p")), "-p1")
        git(repo, "apply", "--index", strip, str(series / name))
        git(repo, "commit", "-q", "--allow-empty", "-m", name)
    git(repo, "format-patch", "-q", "-o", str(work / "mbox"), f"HEAD~{len(names)}")
    git(repo, "checkout", "-q", "-b", "new", "HEAD~" + str(len(names)))
    for p in repo.iterdir():
        if p.name != ".git":
            shutil.rmtree(p) if p.is_dir() else p.unlink()
    shutil.copytree(new, repo, dirs_exist_ok=True, symlinks=True)
    git(repo, "add", "-A")
    git(repo, "commit", "-q", "--allow-empty", "-m", "new")
    mails = sorted((work / "mbox").iterdir())
    for k, m in enumerate(mails):
        if git(repo, "am", "-3", "-q", str(m), check=False).returncode != 0:
            git(repo, "am", "--abort", check=False)
            return None, k
    return tree(repo), len(mails)


WORDS = st.lists(st.sampled_from(["alpha", "beta", "gamma", "delta", "eps"]), min_size=30, max_size=60)


@settings(max_examples=30, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(base=WORDS, at=st.integers(0, 1000), up=st.integers(0, 1000), gap=st.integers(0, 12), data=st.data())
def test_port_agrees_with_git_am_3(
    tmp_path_factory: pytest.TempPathFactory, base: list[str], at: int, up: int, gap: int, data: st.DataObject
) -> None:
    """Wherever git merges cleanly the ported series leaves git's tree; where git conflicts,
    dryboot reports a conflict on the same patch."""
    work = tmp_path_factory.mktemp("am3")
    text = [f"{w} {i}\n" for i, w in enumerate(base)]
    n = len(text)
    i = at % n
    patched = [*text[:i], "patched line\n", *text[i + 1 :]]
    j = (i + (up % 7) - 3 + (gap if data.draw(st.booleans()) else 0)) % n
    upstream = [*text[:j], "upstream line\n", *text[j + 1 :]]
    if data.draw(st.booleans()):
        upstream = ["inserted\n"] * (up % 5) + upstream
    old, new, s = make(
        work,
        {"f.txt": "".join(text)},
        {"f.txt": "".join(upstream)},
        [("1.patch", udiff("".join(text), "".join(patched), "f.txt"))],
    )
    res = port_series(str(s), str(old), str(new), str(work / "out"))
    want, stopped = git_am3(old, new, s, work)
    if want is None:
        assert not res.ok and res.patches[stopped].status == "conflict"
    else:
        assert res.ok, res
        assert applied(new, work / "out", work) == want


@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(
    n=st.integers(20, 80), at=st.integers(0, 10_000), shift=st.integers(8, 40), ins=st.integers(0, 9), data=st.data()
)
def test_patch_and_upstream_edit_elsewhere_give_both(
    tmp_path_factory: pytest.TempPathFactory, n: int, at: int, shift: int, ins: int, data: st.DataObject
) -> None:
    """A random base, a patch, an upstream edit at least 7 lines away: the port holds both."""
    work = tmp_path_factory.mktemp("prop")
    text = [f"row {k} {data.draw(st.sampled_from('abc'))}\n" for k in range(n)]
    i = at % n
    j = (i + shift) % n
    if abs(i - j) < 8:
        j = (i + n // 2) % n
    if abs(i - j) < 8:
        return
    patched = [*text[:i], "patched\n", *text[i + 1 :]]
    upstream = list(text)
    upstream[j] = "upstream\n"
    upstream[j:j] = ["added upstream\n"] * ins
    both = list(upstream)
    both[i if i < j else i + ins] = "patched\n"
    old, new, s = make(
        work,
        {"f.txt": "".join(text)},
        {"f.txt": "".join(upstream)},
        [("1.patch", udiff("".join(text), "".join(patched), "f.txt"))],
    )
    res = port_series(str(s), str(old), str(new), str(work / "out"))
    assert res.ok, res
    assert applied(new, work / "out", work)["f.txt"] == "".join(both).encode()
    # the ported series reads applied to the tree it leaves, under dryboot's own engine
    again = work / "again"
    shutil.copytree(new, again)
    assert apply_series(str(work / "out"), str(again)).ok

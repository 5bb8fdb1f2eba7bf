"""Real patches mutated as people damage them, judged against GNU patch 2.7.6 and ``git apply``.

Seeds: the real Debian patches of ``tests/data/patches`` (see its SOURCE). The tree each applies
to is built from the patch itself (each file: its hunks' old sides, in order, with filler lines
between them), so the unmutated patch applies exactly. Mutations (hypothesis): a context line
removed, a hunk header's count hand-edited, a trailer appended (``-- `` signature, a ``---``
line), CRLF line endings, a NUL byte in an added line, a file name given spaces (unquoted).

For each mutant, ``series apply`` (the typed API), ``series status`` and ``hunks check`` are
compared with a GNU patch run (``-p1 -f --fuzz 0``) and ``git apply --check``:

- dryboot applies: GNU patch applies too and leaves the identical tree, and ``series status``
  on GNU's tree reads the patch applied;
- dryboot refuses (one line, :class:`InputError`) or fails: GNU patch or ``git apply`` refuses
  too -- both, except where GNU patch exits 0 having applied less than the patch says (a hunk
  dropped, which the compared trees show);
- ``hunks check`` finds a problem exactly when ``series apply`` refuses the patch for one.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import tempfile
from pathlib import Path

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from dryboot.errors import InputError
from dryboot.patching.parse import parse_patch
from dryboot.patching.recount import check_patch
from dryboot.patching.stack import apply_series, series_state

from . import corpus as C

SEEDS = sorted((Path(__file__).resolve().parent.parent / "data" / "patches").glob("*.*[hf]"))
ENV = {**os.environ, "LC_ALL": "C", "GIT_CONFIG_NOSYSTEM": "1", "HOME": tempfile.gettempdir()}


def _tree_for(patch: bytes) -> dict[str, bytes]:
    """Files the patch applies to exactly: per file, each hunk's old side at its header's line."""
    pf = parse_patch(patch, "seed")
    files: dict[str, bytes] = {}
    for sec in pf.sections:
        if sec.old_absent or sec.old is None:
            continue
        rel = sec.old.stripped(1)
        assert rel is not None
        out: list[bytes] = []
        for h in sec.hunks:
            start = h.old_start if h.old_count else h.old_start + 1
            while len(out) < start - 1:
                out.append(b"filler %d\n" % len(out))
            out.extend(bl.text + (b"\n" if bl.newline else b"") for bl in h.lines if bl.kind != 0x2B)
        out.append(b"the end\n")
        files[rel] = b"".join(out)
    return files


def _mutate(data: bytes, kind: str, pick: int) -> bytes:
    lines = data.split(b"\n")
    ctx = [k for k, ln in enumerate(lines) if ln.startswith(b" ") and k > 0]
    hdr = [k for k, ln in enumerate(lines) if ln.startswith(b"@@ -")]
    added = [k for k, ln in enumerate(lines) if ln.startswith(b"+") and not ln.startswith(b"+++")]
    if kind == "drop-context" and ctx:
        del lines[ctx[pick % len(ctx)]]
    elif kind == "edit-header" and hdr:
        k = hdr[pick % len(hdr)]
        a, _, rest = lines[k].partition(b" @@")
        lines[k] = a + (b"1" if pick % 2 else b"") + b" @@" + rest  # a count grown tenfold (+ a digit)
    elif kind == "signature":
        return data + b"-- \n2.39.2\n\n"
    elif kind == "dashes-trailer":
        return data + b"---\ntg: (0123abc..) t/fix (depends on: master)\n"
    elif kind == "crlf":
        return data.replace(b"\n", b"\r\n")
    elif kind == "nul" and added:
        k = added[pick % len(added)]
        lines[k] = lines[k] + b"\x00tail"
    elif kind == "space-name":
        return data.replace(b"a/src/", b"a/src dir/").replace(b"b/src/", b"b/src dir/")
    return b"\n".join(lines)


def _gnu(tree: Path, patch: Path) -> int:
    return C.gnu_apply(tree, patch, [])[0]


def _git_check(files: dict[str, bytes], patch: Path, work: Path) -> int:
    repo = work / "git"
    for rel, data in files.items():
        (repo / rel).parent.mkdir(parents=True, exist_ok=True)
        (repo / rel).write_bytes(data)
    subprocess.run(["git", "init", "-q", str(repo)], check=True, env=ENV)
    return subprocess.run(["git", "apply", "--check", str(patch)], cwd=repo, capture_output=True, env=ENV).returncode


def _write(root: Path, files: dict[str, bytes]) -> None:
    for rel, data in files.items():
        (root / rel).parent.mkdir(parents=True, exist_ok=True)
        (root / rel).write_bytes(data)


KINDS = ["none", "drop-context", "edit-header", "signature", "dashes-trailer", "crlf", "nul", "space-name"]


@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(seed=st.sampled_from(SEEDS), kind=st.sampled_from(KINDS), pick=st.integers(0, 10**6))
def test_mutated_real_patch_agrees_with_gnu_and_git(seed: Path, kind: str, pick: int) -> None:
    original = seed.read_bytes()
    files = _tree_for(original)
    data = _mutate(original, kind, pick)
    with tempfile.TemporaryDirectory() as d:
        work = Path(d)
        s = work / "stack"
        s.mkdir()
        (s / "p.patch").write_bytes(data)
        (s / "series").write_text("p.patch\n")
        gnu, mine = work / "gnu", work / "mine"
        _write(gnu, files)
        _write(mine, files)
        gnu_rc = _gnu(gnu, s / "p.patch")
        git_rc = _git_check(files, s / "p.patch", work)
        try:
            problems = [p for p in check_patch(data, "p") if p.kind != "extra"]
        except InputError:
            problems = None
        try:
            res = apply_series(str(s), str(mine))
            verdict = "applied" if res.ok else "failed"
        except InputError as exc:
            verdict = "refused"
            assert "\n" not in exc.line()
        if verdict == "applied":
            assert gnu_rc == 0, (kind, "dryboot applied, GNU patch did not")
            assert C.diff_keys(C.snapshot(mine), C.snapshot(gnu)) == [], kind
            assert series_state(str(s), str(gnu)).state.prefix == 1
            assert problems == []
        else:
            # refused or failed: GNU or git refuse too, or GNU "succeeded" on less than the patch
            gnu_silent = gnu_rc == 0 and C.diff_keys(C.snapshot(gnu), _applied_whole(files, original, work)) != []
            assert gnu_rc != 0 or git_rc != 0 or gnu_silent, (kind, verdict, gnu_rc, git_rc)
            if verdict == "refused" and problems:
                assert gnu_rc != 0 or git_rc != 0 or gnu_silent
        shutil.rmtree(work, ignore_errors=True)


def _applied_whole(files: dict[str, bytes], original: bytes, work: Path) -> dict[str, bytes]:
    """The tree the unmutated patch gives (GNU patch on a fresh copy)."""
    ref = work / "ref"
    _write(ref, files)
    p = work / "orig.patch"
    p.write_bytes(original)
    assert _gnu(ref, p) == 0
    return C.snapshot(ref)


def test_every_seed_applies_unmutated(tmp_path: Path) -> None:
    assert len(SEEDS) >= 5
    for seed in SEEDS:
        files = _tree_for(seed.read_bytes())
        t = tmp_path / seed.name / "t"
        _write(t, files)
        s = tmp_path / seed.name / "s"
        s.mkdir()
        shutil.copy(seed, s / "p.patch")
        (s / "series").write_text("p.patch\n")
        assert apply_series(str(s), str(t)).ok, seed.name

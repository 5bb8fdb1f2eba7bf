"""Differential property test against GNU patch: seeds are real source files of the Python
standard library on this machine, edits are random, patches are made by ``diff -u``."""

from __future__ import annotations

import os
import random
import subprocess
import sysconfig
import tempfile
from pathlib import Path

import pytest
from hypothesis import HealthCheck, event, given, settings
from hypothesis import strategies as st

from dryboot.patching.parse import parse_patch
from dryboot.patching.place import run_hunks, sides, split_keep

from .helpers import gnu_patch


def _seeds() -> list[Path]:
    lib = Path(sysconfig.get_paths()["stdlib"])
    files = sorted(p for p in lib.glob("*.py") if 2_000 < p.stat().st_size < 60_000)
    return files[:200]


SEEDS = _seeds()


def _diff(old: bytes, new: bytes, context: int) -> bytes:
    with tempfile.TemporaryDirectory() as d:
        Path(d, "a").write_bytes(old)
        Path(d, "b").write_bytes(new)
        p = subprocess.run(["diff", f"-U{context}", "a", "b"], cwd=d, capture_output=True)
        assert p.returncode in (0, 1)
        return p.stdout


def _edit(lines: list[bytes], rnd: random.Random, n_edits: int) -> list[bytes]:
    out = list(lines)
    for _ in range(n_edits):
        if not out:
            out.append(b"new\n")
            continue
        i = rnd.randrange(len(out))
        op = rnd.choice(["del", "ins", "mod", "dup"])
        if op == "del":
            del out[i : i + rnd.randint(1, 3)]
        elif op == "ins":
            out[i:i] = [f"    inserted {rnd.random():.6f}\n".encode()] * rnd.randint(1, 3)
        elif op == "mod":
            out[i] = out[i].rstrip(b"\n") + b"  # changed\n"
        else:
            out[i:i] = out[max(0, i - 2) : i + 1]  # duplicated lines make ties and offsets
    return out


def _shift(lines: list[bytes], rnd: random.Random) -> list[bytes]:
    """Unrelated edits to the target (lines added/removed), which make hunks land at offsets."""
    out = list(lines)
    for _ in range(rnd.randint(1, 4)):
        i = rnd.randrange(len(out) + 1)
        if rnd.random() < 0.5 and out:
            del out[i : i + rnd.randint(1, 5)]
        else:
            out[i:i] = [b"# unrelated\n"] * rnd.randint(1, 7)
    return out


def _engine(data: bytes, patch: bytes, reverse: bool, fuzz: int = 0):  # type: ignore[no-untyped-def]
    pf = parse_patch(patch, "p")
    pf.require_valid()
    return run_hunks(split_keep(data), [sides(h, reverse) for h in pf.sections[0].hunks], fuzz)


def _census(run) -> list[tuple[int, str, int]]:  # type: ignore[no-untyped-def]
    out = []
    for r in run.results:
        if r.status == "failed":
            out.append((r.number, "FAILED", 0))
        elif r.status == "fuzz":
            out.append((r.number, "fuzz", r.offset))
        elif r.offset:
            out.append((r.number, "offset", r.offset))
    return out


CASE = st.tuples(
    st.integers(0, len(SEEDS) - 1),
    st.integers(0, 2**32 - 1),
    st.integers(1, 8),
    st.sampled_from([3, 3, 1, 0]),
    st.booleans(),
)
SETTINGS = settings(max_examples=300, deadline=None, derandomize=True, suppress_health_check=[HealthCheck.too_slow])


@pytest.mark.skipif(not SEEDS, reason="no standard library sources found")
@SETTINGS
@given(CASE)
def test_forward_and_reverse_match_gnu_patch(case: tuple[int, int, int, int, bool]) -> None:
    idx, seed, n_edits, context, shifted = case
    rnd = random.Random(seed)
    old = SEEDS[idx].read_bytes()
    old_lines = split_keep(old)
    new = b"".join(_edit(old_lines, rnd, n_edits))
    if rnd.random() < 0.2:
        new = new.rstrip(b"\n")  # no final newline on the new side
    patch = _diff(old, new, context)
    if not patch:
        return
    target = b"".join(_shift(old_lines, rnd)) if shifted else old
    mine = _engine(target, patch, reverse=False)
    rc, theirs, notable = gnu_patch(target, patch)
    event(f"gnu exit {rc}, offsets reported: {bool(notable)}")
    assert (rc == 0) == mine.ok
    assert _census(mine) == notable
    if rc == 0:
        assert mine.data == theirs
        if not shifted:
            assert mine.data == new
        # reverse, on the patched result
        back = _engine(mine.data, patch, reverse=True)
        rc2, theirs2, notable2 = gnu_patch(mine.data, patch, reverse=True)
        assert (rc2 == 0) == back.ok
        assert _census(back) == notable2
        if rc2 == 0:
            assert back.data == theirs2
            if not shifted and context:
                assert back.data == old


@pytest.mark.skipif(not SEEDS, reason="no standard library sources found")
@SETTINGS
@given(CASE, st.integers(0, 2))
def test_shuffled_context_same_decision_as_gnu_fuzz_0(case: tuple[int, int, int, int, bool], fuzz: int) -> None:
    idx, seed, n_edits, context, _ = case
    rnd = random.Random(seed)
    old = SEEDS[idx].read_bytes()
    old_lines = split_keep(old)
    new = b"".join(_edit(old_lines, rnd, n_edits))
    patch = _diff(old, new, max(context, 1))
    if not patch:
        return
    # shuffle some lines of the target near the changes: context may no longer match
    target_lines = list(old_lines)
    starts = [h.old_start for h in parse_patch(patch, "p").sections[0].hunks]
    for _ in range(rnd.randint(1, 6)):
        near = rnd.choice(starts) + rnd.randint(-2, 6)
        i = min(max(near - 1, 0), len(target_lines) - 1)
        j = min(len(target_lines) - 1, i + rnd.randint(1, 4))
        target_lines[i], target_lines[j] = target_lines[j], target_lines[i]
    target = b"".join(target_lines)
    mine = _engine(target, patch, reverse=False, fuzz=fuzz)
    rc, theirs, notable = gnu_patch(target, patch, fuzz=fuzz)
    event(f"fuzz {fuzz}: gnu exit {rc}")
    assert (rc == 0) == mine.ok
    assert [r.status == "failed" for r in mine.results] == [
        any(n == r.number and k == "FAILED" for n, k, _ in notable) for r in mine.results
    ]
    assert _census(mine) == notable
    if rc == 0:
        assert mine.data == theirs


def test_seeds_are_real_files() -> None:
    assert len(SEEDS) >= 50
    assert all(os.path.getsize(p) > 2000 for p in SEEDS)

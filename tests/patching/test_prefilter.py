"""The shortcuts of :func:`dryboot.patching.apply.apply_patch` change nothing but speed.

``prefilter`` rejects a hunk whose core is nowhere in the file without searching, and ``quick``
stops at the first hunk that cannot fit (it also rejects a first hunk whose first changed line
is absent without building its sides). The state of a tree (which patches read applied, which
applicable) rests on ``ok`` of these quick runs, so each is checked here against the full search
on random edits of real source files, in both directions and at fuzz 0 to 2, on the pristine, the
patched and an unrelatedly edited target.
"""

from __future__ import annotations

import random
import subprocess
import tempfile
from pathlib import Path

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from dryboot.patching.apply import Tree, apply_patch
from dryboot.patching.parse import parse_patch

from .test_differential import SEEDS, _edit, _shift


def _diff(old: bytes, new: bytes, context: int) -> bytes:
    with tempfile.TemporaryDirectory() as d:
        Path(d, "a").write_bytes(old)
        Path(d, "b").write_bytes(new)
        p = subprocess.run(
            ["diff", f"-U{context}", "--label", "a/f.py", "--label", "b/f.py", "a", "b"], cwd=d, capture_output=True
        )
        assert p.returncode in (0, 1)
        return p.stdout


def _census(out) -> list[tuple[str, int]]:  # type: ignore[no-untyped-def]
    return [(r.status, r.offset) for r in out.hunks()]


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.integers(0, len(SEEDS) - 1), st.integers(0, 2**32 - 1), st.sampled_from([0, 1, 3]))
def test_quick_and_prefiltered_runs_agree_with_the_full_search(seed: int, salt: int, context: int) -> None:
    rnd = random.Random(salt)
    old = SEEDS[seed].read_bytes().splitlines(keepends=True)
    new = _edit(old, rnd, rnd.randint(1, 6))
    patch = _diff(b"".join(old), b"".join(new), context)
    if not patch:
        return
    pf = parse_patch(patch, "p.patch")
    targets = {"pristine": old, "patched": new, "shifted": _shift(old, rnd), "shifted-patched": _shift(new, rnd)}
    for what, lines in targets.items():
        with tempfile.TemporaryDirectory() as d:
            Path(d, "f.py").write_bytes(b"".join(lines))
            tree = Tree.open(d)
            for reverse in (False, True):
                for fuzz in (0, 1, 2):
                    full = apply_patch(tree, pf, 1, reverse, fuzz, measure=False)
                    pre = apply_patch(tree, pf, 1, reverse, fuzz, measure=False, prefilter=True)
                    quick = apply_patch(tree, pf, 1, reverse, fuzz, measure=False, prefilter=True, quick=True)
                    where = f"{what}, reverse={reverse}, fuzz={fuzz}"
                    assert quick.ok == full.ok, where
                    # the prefilter fails at once only hunks that would fail anyway: the same
                    # census (offsets of failures aside, which the search may move) and output
                    assert [s for s, _ in _census(pre)] == [s for s, _ in _census(full)], where
                    if full.ok:
                        assert _census(pre) == _census(full), where
                        assert pre.tree.read("f.py") == full.tree.read("f.py"), where

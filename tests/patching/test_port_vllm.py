"""Downstream vLLM stacks carried across releases with ``series port`` (issue 30): the release
trees are the wheels fetched by package name (:func:`dryboot.boot.releases.release_tree`), so
these tests need the network.

- nixpkgs' ``0003-propagate-pythonpath.patch`` (``tests/data/stacks/nixpkgs-vllm``, written for
  vLLM 0.19.0) from 0.27.1 through every release to 0.33.0;
- dryboot's own sliding-window group-size patch (``examples/patches/pad-sliding-window-buckets``,
  written on 0.28.0) from 0.28.0 to 0.32.0, and its conflict on 0.33.0 (0.33 rewrote the lines
  it changes: both hunks conflict, reported, nothing guessed);
- the reference deployment's ``main`` stack (``examples/patches/promote-divisor``) to 0.29.0,
  and its conflict on 0.30.0 (0.30 adds a function where the patch adds its own).

Each ported series is checked: GNU patch applies it to the newer release with no fuzz and no
offset, and dryboot reads it applied there.
"""

from __future__ import annotations

import itertools
import shutil
from pathlib import Path

import pytest

from dryboot.boot.releases import release_tree
from dryboot.patching.port import port_series
from dryboot.patching.stack import series_state

from . import corpus as C

REPO = Path(__file__).resolve().parents[2]
NIXPKGS = REPO / "tests" / "data" / "stacks" / "nixpkgs-vllm" / "patches"
SLIDING = REPO / "examples" / "patches" / "pad-sliding-window-buckets"
MAIN = REPO / "examples" / "patches" / "promote-divisor"

pytestmark = [pytest.mark.network, pytest.mark.slow]


def chain(series: Path, releases: list[str], work: Path) -> list[tuple[str, str, list[str], dict[str, int]]]:
    """Port ``series`` release to release; per pair: (old, new, patch states, hunk counts)."""
    out = []
    cur = series
    for old, new in itertools.pairwise(releases):
        dest = work / f"to-{new}"
        res = port_series(str(cur), str(release_tree(old, "--from-version")), str(release_tree(new)), str(dest))
        out.append((old, new, [p.status for p in res.patches], res.counts()))
        if not res.ok:
            break
        check_applies(dest, release_tree(new), work / f"check-{new}")
        cur = dest
    return out


def check_applies(series: Path, tree: Path, work: Path) -> None:
    """GNU patch applies ``series`` to ``tree`` with no fuzz and no offset; dryboot reads it applied."""
    shutil.copytree(tree / "vllm", work / "vllm", symlinks=True)
    for name, opts in C.read_entries(series):
        rc, offsets, out = C.gnu_apply(work, series / name, opts)
        assert rc == 0 and not offsets and "fuzz" not in out, out
    state = series_state(str(series), str(work)).state
    assert state.prefix == len(state.statuses), [s.state for s in state.statuses]


def test_nixpkgs_stack_through_every_release(tmp_path: Path) -> None:
    got = chain(NIXPKGS, ["0.27.1", "0.28.0", "0.29.0", "0.30.0", "0.31.0", "0.32.0", "0.33.0"], tmp_path)
    assert [(o, n, s) for o, n, s, _ in got] == [
        (o, n, ["ported"])
        for o, n in zip(
            ["0.27.1", "0.28.0", "0.29.0", "0.30.0", "0.31.0", "0.32.0"],
            ["0.28.0", "0.29.0", "0.30.0", "0.31.0", "0.32.0", "0.33.0"],
            strict=True,
        )
    ]


def test_sliding_window_patch_to_032_then_conflicts(tmp_path: Path) -> None:
    got = chain(SLIDING, ["0.28.0", "0.29.0", "0.30.0", "0.31.0", "0.32.0", "0.33.0"], tmp_path)
    assert [s for _, _, s, _ in got] == [["ported"]] * 4 + [["conflict"]]
    assert got[-1][3] == {"unchanged": 0, "moved": 0, "merged": 0, "upstream": 0, "resolved": 0, "conflict": 2}
    assert (tmp_path / "to-0.33.0" / "0001-group-size-for-sliding-window-buckets.patch.rej").is_file()


def test_reference_deployment_main_stack(tmp_path: Path) -> None:
    got = chain(MAIN, ["0.28.0", "0.29.0", "0.30.0"], tmp_path)
    assert [s for _, _, s, _ in got] == [["ported", "ported"], ["ported", "conflict"]]
    assert got[1][3]["conflict"] == 1


def test_committed_example_is_what_port_writes(tmp_path: Path) -> None:
    """``examples/ported-0.29.0`` (booted by ``tests/boot/test_port_arms.py``) is exactly what
    ``series port --from-version 0.28.0 --to-version 0.29.0`` writes."""
    out = tmp_path / "out"
    res = port_series(str(SLIDING), str(release_tree("0.28.0")), str(release_tree("0.29.0")), str(out))
    assert res.ok
    kept = REPO / "examples" / "ported-0.29.0" / "pad-sliding-window-buckets"
    assert sorted(p.name for p in out.iterdir()) == sorted(p.name for p in kept.iterdir())
    for p in out.iterdir():
        assert p.read_bytes() == (kept / p.name).read_bytes(), p.name

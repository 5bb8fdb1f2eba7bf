"""Faults on the local backend: a worker killed mid-matrix, a cell that hangs, a tree that does
not import. Every other cell's result is kept, the failed one is named, the exit code says so,
and a re-run answers from the cache all but the failed tasks.

The matrices here are of dryboot's modelled arms (and a tree that fails to import), so no boot
environment is needed: the faults are the backend's, whatever the task.
"""

from __future__ import annotations

import sys
from pathlib import Path

import pytest
from matrix_help import QWEN3_06B, QWEN25_15B, write_matrix

from dryboot.matrix.cache import Cache
from dryboot.matrix.local import LocalBackend
from dryboot.matrix.model import MatrixResult
from dryboot.matrix.run import run_matrix
from dryboot.matrix.spec import load_matrix
from dryboot.matrix.worker import TEST_HOOK

pytestmark = pytest.mark.slow

MATRIX = f"""
gpus = ["L40S", "RTX 3090"]
timeout = {{timeout}}
[models]
small = "{QWEN3_06B}"
mid = "{QWEN25_15B}"
[flags]
pinned = "vllm serve --max-model-len 4096 --kv-cache-memory-bytes 2G"
[arms.upstream]
vllm-version = "0.28.0"
[arms.pad]
vllm-version = "0.28.0"
grouping = "pad-sliding-window-buckets"
{{more}}
"""
#: tasks per run: 4 cells x (dryboot's plan + 2 arms); the arm "upstream" has the plan's inputs
#: (release 0.28.0, its own policies), so its answers are the plan's (one key, run once)
TASKS = 12


def _run(tmp_path: Path, *, timeout: float = 60, more: str = "", grace: float = 30.0) -> MatrixResult:
    m = load_matrix(write_matrix(tmp_path, MATRIX.format(timeout=timeout, more=more)), tmp_path / "models")
    with LocalBackend(2, grace_s=grace) as backend:
        return run_matrix(m, backend, Cache(tmp_path / "cache"), None, tmp_path / "work")


def _by_id(res: MatrixResult) -> dict[str, object]:
    return {c.id: c for c in res.cells}


def test_a_worker_killed_mid_matrix_loses_no_cell(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    marker = tmp_path / "killed"
    monkeypatch.setenv(TEST_HOOK, f"kill-once:mid|L40S|pinned|pad:{marker}")
    res = _run(tmp_path)
    assert marker.is_file(), "the hook did not kill its worker"
    assert res.exit_code == 0 and all(c.status == "met" for c in res.cells)
    cell = _by_id(res)["mid|L40S|pinned"]
    pad = cell.arms["pad"]  # type: ignore[attr-defined]
    assert pad.status == "ok" and pad.tokens and pad.worker != marker.read_text()  # retried elsewhere


def test_a_worker_that_dies_twice_is_an_error_named_and_rerun_alone(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    kills = tmp_path / "kills"
    monkeypatch.setenv(TEST_HOOK, f"kill:small|RTX 3090|pinned|pad:{kills}")
    res = _run(tmp_path)
    ran = kills.read_text().split()
    assert len(ran) == 2 and len(set(ran)) == 2, ran  # once, then once more in a fresh process
    assert res.exit_code == 1
    bad = [c for c in res.cells if c.status != "met"]
    assert [c.id for c in bad] == ["small|RTX 3090|pinned"]
    assert bad[0].status == "error" and "died twice" in (bad[0].why or "") and "arm pad" in (bad[0].why or "")
    assert sum(c.status == "met" for c in res.cells) == 3
    # the re-run: every other task from the cache, the failed one run again (and now met)
    monkeypatch.delenv(TEST_HOOK)
    again = _run(tmp_path)
    assert again.exit_code == 0 and again.cache_hits == TASKS - 1
    fresh = [(c.id, a) for c in again.cells for a, r in c.arms.items() if not r.cached]
    assert fresh == [("small|RTX 3090|pinned", "pad")]


def test_a_cell_that_hangs_times_out_named_and_the_others_are_kept(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv(TEST_HOOK, "hang:mid|RTX 3090|pinned|pad")
    res = _run(tmp_path, timeout=1, grace=4)
    assert res.exit_code == 1
    cells = _by_id(res)
    hung = cells["mid|RTX 3090|pinned"]
    assert hung.status == "error" and "timed out" in (hung.why or "")  # type: ignore[attr-defined]
    assert hung.arms["upstream"].status == "ok"  # type: ignore[attr-defined]  # its other arm kept
    assert [c.id for c in res.cells if c.status == "met"] == [
        "small|L40S|pinned",
        "small|RTX 3090|pinned",
        "mid|L40S|pinned",
    ]
    monkeypatch.delenv(TEST_HOOK)
    again = _run(tmp_path)
    assert again.exit_code == 0 and again.cache_hits == TASKS - 1


def test_a_tree_that_does_not_import_is_named_and_the_other_arms_kept(tmp_path: Path) -> None:
    tree = tmp_path / "broken"
    (tree / "vllm").mkdir(parents=True)
    (tree / "vllm" / "__init__.py").write_text('raise ImportError("this tree is broken on purpose")\n')
    more = f'[arms.broken]\ntree = "{tree}"\npython = "{sys.executable}"\n'
    res = _run(tmp_path, more=more)
    assert res.exit_code == 1
    for c in res.cells:
        assert c.status == "error" and c.agreement == "error"
        assert c.arms["broken"].status == "error" and "does not import" in (c.arms["broken"].reason or "")
        assert c.arms["upstream"].status == "ok" and c.arms["pad"].status == "ok"
    # errors are never cached: a re-run answers the 12 other tasks from the cache, boots the 4 again
    again = _run(tmp_path, more=more)
    assert again.cache_hits == TASKS and again.exit_code == 1

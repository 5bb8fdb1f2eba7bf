"""vLLM sizes the KV cache from the worker with the least memory: each worker logs its own
``Available KV cache memory``, and ``get_kv_cache_configs`` keeps the fewest blocks of all. These
tests work tp2.log's figures by hand (vLLM 0.28.0 wrote it; figures.json holds what vLLM computed)
and fail when the rule takes any worker but the smallest (issue 38, item 2).

By hand, from figures.json: Qwen3-Next at TP 2 pools 12 layers per group, each page padded to
557,056 B, so one pool block is 557,056 x 12 = 6,684,672 B. ``Available KV cache memory: X GiB``
is ``round(bytes / 2**30, 2)``, so X stands for every byte count in
``[ceil((X - 0.005) * 2**30), ceil((X + 0.005) * 2**30) - 1]``. vLLM 0.28.0 prints ``GPU KV cache
size`` as ``concurrency x max_model_len`` with ``concurrency = blocks / 488``: a request needs
cdiv(262,144, 544) = 482 blocks of the attention group and 6 of the three mamba groups
(figures.json: 8,339 blocks, concurrency 17.0881... = 8,339 / 488).
"""

from __future__ import annotations

import io
import math
from fractions import Fraction
from pathlib import Path

from dryboot.checklog.check import LogReport, check_lines
from dryboot.checklog.parse import iter_relevant_lines

from .conftest import DATA, REPO, figures

CONFIG = str(REPO / "examples" / "models" / "Qwen3-Next-80B-A3B-Thinking.config.json")
POOL_BLOCK = 557_056 * 12
BLOCKS_PER_REQUEST = math.ceil(262_144 / 544) + 6
GIB = 2**30


def interval(gib: str) -> tuple[int, int]:
    """The byte counts that print as ``gib`` GiB (exact arithmetic, not dryboot's function)."""
    x = Fraction(gib)
    return math.ceil((x - Fraction(1, 200)) * GIB), math.ceil((x + Fraction(1, 200)) * GIB) - 1


def tokens(blocks: int) -> int:
    return int(Fraction(blocks, BLOCKS_PER_REQUEST) * 262_144)


def _check(text: str) -> LogReport:
    boots = tuple(check_lines(iter_relevant_lines(io.BytesIO(text.encode())), source="tp2", model_path=CONFIG))
    return LogReport("tp2", boots)


def test_the_hand_worked_figures_are_vllms() -> None:
    """The arithmetic of this module reproduces what vLLM computed for tp2.log."""
    vllm = figures()["scenarios"]["tp2"]["vllm"]
    assert min(b // POOL_BLOCK for b in vllm["available_memory"]) == vllm["num_blocks"] == 8339
    assert Fraction(vllm["num_blocks"], BLOCKS_PER_REQUEST) == Fraction(vllm["concurrency"]).limit_denominator(1000)
    assert tokens(8339) == vllm["tokens"] == 4_479_546


def test_the_budget_is_the_smallest_workers_interval() -> None:
    """tp2.log: Worker_TP0 logs 51.94 GiB, Worker_TP1 51.92 GiB; the budget is 51.92's interval
    and the logged 4,479,546 tokens (8,339 blocks) lie inside it, not inside 51.94's."""
    text = (DATA / "tp2.log").read_text()
    (boot,) = _check(text).boots
    assert boot.report is not None and boot.report.budget is not None
    assert (boot.report.budget.lo, boot.report.budget.hi) == interval("51.92") == (55_743_306_793, 55_754_044_211)
    low, high = (b // POOL_BLOCK for b in interval("51.92"))
    assert low <= 8339 <= high
    assert min(b // POOL_BLOCK for b in interval("51.94")) > 8339  # the larger worker gives more blocks
    (capacity,) = [c for c in boot.report.comparison.checks if c.line.kind.name == "CAPACITY"]
    assert capacity.status == "matches"
    assert boot.status == "matches"


def _with_workers(tp0: str, tp1: str) -> str:
    text = (DATA / "tp2.log").read_text()
    text = text.replace("Available KV cache memory: 51.94 GiB", f"Available KV cache memory: {tp0} GiB")
    return text.replace("Available KV cache memory: 51.92 GiB", f"Available KV cache memory: {tp1} GiB")


def test_a_capacity_that_fits_only_the_larger_worker_differs() -> None:
    """Worker_TP1's line edited to 51.00 GiB (TP0's to the real 51.92): the logged capacity is
    what 51.92 GiB gives, the larger worker's; vLLM would have kept TP1's fewer blocks
    (51.00 GiB: at most 8,192 blocks, 4,400,468 tokens), so the line differs."""
    report = _check(_with_workers("51.92", "51.00"))
    (boot,) = report.boots
    assert boot.report is not None and boot.report.budget is not None
    assert (boot.report.budget.lo, boot.report.budget.hi) == interval("51.00")
    assert max(b // POOL_BLOCK for b in interval("51.00")) < 8339
    assert boot.status == "differs" and report.exit_code == 1


def test_the_smaller_worker_decides_whichever_rank_it_is() -> None:
    """Worker_TP0 edited to 60.00 GiB: TP1's 51.92 still decides, and every line matches."""
    (boot,) = _check(_with_workers("60.00", "51.92")).boots
    assert boot.report is not None and boot.report.budget is not None
    assert (boot.report.budget.lo, boot.report.budget.hi) == interval("51.92")
    assert boot.status == "matches"


def test_each_ranks_line_is_kept_with_its_rank(tmp_path: Path) -> None:
    """The budget's description names each worker's figure with its process."""
    (boot,) = _check((DATA / "tp2.log").read_text()).boots
    assert boot.report is not None and boot.report.budget is not None
    source = boot.report.budget.source
    assert "51.94 GiB (Worker_TP0)" in source and "51.92 GiB (Worker_TP1)" in source
    assert "fewest blocks of all workers" in source

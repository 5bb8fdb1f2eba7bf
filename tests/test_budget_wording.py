"""The budget verdict's figures as printed (new user's trial, item 15): two different byte counts
never print as the same GiB figure, and a request under 0.01 GiB never prints as 0.00 GiB."""

from __future__ import annotations

from dataclasses import replace

from dryboot.vllm.worker.budget import budget_verdict
from dryboot.vllm.worker.interval import GIB, MIB, Interval
from test_budget import QWEN3_8B, _budget


def test_a_request_just_above_the_high_bound_is_not_printed_equal_to_it() -> None:
    """Before: 'one request needs 5.62 GiB, above even the high bound 5.62 GiB'."""
    b, _ = _budget(QWEN3_8B, "RTX 3090")
    high = b.available_kv_cache_bytes.high
    v = budget_verdict(b, high + 1)
    assert v.word == "won't"
    assert f"one request needs {high + 1:,} B, above even the high bound {high:,} B" in v.reason


def test_a_request_below_a_hundredth_of_a_gib_is_in_mib() -> None:
    """Before: 'one request needs 0.00 GiB' for a 4 MiB request."""
    b, _ = _budget(QWEN3_8B, "RTX 3090")
    b = replace(b, available_kv_cache_bytes=Interval(-2 * GIB, -GIB))
    v = budget_verdict(b, 4 * MIB)
    assert "one request needs 4.00 MiB, above even the high bound -1.00 GiB" in v.reason

"""The rounded budget interval and the candidates tried for a difference."""

from __future__ import annotations

from hypothesis import given
from hypothesis import strategies as st

from dryboot.checklog.compare import Candidate, alternatives, gib_interval, step_budgets
from dryboot.planner.plan import Policies
from dryboot.planner.policies import GROUPING_POLICIES, UNIFICATION_POLICIES
from dryboot.vllm.versions import VERSIONS

GIB = 1 << 30


def vllm_format_gib(b: int) -> str:
    """vllm/utils/mem_utils.py (0.28.0): ``f"{round(b / GiB_bytes, 2)}"``."""
    return f"{round(b / GIB, 2)}"


@given(st.integers(min_value=1, max_value=200 * GIB))
def test_interval_is_exactly_what_prints_so(b: int) -> None:
    text = vllm_format_gib(b)
    interval = gib_interval(text)
    assert interval is not None
    lo, hi = interval
    assert lo <= b <= hi
    assert vllm_format_gib(lo) == vllm_format_gib(hi) == text
    assert vllm_format_gib(lo - 1) != text and vllm_format_gib(hi + 1) != text


def test_interval_of_the_logged_figures() -> None:
    # "Available KV cache memory: 51.92 GiB" (tests/data/checklog/tp2.log, Worker_TP1)
    lo, hi = gib_interval("51.92")  # type: ignore[misc]
    assert lo <= 55_749_183_104 <= hi
    assert gib_interval("not a number") is None


def test_step_budgets_one_per_pool_block() -> None:
    assert step_budgets(10, 10, 4) == [10]
    assert step_budgets(10, 21, 4) == [10, 12, 16, 20]
    assert step_budgets(10, 21, None) == [10]


def test_alternatives_policies_then_versions() -> None:
    current = Candidate("0.28.0", Policies())
    alts = alternatives(current)
    assert current not in alts
    policies = [a for a in alts if a.version == "0.28.0"]
    versions = [a.version for a in alts if a.version != "0.28.0"]
    assert len(policies) == len(GROUPING_POLICIES) * len(UNIFICATION_POLICIES) - 1
    assert versions == [v for v in VERSIONS if v != "0.28.0"]
    assert alts.index(policies[-1]) < alts.index(next(a for a in alts if a.version != "0.28.0"))

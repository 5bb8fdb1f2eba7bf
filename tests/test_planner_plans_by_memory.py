"""``plans_by_memory`` (the budget's plans at its bounds and its pinned pool, the engine config and
the layout resolved once) gives what ``plan`` gives for the same flags, refusals included: a memory
flag read anywhere but the capacity and the notes would make them differ."""

from __future__ import annotations

import dataclasses
from pathlib import Path

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from dryboot.errors import InputError
from dryboot.planner.plan import Plan, plan, plans_by_memory
from dryboot.planner.runner import build_engine_args
from dryboot.vllm.gpus import parse_gpu

PUBLIC = Path(__file__).resolve().parent / "data" / "configs" / "public"
CONFIGS = sorted(p.name for p in PUBLIC.iterdir() if (p / "config.json").is_file())
FLAGS = (
    {"max-model-len": "8192"},
    {"max-model-len": "-1"},
    {"tensor-parallel-size": "2", "max-model-len": "32768"},
    {"pipeline-parallel-size": "2"},
    {"kv-cache-dtype": "fp8", "max-model-len": "65536"},
)
MEMORY = st.one_of(
    st.just({}),
    st.builds(lambda n: {"non_kv_memory_bytes": n}, st.integers(-(1 << 30), 100 << 30)),
    st.builds(lambda n: {"kv_cache_memory_bytes": n}, st.integers(-1, 60 << 30)),
)


def _outcome(fn: object) -> tuple[str, object]:
    """A plan with its memory error made comparable (an exception equals only itself), or the
    refusal's line."""
    try:
        p = fn()  # type: ignore[operator]
    except InputError as e:
        return "refused", e.line()
    assert isinstance(p, Plan)
    err = p.memory_error
    seen = None if err is None else (type(err).__name__, str(err), vars(err))
    return "plan", (dataclasses.replace(p, memory_error=None), seen)


@settings(max_examples=80, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(
    name=st.sampled_from(CONFIGS),
    gpu=st.sampled_from(["H100", "RTX 3090", "B200", "L40S"]),
    flags=st.sampled_from(FLAGS),
    memory=st.lists(MEMORY, min_size=1, max_size=4),
)
def test_plans_by_memory_are_the_plans(
    name: str, gpu: str, flags: dict[str, str], memory: list[dict[str, int]]
) -> None:
    try:
        model, args = build_engine_args(str(PUBLIC / name / "config.json"), flags, [])
    except InputError:
        return
    args = args.evolve(gpu=parse_gpu(gpu))
    try:
        at = plans_by_memory(model, args)
    except InputError as e:
        assert _outcome(lambda: plan(model, args)) == ("refused", e.line())
        return
    for m in memory:
        assert _outcome(lambda m=m: at(**m)) == _outcome(lambda m=m: plan(model, args.evolve(**m))), m

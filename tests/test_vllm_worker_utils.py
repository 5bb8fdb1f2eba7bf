"""``request_memory`` (dryboot.vllm.worker.utils): vLLM requests ``ceil(total x util)`` bytes, rounded up,
never to nearest. Every case below is one where ``round`` gives one byte less, so a formula that
rounds fails here; the figures are real CUDA totals of the GPU table (RTX 4090 torch OOM line, H100
Modal's posted byte count) and utilizations users pass."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from hypothesis import event, given
from hypothesis import strategies as st

from dryboot.planner.runner import build_engine_args
from dryboot.vllm.engine_args import EngineArgs
from dryboot.vllm.gpus import parse_gpu
from dryboot.vllm.model_executor.model_loader.loader import model_weights
from dryboot.vllm.versions import rules_for
from dryboot.vllm.worker.budget import estimate_budget
from dryboot.vllm.worker.profile_run import forward_shape
from dryboot.vllm.worker.utils import request_memory

REPO = Path(__file__).resolve().parents[1]
QWEN3_8B = REPO / "tests/data/checklog/public/configs/Qwen--Qwen3-8B.config.json"

#: (CUDA total bytes, --gpu-memory-utilization, the product as a float prints, vLLM's ceil)
CASES = [
    (25426206392, 0.85, "21612275433.2", 21612275434),
    (25426206392, 0.95, "24154896072.399998", 24154896073),
    (85520809984, 0.8, "68416647987.200005", 68416647988),
    (85520809984, 0.92, "78679145185.28", 78679145186),
    (42298834944, 0.8, "33839067955.2", 33839067956),
    (25297357373, 0.5, "12648678686.5", 12648678687),  # a half: round() goes to the even neighbour
]


@pytest.mark.parametrize(("total", "util", "product", "requested"), CASES)
def test_request_memory_rounds_up_where_round_would_not(total: int, util: float, product: str, requested: int) -> None:
    assert repr(total * util) == product  # the float vLLM's math.ceil sees
    assert round(total * util) == requested - 1  # the case tells ceil from round
    assert request_memory(total, util) == requested


@pytest.mark.parametrize(("total", "util", "product", "requested"), CASES)
def test_the_kv_budget_from_a_non_kv_figure_uses_the_same_ceil(
    total: int, util: float, product: str, requested: int
) -> None:
    args = EngineArgs(gpu_memory_bytes=total, gpu_memory_utilization=util, non_kv_memory_bytes=1 << 30)
    assert args.available_kv_bytes() == requested - (1 << 30)


def test_the_budget_requests_the_ceil_of_the_gpus_total() -> None:
    """``plan --gpu 'RTX 4090' --gpu-memory-utilization 0.85``: the requested memory of the budget."""
    model, args = build_engine_args(str(QWEN3_8B), {"gpu-memory-utilization": "0.85"}, [])
    gpu = parse_gpu("RTX 4090")
    b = estimate_budget(
        model,
        args.evolve(gpu=gpu),
        weights_bytes=model_weights(QWEN3_8B).stages[0].allocated_bytes,
        gpu=gpu,
        rules=rules_for(args.vllm_version),
        shape=forward_shape(json.loads(QWEN3_8B.read_text())),
    )
    assert b.gpu_total_bytes == 25426206392
    assert b.requested_bytes == 21612275434


@given(total=st.integers(1 << 30, 300 << 30), util=st.floats(0.01, 1.0))
def test_request_memory_is_the_least_integer_not_below_the_product(total: int, util: float) -> None:
    got = request_memory(total, util)
    product = total * util
    event("rounded up" if got != round(product) else "ceil equals round")
    assert isinstance(got, int)
    assert got - 1 < product <= got

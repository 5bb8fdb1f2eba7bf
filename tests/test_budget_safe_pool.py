"""The safe pinned pool dryboot offers is one vLLM accepts (issue 33, item 5): fed back as
``--kv-cache-memory-bytes`` on the same GPU, one ``max_model_len`` request fits it (vLLM's
``check_enough_kv_cache_memory``) and the weights and it fit the GPU; and where none is offered,
the length reported as the largest that fits the refused pool is vLLM's ``estimate_max_model_len``
(it fits pinned, 16 tokens more do not). Over the shipped public configs whose weights are
modelled, every GPU of the table, lengths and utilizations."""

from __future__ import annotations

import json
from functools import cache
from pathlib import Path
from typing import Any

from hypothesis import HealthCheck, assume, given, settings
from hypothesis import strategies as st

from dryboot.errors import InputError
from dryboot.planner.budget import EXIT_CODES, plan_verdict, plan_with_budget, with_weights_check
from dryboot.planner.plan import plan
from dryboot.planner.runner import build_engine_args
from dryboot.vllm.gpus import gpu_table, parse_gpu
from dryboot.vllm.model_executor.model_loader.loader import model_weights, serving_gpu

REPO = Path(__file__).resolve().parents[1]
PUBLIC = REPO / "tests/data/configs/public"
#: issue 33's 4-bit 27B hybrid: Qwen3.6-27B AutoRound W4A16 (text-only Qwen3_5ForCausalLM)
QUANT_HYBRID = "../../../fidelity/data/weights/quant-configs/Qwen--Qwen3.6-27B+AutoRound-W4A16-RTN"
#: published configs whose weights are modelled, small to large (dense, MoE, fp8)
CONFIGS = [
    "Qwen--Qwen3-0.6B",
    "Qwen--Qwen2.5-7B",
    "Qwen--Qwen3-8B",
    "Qwen--Qwen3-30B-A3B",
    "Qwen--Qwen3-32B",
    "Qwen--Qwen3-32B-FP8",
    "Qwen--Qwen2.5-72B",
    # a 4-bit hybrid (Gated DeltaNet): weights repacked per GPU (Marlin / Machete)
    QUANT_HYBRID,
]


@cache
def _weights(name: str) -> int | None:
    w = model_weights(PUBLIC / name / "config.json")
    return None if w.refused or not w.stages else max(s.allocated_bytes for s in w.stages)


def _accepted(model: Any, args: Any, weights: int) -> bool:
    """What ``dryboot plan --gpu G --kv-cache-memory-bytes POOL`` decides, as the CLI does."""
    p = with_weights_check(plan(model, args), args, weights)
    return plan_verdict(p, None, args).exit_code == EXIT_CODES["fits"]


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(
    name=st.sampled_from(CONFIGS),
    gpu=st.sampled_from(sorted(gpu_table())),
    length=st.sampled_from([1024, 4096, 8192, 16384, 32768, 40960]),
    util=st.sampled_from([0.8, 0.9, 0.92, 0.95]),
    tp=st.sampled_from([1, 2, 4]),
)
def test_the_safe_pool_is_accepted(name: str, gpu: str, length: int, util: float, tp: int) -> None:
    path = PUBLIC / name / "config.json"
    flags = {"max-model-len": str(length), "gpu-memory-utilization": str(util), "tensor-parallel-size": str(tp)}
    try:
        model, args = build_engine_args(str(path), flags, [])
        args = args.evolve(gpu=parse_gpu(gpu))
        args.validate()
    except InputError:
        assume(False)
        return
    w = model_weights(path, tp=tp, **serving_gpu(args.gpu, "0.28.0"))
    assume(not w.refused and bool(w.stages))
    weights = max(s.allocated_bytes for s in w.stages)
    try:
        bp = plan_with_budget(
            model,
            args,
            config=json.loads(path.read_text()),
            weights_bytes=w.stages[0].allocated_bytes,
            stage_weights_bytes=tuple(s.allocated_bytes for s in w.stages),
        )
    except InputError:  # the plan's own refusal (e.g. a backend the GPU lacks)
        assume(False)
        return
    assume(bp.budget is not None)
    assert bp.verdict is not None
    safe = bp.safe_kv_cache_memory_bytes
    if bp.verdict.word == "fits":
        assert safe is not None, "a 'fits' verdict always comes with a safe pool"
    if safe is not None:
        assert _accepted(model, args.evolve(kv_cache_memory_bytes=safe), weights), (name, gpu, length, safe)
        assert safe <= bp.budget.available_kv_cache_bytes.low
    elif bp.refused_pool_bytes is not None and bp.max_model_len_fits:
        pool, longest = bp.refused_pool_bytes, bp.max_model_len_fits
        assert longest < length
        fits = args.evolve(kv_cache_memory_bytes=pool, max_model_len=longest)
        assert _accepted(model, fits, weights), (name, gpu, longest, pool)
        over = args.evolve(kv_cache_memory_bytes=pool, max_model_len=longest + 16)
        assert not _accepted(model, over, weights)


def test_reference_deployment_on_an_rtx_3090() -> None:
    """Issue 33's done-when: ``plan --gpu "RTX 3090"`` on a 4-bit 27B hybrid with fp8 KV prints
    tokens for the first and later starts, a verdict, and a safe pool that ``plan
    --kv-cache-memory-bytes <pool>`` accepts (exit 0, ``fits``)."""
    import re

    from click.testing import CliRunner

    from dryboot.cli import cli

    flags = [
        "plan",
        "--model",
        str(PUBLIC / QUANT_HYBRID),
        "--gpu",
        "RTX 3090",
        "--kv-cache-dtype",
        "fp8",
        "--max-model-len",
        "65536",
        "--gpu-memory-utilization",
        "0.972",
        "--max-num-batched-tokens",
        "2048",
        "--max-num-seqs",
        "64",
    ]
    out = CliRunner().invoke(cli, flags)
    text = " ".join(out.output.split())
    assert "first start (cold compile cache): Available KV cache memory" in text, out.output
    assert "later starts (warm cache): Available KV cache memory" in text
    assert len(re.findall(r"KV cache tokens [0-9,]+ \(", text)) == 2
    # vLLM 0.28.0's tensors on SM 8.6 (16.50 GiB, recorded on the meta device) plus the caching allocator's
    # unsplit segments while loading (242 MiB: e.g. each repacked 85 MiB gate_up qweight holds an 86 MiB segment)
    assert "Model loading took 16.74 GiB memory" in text
    verdict = re.search(r"verdict: (\S+) \(exit (\d)\)", text)
    assert verdict is not None and out.exit_code == int(verdict.group(2))
    pool = re.search(r"--kv-cache-memory-bytes=(\d+)", text)
    assert pool is not None, out.output
    pinned = CliRunner().invoke(cli, [*flags, "--kv-cache-memory-bytes", pool.group(1)])
    assert pinned.exit_code == 0 and "verdict: fits (exit 0)" in pinned.output, pinned.output

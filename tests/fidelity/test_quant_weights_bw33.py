"""Quantized checkpoints on Blackwell with vLLM 0.33.0 (issue 33): GPTQ, AWQ, AutoRound,
compressed-tensors (W4A16, W8A16, W8A8 fp8 / int8, NVFP4) and ModelOpt (FP8, NVFP4,
MIXED_PRECISION) on B200 (SM 10.0) and RTX 5090 (SM 12.0), TP 1 and 2.

0.33.0's ``FlashInferImpl.__init__`` allocates the shared multi-CTA KV counter while the model is
built, so it is in the figure after the post-load step wherever vLLM builds FlashInfer attention:
on SM 10.x, and on SM 12.x for a ModelOpt checkpoint's fp8 KV cache (``kv_cache_quant_algo``
FP8, which ``--kv-cache-dtype auto`` resolves to fp8; FlashAttention 2 takes none). dryboot adds
it for quantized walks as for unquantized ones (``weights._flashinfer_counter``); before, every
such case was refused ("FlashInfer attention allocates a shared counter buffer while loading").
``data/weights/quant-recorded-bw33-<release>.json``: vLLM's own figures
(``RECORD_SET=bw33 record_quant_weights.py``, ``quant_cases_bw33.py``), each case in a fresh
process's state. Nothing recorded comes from dryboot. Needs no vLLM.
"""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Any

import pytest

sys.path.insert(0, str(Path(__file__).resolve().parent))

import quant_cases_bw33 as bw
from quant_harness import assert_weights, case_ids, dryboot_weights, load_recorded, tp_of

from dryboot.vllm.backends import flashinfer_kv_counter_bytes
from dryboot.vllm.model_executor.model_loader.loader import model_weights
from dryboot.vllm.model_executor.model_loader.weights import Parallel, RankWeights, unmodelled_flashinfer_counter

RECORDED = load_recorded("quant-recorded-bw33-")
CASES = case_ids(RECORDED)
#: the methods the set covers, by a part of their config folders' names
METHODS = ("GPTQ", "AWQ", "AutoRound", "CT-W4A16", "CT-W8A16", "CT-W8A8-FP8", "CT-W8A8-INT8", "CT-NVFP4", "nvidia--")


def _refusal(row: dict[str, Any]) -> str | None:
    """What dryboot must name where it does not give vLLM's figure; ``None``: byte-exact (every row:
    nvidia/Qwen3.6-27B-NVFP4 on B200, once refused for FlashInfer's CuTe DSL W4A16 layout, included)."""
    return None


def test_corpus_size() -> None:
    """At least 40 byte-exact cases on 0.33.0 over every method, on both GPUs."""
    rows = RECORDED["0.33.0"].values()
    exact = [r for r in rows if r["ok"] and _refusal(r) is None]
    assert len(exact) >= 40
    assert {r["gpu"] for r in exact} == {"B200", "RTX 5090"}
    for method in METHODS:
        assert any(method in r["config"] for r in exact), method


@pytest.mark.parametrize(("version", "cid"), CASES)
def test_matches_vllm_on_blackwell(version: str, cid: str) -> None:
    row = RECORDED[version][cid]
    assert_weights(dryboot_weights(bw.CONFIGS, row, version), row, _refusal(row))


def _pair(config: str, tp: int) -> tuple[dict[str, Any], dict[str, Any]]:
    rows = {r["gpu"]: r for r in RECORDED["0.33.0"].values() if r["config"] == config and tp_of(r) == tp}
    return rows["B200"], rows["RTX 5090"]


def test_b200_holds_the_counter_rtx5090_does_not() -> None:
    """The same weight-only checkpoint (Marlin on both GPUs): B200's figure is RTX 5090's plus
    the counter (8,192 tokens x Qwen3-8B's 32 query heads per rank, int32: 1 MiB at TP 1)."""
    for tp, heads in ((1, 32), (2, 16)):
        b200, rtx = _pair("Qwen--Qwen3-8B+GPTQ-Int4-g128", tp)
        assert b200["kernels"] == rtx["kernels"] == {"MarlinLinearKernel": 144}
        counter = flashinfer_kv_counter_bytes(b200["max_num_batched_tokens"], heads, b200["sm_count"])
        assert b200["allocated_bytes"] - rtx["allocated_bytes"] == counter == 4 * 8192 * heads


def test_modelopt_fp8_kv_counter_on_rtx5090_too() -> None:
    """A ModelOpt checkpoint's fp8 KV cache goes to FlashInfer on SM 12.0 as well: dryboot's
    figure for RTX 5090 less the counter is not vLLM's (the counter is in vLLM's)."""
    rtx = _pair("nvidia--Qwen3-32B-NVFP4", 1)[1]
    report = dryboot_weights(bw.CONFIGS, rtx, "0.33.0")
    assert report.stages[0].allocated_bytes == rtx["allocated_bytes"]
    assert report.stages[0].by_kind["attention counter"] == flashinfer_kv_counter_bytes(8192, 64, 170)


def test_refused_before_on_every_case() -> None:
    """Each recorded case was refused by name before the lift: the refusal is gone, not moved."""
    for row in RECORDED["0.33.0"].values():
        report = dryboot_weights(bw.CONFIGS, row, "0.33.0")
        assert "shared counter buffer" not in (report.refused or "")


def test_w4a16_nvfp4_linear_on_sm100_cutedsl() -> None:
    """ModelOpt's weight-only NVFP4 linear layers on SM 10.0: vLLM 0.30.0+ prepares them for
    FlashInfer's CuTe DSL BF16 x FP4 kernel (``FlashInferCuteDslNvFp4W4A16LinearKernel``: the weight
    padded to 64 rows / 64 inputs, the swizzled block scales, whose 6-D MMA layout is a view). The
    oracle failed there ("device must be a cuda device": FlashInfer asked the meta tensor's device
    for its architecture; then ``cutlass`` absent), refused by name; recorded again with
    ``quant_fakes.flashinfer_capability_stand_in`` / ``flashinfer_cute_dsl_layout_stand_in``, 0.33.0
    is byte-exact (TP 1: 21,107,307,008; TP 2: 10,576,201,216); 0.30.0-0.32.0 prepare it alike
    (refused by name before, as not recorded; recorded since on B200 in the modelopt set,
    ``test_quant_weights_modelopt.py``): answered; 0.29.0 keeps Marlin (answered)."""
    for tp in (1, 2):
        b200 = _pair("nvidia--Qwen3.6-27B-NVFP4", tp)[0]
        assert b200["ok"] and b200["kernels"]["FlashInferCuteDslNvFp4W4A16LinearKernel"] == 129
        assert dryboot_weights(bw.CONFIGS, b200, "0.33.0").stages[0].allocated_bytes == b200["allocated_bytes"]
    b200 = _pair("nvidia--Qwen3.6-27B-NVFP4", 1)[0]

    def run(version: str) -> Any:
        return model_weights(
            bw.CONFIGS / b200["config"],
            tp=1,
            compute_capability=(10, 0),
            sm_count=148,
            vllm_version=version,
            max_num_batched_tokens=8192,
        )

    for version in ("0.29.0", "0.30.0", "0.31.0", "0.32.0"):
        assert not run(version).refused, version
    assert run("0.33.0").stages[0].allocated_bytes == 21_107_307_008


@pytest.mark.parametrize(("gpu", "name"), [(((10, 0), 148), "B200"), (((12, 0), 170), "RTX 5090")])
def test_mxfp4_gpt_oss_on_blackwell_answered(gpu: tuple[tuple[int, int], int], name: str) -> None:
    """gpt-oss's MXFP4 experts on 0.33.0 Blackwell (FlashInfer TRT-LLM on SM 10.x, Marlin on SM 12.x),
    once refused for the experts' layout: vLLM's figure with the attention's KV counter and float32
    sinks (``quant-recorded-0.33.0-mxfp4.json``, ``flashinfer-cubin``); SM 11.x (the OAI Triton
    kernels' Blackwell layouts) stays refused by name."""
    configs = Path(__file__).resolve().parent / "data" / "weights" / "quant-configs"
    cap, sms = gpu
    report = model_weights(
        configs / "openai--gpt-oss-20b",
        tp=1,
        compute_capability=cap,
        sm_count=sms,
        vllm_version="0.33.0",
        max_num_batched_tokens=8192,
    )
    row = load_recorded("quant-recorded-0.33.0-mxfp4")["0.33.0"][f"openai--gpt-oss-20b {name} --tensor-parallel-size 1"]
    assert not report.refused and report.stages[0].allocated_bytes == row["allocated_bytes"]
    thor = model_weights(
        configs / "openai--gpt-oss-20b", compute_capability=(11, 0), sm_count=20, vllm_version="0.33.0"
    )
    assert thor.refused and "MXFP4 experts" in thor.refused


@pytest.mark.parametrize(
    ("cap", "fp8_kv", "refused"), [((12, 0), False, False), ((12, 0), True, True), ((9, 0), True, False)]
)
def test_walk_without_the_counter_refused_for_a_modelopt_fp8_cache(
    cap: tuple[int, int], fp8_kv: bool, refused: bool
) -> None:
    """A walk that does not ask about the counter: on SM 12.0 a ModelOpt checkpoint's fp8 KV cache
    is FlashInfer's (FlashAttention 2 takes none), so it is refused by name, not answered without
    the counter; FlashAttention keeps a 16-bit cache there and fp8 on SM 9.0 (no counter)."""
    par = Parallel(capability=cap, sm_count=170, vllm_version="0.33.0")
    config = {"model_type": "olmo2", "num_attention_heads": 32, "hidden_size": 4096}
    why = unmodelled_flashinfer_counter(config, par, RankWeights(), fp8_kv)
    assert (why is not None and "multi-CTA KV counter" in why) == refused


@pytest.mark.parametrize("tp", [1, 2])
def test_per_tensor_fp8_on_both_gpus(tp: int) -> None:
    """compressed-tensors W8A8 fp8 with one weight and one static input scale per tensor (the
    composed ``CT-W8A8-FP8-tensor``): 0.33.0 keeps FlashInfer's fp8 GEMM ahead of CUTLASS and of its
    new ``B12xTensorFP8ScaledMMLinearKernel`` on SM 10.0 and 12.0 (the weight requantized to the
    fused layer's largest scale and transposed); byte-exact on both, B200 with the KV counter."""
    b200, rtx = _pair("Qwen--Qwen3-8B+CT-W8A8-FP8-tensor", tp)
    assert b200["kernels"]["FlashInferFP8ScaledMMLinearKernel"] == rtx["kernels"]["FlashInferFP8ScaledMMLinearKernel"]
    for row in (b200, rtx):
        assert dryboot_weights(bw.CONFIGS, row, "0.33.0").stages[0].allocated_bytes == row["allocated_bytes"]
    counter = flashinfer_kv_counter_bytes(8192, 32 // tp, 148)
    assert b200["allocated_bytes"] - rtx["allocated_bytes"] == counter

"""dryboot's quantized MoE experts against what vLLM holds after loading.

The third set of quantized cases (``quant_cases_moe.py``): ``data/weights/
quant-recorded-moe-<version>.json`` holds vLLM's own figures, recorded as the other sets
(``RECORD_SET=moe record_quant_weights.py``: the model built by vLLM's loader on the meta device,
vLLM's ``process_weights_after_loading`` run, every storage still held counted in 512-byte blocks)
for the Qwen3-30B-A3B, Mixtral-8x7B, Qwen1.5-MoE-A2.7B (GPTQ), Qwen3.5-35B-A3B and
Qwen3-Next-80B-A3B (compressed-tensors W4A16) configs of
``data/weights/quant-configs-moe/``: AWQ and AutoRound's AWQ packing (Marlin MoE), GPTQ,
AutoRound's GPTQ packing and compressed-tensors W4A16 on the releases the other sets left out,
compressed-tensors W8A8 int8 / fp8 (channel, blocks) and NVFP4 experts.
Every case is checked in the default run (no vLLM needed); with ``DRYBOOT_VLLM_PYTHON`` set, two
are re-recorded live and checked.
"""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any

import pytest
import quant_cases_moe as moe
from quant_harness import (
    NO_TOKEN_COUNT,
    assert_weights,
    case_ids,
    dryboot_weights,
    load_recorded,
    no_token_count,
    plan_output,
    record_live,
    recorded_without_humming,
    tp_of,
)

from dryboot.vllm.model_executor.layers.quantization import quant_rules
from dryboot.vllm.model_executor.layers.quantization.fused_moe import scaled_experts_refusal
from dryboot.vllm.model_executor.layers.quantization.scaled_mm import ScaledScheme
from dryboot.vllm.model_executor.model_loader.loader import model_weights

RECORDED = load_recorded("quant-recorded-moe-")
CASES = case_ids(RECORDED)


def _dryboot(row: dict[str, Any], version: str) -> Any:
    return dryboot_weights(moe.CONFIGS, row, version)


def _refusal(version: str, row: dict[str, Any]) -> str | None:
    """What dryboot must name where it does not give vLLM's figure: a backend vLLM picks with
    packages or kernels the oracle lacks (so the oracle's own choice differs from a real
    install's), or the token count that sizes FlashInfer's KV counter on SM 10.x, which 0.33.0's
    rows there lack (``quant_harness.no_token_count``); ``None``: byte-exact."""
    sm = row["capability"][0] * 10 + row["capability"][1]
    config = row["config"]
    if config.endswith("GPTQ-Int4") and tp_of(row) == 2:
        # 704 per rank, group 128: vLLM's check_moe_marlin_supports_layer sends it to MoeWNA16
        # before any MoE kernel is chosen, on every GPU
        return "MoeWNA16"
    if sm in quant_rules(version).humming_before_marlin and not any(k in config for k in ("INT8", "FP8")):
        # 0.32 / 0.33 rank the Humming kernels ahead of Marlin on SM 9.0: exact where recorded with
        # humming-kernels (test_quant_humming.py); a row recorded without it is not a CUDA
        # install's choice
        return None if row.get("humming") else "Humming"
    if "FP8-dynamic" in config and 90 <= sm < 110:
        return "CUTLASS grouped-GEMM"
    if "CT-W8A8-FP8-block" in config and sm >= 90 and version != "0.28.0":
        return "DeepGEMM"  # the dense fp8 block layers (scaled_mm.py)
    if "CT-W8A8-FP8-block" in config and sm >= 100:
        return "TRT-LLM"
    if "NVFP4" in config and sm >= 100:
        return "FlashInfer"
    if config.endswith(("W4A16", "W4A16-g32", "GPTQ-Int4")) and sm >= 100:  # symmetric: FlashInfer TRT-LLM first
        return "SM 7.5-9.x"
    if config == "zai-org--GLM-4.5+FP8-block" and sm >= 100:
        # plain fp8 blocks after loading: the experts on SM 10.x (FlashInfer TRT-LLM / DeepGEMM)
        return "fp8 block MoE experts"
    if no_token_count(version, row) and sm == 100:
        return NO_TOKEN_COUNT  # FlashInfer's KV counter on SM 10.x, sized by the count the row lacks
    return None


#: plain fp8 rows this set's oracle fails (0.33.0 on SM 9.0 without DeepGEMM: its UE8M0
#: requantization under the meta device), recorded with DeepGEMM present in the fp8 set
#: (test_weights_fp8_post.py, byte-exact there)
FP8_SET = load_recorded("quant-recorded-fp8-")


def test_corpus_size() -> None:
    """Byte-exact cases on every release the oracle runs, over each method: AWQ and AutoRound's
    AWQ packing everywhere (0.27.1, 0.28.0, 0.30.0, 0.33.0), compressed-tensors W4A16 on 0.27.1,
    0.30.0 and 0.33.0, W8A8 int8 / fp8 and NVFP4 experts on 0.28.0, 0.29.0, 0.31.0, 0.32.0 and
    0.33.0 (0.30.0's: the Llama-4 set)."""
    exact: dict[str, set[str]] = {}
    for version, cases in RECORDED.items():
        for row in cases.values():
            if row["ok"] and _refusal(version, row) is None:
                exact.setdefault(version, set()).add(row["config"])
    assert all(row["ok"] or row.get("error") for cases in RECORDED.values() for row in cases.values())
    for version in ("0.27.1", "0.28.0", "0.30.0", "0.33.0"):
        assert "Qwen--Qwen3-30B-A3B+AWQ-g128" in exact.get(version, set()), version
    for version in ("0.27.1", "0.30.0", "0.33.0"):
        assert "Qwen--Qwen3-30B-A3B+CT-W4A16-g32" in exact.get(version, set()), version
        # Qwen2-MoE's GPTQ experts (its router and shared-expert gate unquantized)
        assert "Qwen--Qwen1.5-MoE-A2.7B-Chat-GPTQ-Int4" in exact.get(version, set()), version
        # the Gated DeltaNet MoE hybrids' W4A16 experts (router and shared-expert gates unquantized)
        assert {
            "Qwen--Qwen3.5-35B-A3B+CT-W4A16-g32",
            "Qwen--Qwen3-Next-80B-A3B-Thinking+CT-W4A16-g32",
        } <= exact.get(version, set()), version
    # AutoRound's wrapper names (model.language_model.*) in extra_config / block_name_to_quantize
    for version in ("0.27.1", "0.30.0", "0.33.0"):
        assert "Qwen--Qwen3.6-35B-A3B+AutoRound-W4A16" in exact.get(version, set()), version
    # GPTQ / AWQ experts of GLM-4.5 (glm4_moe), GLM-4.7-Flash (MLA: kv_b_proj dequantized after
    # loading) and the Gated DeltaNet MoE hybrids
    for version in ("0.27.1", "0.30.0", "0.33.0"):
        assert {
            "zai-org--GLM-4.5+GPTQ-Int4-g128",
            "zai-org--GLM-4.7-Flash+AWQ-g128",
            "zai-org--GLM-4.7-Flash+GPTQ-Int4-g128",
            "deepseek-ai--DeepSeek-V3+AWQ-g128",
            "MiniMaxAI--MiniMax-M2.5+AWQ-g128",
            "Qwen--Qwen3-Next-80B-A3B-Thinking+AWQ-g128",
            "Qwen--Qwen3-Next-80B-A3B-Thinking+GPTQ-Int4-g128",
            "Qwen--Qwen3.5-35B-A3B+AWQ-g128",
        } <= exact.get(version, set()), version
    # the default release: one case of each family
    assert {
        "zai-org--GLM-4.5+GPTQ-Int4-g128",
        "zai-org--GLM-4.7-Flash+GPTQ-Int4-g128",
        "deepseek-ai--DeepSeek-V3+AWQ-g128",
        "Qwen--Qwen3-Next-80B-A3B-Thinking+GPTQ-Int4-g128",
    } <= exact["0.28.0"]
    # GLM-4.5 under AWQ (its gate_up_proj layers left unquantized by "gate"), DeepSeek-V3 under
    # GPTQ (its MLA projections quantized)
    assert {
        "zai-org--GLM-4.5+AWQ-g128",
        "deepseek-ai--DeepSeek-V3+GPTQ-Int4-g128",
    } <= exact["0.33.0"]
    for version in ("0.28.0", "0.29.0", "0.31.0", "0.32.0", "0.33.0"):  # 0.29.0-0.32.0: TP 1, SM 8.6-9.0
        assert {
            "Qwen--Qwen3-30B-A3B+CT-W8A8-INT8-dynamic",
            "Qwen--Qwen3-30B-A3B+CT-W8A8-FP8-dynamic",
            "Qwen--Qwen3-30B-A3B+CT-W8A8-FP8-block",
            "Qwen--Qwen3-30B-A3B+CT-NVFP4",
        } <= exact.get(version, set()), version


@pytest.mark.parametrize(("version", "cid"), CASES)
def test_matches_vllm_after_loading(version: str, cid: str) -> None:
    row = RECORDED[version][cid]
    report = _dryboot(row, version)
    why = _refusal(version, row)
    if not row["ok"] and FP8_SET.get(version, {}).get(cid, {}).get("ok"):
        pytest.skip("recorded with DeepGEMM present in the fp8 set (test_weights_fp8_post.py)")
    # where vLLM fails: its refusal, or (where dryboot names the backend) the oracle cannot run the
    # backend a CUDA install picks: a kernel absent from the boot environment, FlashInfer's CUDA device
    assert_weights(report, row, why)


def test_expert_methods_are_vllms() -> None:
    """The MoE method vLLM gave every expert layer (48 in Qwen3-30B-A3B, 32 in Mixtral-8x7B, 24 in
    Qwen1.5-MoE-A2.7B), which the layouts follow."""
    want = {
        "AWQ-g128": "AutoAWQMoEMethod",
        "W4A16-awq": "AutoAWQMoEMethod",
        "INT8-dynamic": "CompressedTensorsW8A8Int8MoEMethod",
        "FP8-dynamic": "CompressedTensorsW8A8Fp8MoEMethod",
        "CT-W8A8-FP8-block": "CompressedTensorsW8A8Fp8MoEMethod",
        "CT-NVFP4": "CompressedTensorsW4A4Nvfp4MoEMethod",
        "CT-W4A16-g32": "CompressedTensorsWNA16MoEMethod",
        "GPTQ-Int4": "AutoGPTQMoEMethod",
        "GPTQ-Int4-g128": "AutoGPTQMoEMethod",
    }
    checked = 0
    for cases in RECORDED.values():
        for row in cases.values():
            method = next((m for key, m in want.items() if row["config"].endswith(key)), None)
            if row["config"].endswith("GPTQ-Int4") and tp_of(row) == 2:  # Qwen1.5-MoE: 704 per rank, group 128
                method = "MoeWNA16Method"  # the fallback dryboot names in its refusal (any SM)
            if row["ok"] and method is not None and "kernels" in row:
                cfg = json.loads((moe.CONFIGS / row["config"] / "config.json").read_text())
                text = cfg.get("text_config", cfg)
                # GLM-4.5 / DeepSeek-style: dense MLPs below first_k_dense_replace
                layers = text["num_hidden_layers"] - text.get("first_k_dense_replace", 0)
                assert row["kernels"].get(method) == layers, (row["config"], row["kernels"])
                checked += 1
    assert checked >= 40


def test_refusals_name_what_is_missing() -> None:
    """Backends whose layouts are not checked are refused by name; a release whose layouts are
    not recorded too."""
    fp8 = ScaledScheme("fp8", "channel")
    assert "CUTLASS" in (scaled_experts_refusal(fp8, 90) or "")
    assert scaled_experts_refusal(fp8, 89) is None
    assert "per-tensor" in (scaled_experts_refusal(ScaledScheme("fp8", "tensor"), 86) or "")
    block = ScaledScheme("fp8", "block", (128, 128))
    assert scaled_experts_refusal(block, 90) is None  # Triton first on Hopper (the dense layers: DeepGEMM)
    assert "TRT-LLM" in (scaled_experts_refusal(block, 100) or "")
    assert scaled_experts_refusal(fp8, 120) is None  # Triton: no grouped CUTLASS GEMM from SM 11.0
    assert "FlashInfer" in (scaled_experts_refusal(ScaledScheme("nvfp4", "group"), 100) or "")
    awq = moe.CONFIGS / "Qwen--Qwen3-30B-A3B+AWQ-g128"
    # 0.33.0 on SM 9.0: the Humming experts (test_quant_humming.py), no longer refused
    assert model_weights(awq, compute_capability=(9, 0), sm_count=132, vllm_version="0.33.0").refused is None
    assert model_weights(awq, compute_capability=(9, 0), sm_count=132, vllm_version="0.30.0").refused is None
    assert "0.26.0" in (
        model_weights(awq, compute_capability=(8, 9), sm_count=128, vllm_version="0.26.0").refused or ""
    )
    assert "name the GPU" in (model_weights(awq).refused or "")
    # the CT W8A8 experts are checked on 0.27.1-0.33.0 (0.30.0: quant_cases_llama4.py); compressed-tensors
    # fp8 below SM 8.9: the dense layers through Humming's W8A16 fp8 kernel, the experts through Marlin's
    # MoE backend, ahead of Humming's (recorded with humming-kernels: quant-recorded-humfp8-<version>.json)
    int8 = moe.CONFIGS / "Qwen--Qwen3-30B-A3B+CT-W8A8-INT8-dynamic"
    assert model_weights(int8, compute_capability=(8, 6), sm_count=82, vllm_version="0.27.1").refused is None
    fp8 = moe.CONFIGS / "Qwen--Qwen3-30B-A3B+CT-W8A8-FP8-dynamic"
    assert model_weights(fp8, compute_capability=(8, 6), sm_count=82, vllm_version="0.27.1").refused is None
    assert model_weights(fp8, compute_capability=(8, 9), sm_count=128, vllm_version="0.27.1").refused is None
    # Marlin MoE pads an intermediate size per rank that is not a multiple of 64 (not modelled)
    assert "pads" in (
        model_weights(
            int8.parent / "Qwen--Qwen3-30B-A3B+CT-NVFP4", tp=8, compute_capability=(8, 6), sm_count=82
        ).refused
        or ""
    )


def test_gdn_moe_other_formats_stay_refused(tmp_path: Path) -> None:
    """The Gated DeltaNet MoE hybrids take the W4A16 experts here: an fp8 checkpoint of the same
    config with one scale per tensor is still refused by name (its layouts are not recorded; fp8
    blocks: test_weights_fp8_gdn.py)."""
    cfg = json.loads((moe.CONFIGS / "Qwen--Qwen3-Next-80B-A3B-Thinking+CT-W4A16-g32" / "config.json").read_text())
    cfg["quantization_config"] = {"quant_method": "fp8", "activation_scheme": "dynamic"}
    (tmp_path / "config.json").write_text(json.dumps(cfg))
    refused = model_weights(tmp_path, compute_capability=(8, 9), sm_count=128, vllm_version="0.33.0").refused
    assert "one scale per tensor: not recorded" in (refused or ""), refused
    w4 = moe.CONFIGS / "Qwen--Qwen3-Next-80B-A3B-Thinking+CT-W4A16-g32"
    assert model_weights(w4, compute_capability=(8, 9), sm_count=128, vllm_version="0.33.0").refused is None


def test_plan_rtx4090_awq_moe_prints_weights_and_verdict() -> None:
    """``plan --gpu "RTX 4090"`` on an AWQ Qwen3-30B-A3B: vLLM's weights figure (the recorded
    one) and a verdict, not undetermined."""
    cfg = moe.CONFIGS / "Qwen--Qwen3-30B-A3B+AWQ-g128"
    _, out = plan_output(cfg, "RTX 4090")
    want = RECORDED["0.28.0"][f"{cfg.name} RTX 4090 --tensor-parallel-size 1"]["allocated_bytes"]
    assert f"{want:,} bytes" in out, out[-2000:]
    assert "verdict: fits" in out and "undetermined" not in out, out[-2000:]


@pytest.mark.skipif(not os.environ.get("DRYBOOT_VLLM_PYTHON"), reason="needs vLLM (DRYBOOT_VLLM_PYTHON)")
def test_live_oracle(tmp_path: Path) -> None:
    """Re-record two cases with the boot environment's vLLM and check dryboot against them."""
    names = ["Qwen--Qwen3-30B-A3B+AWQ-g128", "Qwen--Qwen3-30B-A3B+CT-W8A8-FP8-dynamic"]
    doc = record_live(tmp_path, names, RECORD_SET="moe", RECORD_GPUS="RTX 3090", RECORD_TPS="2", RECORD_FAST="1")
    assert len(doc["cases"]) == 2
    for row in doc["cases"].values():
        report = _dryboot(row, doc["vllm"])
        if recorded_without_humming(row):  # Marlin's fp8 figure, which a CUDA install does not take
            continue
        if not row["ok"]:
            assert report.refused, row["error"]
            continue
        if report.refused:  # a release whose layouts of this method are not checked: named
            assert "only" in report.refused, report.refused
            continue
        if _refusal(doc["vllm"], row) is None:
            assert report.stages[0].allocated_bytes == row["allocated_bytes"], row["config"]


def test_llama4_quantized_wrapper_without_vision_config_as_vllm() -> None:
    """This copy of the Scout config has no ``vision_config``: vLLM builds ``Llama4VisionConfig()``'s
    default tower (unquantized) beside the AWQ language model; dryboot's figure is vLLM 0.33.0's own
    after loading (RTX 3090, TP 2: ``published-defaults/quant-recorded-scout-awq-0.33.0.json``)."""
    awq = moe.CONFIGS / "meta-llama--Llama-4-Scout-17B-16E-Instruct+AWQ-g128"
    doc = json.loads((moe.CONFIGS.parent / "published-defaults" / "quant-recorded-scout-awq-0.33.0.json").read_text())
    (row,) = doc["cases"].values()
    assert doc["vllm"] == "0.33.0" and row["ok"] and row["quantization"] == "auto_awq"
    report = model_weights(awq, tp=2, compute_capability=(8, 6), sm_count=82, vllm_version="0.33.0")
    assert not report.refused, report.refused
    assert report.stages[0].allocated_bytes == row["allocated_bytes"]

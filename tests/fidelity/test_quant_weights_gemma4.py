"""dryboot's quantized Gemma-4 text model against what vLLM holds after loading.

The Gemma-4 set (``quant_cases_gemma4.py``): ``data/weights/quant-recorded-gemma4-<version>.json``
holds vLLM's own figures (``RECORD_SET=gemma4 record_quant_weights.py``: the model built by vLLM's
loader on the meta device, ``process_weights_after_loading`` run, every storage still held
counted in 512-byte blocks) for tiny ``Gemma4ForCausalLM`` configs (dense as the 31B, MoE as the
26B-A4B) and the wrapper under AWQ, GPTQ (dense), AutoRound, compressed-tensors W4A16, plain fp8
and ModelOpt NVFP4 on SM 8.6 / 8.9 / 9.0 / 10.0 at TP 1 and 2, vLLM 0.28.0, 0.30.0, 0.32.0 and 0.33.0 (0.32.0
with humming-kernels 0.1.17).
Every case is checked in the default run (no vLLM needed); with ``DRYBOOT_VLLM_PYTHON`` set, one
is re-recorded live.
"""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any

import pytest
import quant_cases_gemma4 as g4
from quant_harness import assert_weights, case_ids, check_live_wna16, dryboot_weights, load_recorded, plan_output

from dryboot.vllm.model_executor.model_loader.loader import model_weights

RECORDED = load_recorded("quant-recorded-gemma4-")
CASES = case_ids(RECORDED)


#: vLLM's refusal of an fp8 KV cache (ModelOpt's ``kv_cache_scheme``) on Gemma-4's Triton attention below SM 8.9
TRITON_FP8_KV = "FP8 KV cache is not supported by the Triton attention backend"


def _refusal(version: str, row: dict[str, Any]) -> str | None:
    """What dryboot must name where it does not give vLLM's figure; ``None``: byte-exact."""
    sm = row["capability"][0] * 10 + row["capability"][1]
    config = row["config"]
    if "desc_act" in config and version != "0.28.0":
        return "refuses GPTQ group activation ordering"  # vLLM 0.30+ too (QuantRules.gptq_act_order)
    # plain fp8 per tensor below SM 8.9: Marlin FP8 on 0.27.1, 0.28.0, 0.31.0+, CUTLASS's SM 8.9 layout on
    # 0.29.0 / 0.30.0 (ScaledQuant.fp8_marlin; the 0.30.0 dense rows refused before)
    if "FP8" in config and sm >= 100 and version not in ("0.29.0", "0.30.0", "0.31.0", "0.32.0", "0.33.0"):
        return "one scale per tensor on SM 10.0"  # weights.FP8_TENSOR_BLACKWELL_RELEASES
    if "moe+FP8" in config:
        return "fp8 per-tensor MoE experts"  # FlashInfer / CUTLASS / Marlin experts (fused_moe.scaled_experts_bytes)
    if "moe+CT-W4A16" in config and sm >= 100:
        return "symmetric MoE experts are modelled on SM 7.5-9.x only"  # auto_gptq: no Marlin MoE there
    return None


def test_corpus_size() -> None:
    """Byte-exact on 0.28.0, 0.30.0, 0.32.0 and 0.33.0: AWQ, GPTQ, compressed-tensors W4A16, fp8 (dense)
    and ModelOpt NVFP4, the text model and the wrapper (tower unquantized as vLLM builds it)."""
    exact: dict[str, set[str]] = {}
    n = 0
    for version, cases in RECORDED.items():
        for row in cases.values():
            if row["ok"] and _refusal(version, row) is None:
                exact.setdefault(version, set()).add(row["config"])
                n += 1
    for version in ("0.28.0", "0.30.0", "0.32.0", "0.33.0"):
        assert {
            "tiny-gemma4-dense+AWQ-g128",
            "tiny-gemma4-dense+CT-W4A16-g32",
            "tiny-gemma4-dense+GPTQ-Int4-g128",
            "tiny-gemma4-moe+AWQ-g128",
            "tiny-gemma4-moe+CT-W4A16-g32",
            "tiny-gemma4-dense+FP8-dynamic",
            "tiny-gemma4-dense+ModelOpt-NVFP4",
            "tiny-gemma4-moe+ModelOpt-NVFP4",
            "tiny-gemma4-vl+AWQ-g128",
            "tiny-gemma4-vl+ModelOpt-NVFP4",
            "tiny-gemma4-vlmoe+ModelOpt-NVFP4",
            "tiny-gemma4-moe+AutoRound-W4A16-awq",
        } <= exact.get(version, set()), version
    assert "tiny-gemma4-dense+GPTQ-Int4-g128-desc_act" in exact["0.28.0"]  # 0.30.0+ refuse act-order
    assert n >= 348  # 92 on 0.28.0, 84 on 0.30.0, 86 on 0.32.0 and 0.33.0
    # plain fp8 per tensor on the RTX 3090 (Marlin FP8; the oracle failed before: "cannot repeat_interleave a
    # meta tensor", recorded with quant_fakes.meta_repeat_counts)
    for version in ("0.28.0", "0.32.0", "0.33.0"):
        dense = [r for r in RECORDED[version].values() if r["config"] == "tiny-gemma4-dense+FP8-dynamic"]
        assert {r["argv"][-1] for r in dense if r["gpu"] == "RTX 3090" and _refusal(version, r) is None} == {"1", "2"}
    # 0.33.0 on B200: FlashInfer's multi-CTA KV counter (Gemma4Config leaves the backend to the
    # priorities on SM 10.x) in every quantized row vLLM builds (refused by name before)
    b200 = [r for r in RECORDED["0.33.0"].values() if r["gpu"] == "B200" and r["ok"] and _refusal("0.33.0", r) is None]
    assert len(b200) == 22
    # the MoE ModelOpt NVFP4 experts through FlashInfer TRT-LLM on the releases before (the oracle
    # failed there before: "device must be a cuda device")
    for version in ("0.28.0", "0.30.0", "0.32.0"):
        moe = {r["config"] for r in RECORDED[version].values() if r["gpu"] == "B200" and _refusal(version, r) is None}
        assert {"tiny-gemma4-moe+ModelOpt-NVFP4", "tiny-gemma4-vlmoe+ModelOpt-NVFP4"} <= moe, version


@pytest.mark.parametrize(("version", "cid"), CASES)
def test_matches_vllm_after_loading(version: str, cid: str) -> None:
    row = RECORDED[version][cid]
    if not row["ok"] and TRITON_FP8_KV in str(row.get("error")):
        # the checkpoint's fp8 KV cache on Triton attention below SM 8.9: vLLM refuses it before
        # loading; dryboot's plan refuses it with vLLM's words (config/resolve.py), the weights
        # walk is not asked
        code, out = plan_output(g4.CONFIGS / row["config"], row["gpu"], "--vllm-version", version)
        assert code == 2 and TRITON_FP8_KV in out, out
        return
    report = dryboot_weights(g4.CONFIGS, row, version)
    assert_weights(report, row, _refusal(version, row))


def test_unrecorded_stays_refused_by_name() -> None:
    """A release, a GPU or a parallelism not recorded is refused by name; without a GPU the
    repacked layout is unknown."""
    cfg = g4.CONFIGS / "tiny-gemma4-moe+CT-W4A16-g32"
    assert "0.28.0, 0.30.0, 0.32.0, 0.33.0 only" in (
        model_weights(cfg, compute_capability=(8, 6), sm_count=82, vllm_version="0.29.0").refused or ""
    )
    assert "SM 8.6, 8.9, 9.0, 10.0 only" in (
        model_weights(cfg, compute_capability=(12, 0), sm_count=170, vllm_version="0.28.0").refused or ""
    )
    assert "pipeline or expert" in (
        model_weights(cfg, pp=2, compute_capability=(8, 6), sm_count=82, vllm_version="0.28.0").refused or ""
    )
    assert "name the GPU" in (model_weights(cfg, vllm_version="0.28.0").refused or "")


def test_plan_rtx3090_4bit_gemma4(tmp_path: Path) -> None:
    """A 24 GB card's Gemma-4: the dense 31B text model under compressed-tensors W4A16 (the tiny
    case's ``quantization_config``, group 32, over the published 31B ``text_config``; llm-compressor's
    AWQ / GPTQ exports are this format) gets vLLM's weights line on an RTX 3090 (Marlin), no longer
    the unquantized-only refusal: 19,760,101,376 bytes, the walk the tiny cases check byte-exact."""
    public = Path(__file__).parents[1] / "data" / "configs" / "public"
    text = json.loads((public / "nvidia--Gemma-4-31B-IT-NVFP4" / "config.json").read_text())["text_config"]
    quant = json.loads((g4.CONFIGS / "tiny-gemma4-dense+CT-W4A16-g32" / "config.json").read_text())
    (tmp_path / "config.json").write_text(
        json.dumps(
            {**text, "architectures": ["Gemma4ForCausalLM"], "quantization_config": quant["quantization_config"]}
        )
    )
    _, out = plan_output(tmp_path, "RTX 3090", "--vllm-version", "0.28.0")
    assert "not modelled" not in out, out
    assert "Model loading took 18.63 GiB memory" in out, out
    assert "19,760,101,376 bytes" in out, out


@pytest.mark.skipif(not os.environ.get("DRYBOOT_VLLM_PYTHON"), reason="needs vLLM (DRYBOOT_VLLM_PYTHON)")
def test_live_oracle(tmp_path: Path) -> None:
    """Re-record one case with the boot environment's vLLM and check dryboot against it."""
    check_live_wna16(tmp_path, "tiny-gemma4-moe+CT-W4A16-g32", "gemma4", g4.CONFIGS)

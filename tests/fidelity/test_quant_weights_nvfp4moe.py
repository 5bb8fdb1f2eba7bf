"""dryboot's ModelOpt NVFP4 MoE weights of the MLA and hybrid families against what vLLM holds after loading.

The cases (``quant_cases_nvfp4moe.py``): ``data/weights/quant-recorded-nvfp4moe-<version>.json``
holds vLLM's own figures, recorded as the other sets (``RECORD_SET=nvfp4moe record_quant_weights.py``:
the model built by vLLM's loader on the meta device, vLLM's ``process_weights_after_loading`` run,
every storage still held counted in 512-byte blocks) for NVIDIA's published configs of
``data/weights/quant-configs-nvfp4moe/`` (nvidia/DeepSeek-V3.1-NVFP4 and nvidia/DeepSeek-V3-0324-NVFP4:
MLA attention left in bf16 by their ``exclude_modules`` but for V3.1's ``o_proj``, NVFP4 dense MLPs,
shared and routed experts; nvidia/Qwen3.5-122B-A10B-NVFP4: NVFP4 routed experts only, the tower,
Gated DeltaNet, attention and shared experts excluded; nvidia/Kimi-K2.5-NVFP4 and Kimi-K2.6-NVFP4:
the DeepSeek-V3 text model in Kimi-K2.5's wrapper, its MoonViT tower unquantized) at TP 8 on SM
8.0, 9.0 and 12.0 (Marlin below 10.0, CUTLASS on 12.0). SM 10.0 is recorded too: the oracle could not run vLLM's
FlashInfer TRT-LLM preparation there (no CUDA torch); re-recorded on 0.28.0 with ``RECORD_MXFP4_NATIVE`` (FlashInfer's
scale interleave by shape), both DeepSeek-V3 checkpoints are byte-exact there (``modelopt.trtllm_nvfp4_experts_bytes``).
Every case is checked
in the default run (no vLLM needed): byte-exact where dryboot answers, else refused by name.
"""

from __future__ import annotations

from typing import Any

import pytest
import quant_cases_nvfp4moe as nm
from quant_harness import case_ids, dryboot_weights, load_recorded, plan_output, tp_of

from dryboot.vllm.model_executor.model_loader.loader import model_weights

RECORDED = load_recorded("quant-recorded-nvfp4moe-")
CASES = case_ids(RECORDED)
DSV31 = nm.CONFIGS / "nvidia--DeepSeek-V3.1-NVFP4"
DSV3_0324 = nm.CONFIGS / "nvidia--DeepSeek-V3-0324-NVFP4"
QWEN35 = nm.CONFIGS / "nvidia--Qwen3.5-122B-A10B-NVFP4"
KIMI25 = nm.CONFIGS / "nvidia--Kimi-K2.5-NVFP4"


def _dryboot(row: dict[str, Any], version: str) -> Any:
    return dryboot_weights(nm.CONFIGS, row, version)


@pytest.mark.parametrize(("version", "cid"), CASES)
def test_matches_vllm_after_loading(version: str, cid: str) -> None:
    """Byte-exact where dryboot answers; where vLLM or the oracle fails, dryboot refuses by name."""
    row = RECORDED[version][cid]
    report = _dryboot(row, version)
    if not row["ok"] and "not supported by the Triton MLA backend" in row["error"]:
        # vLLM refuses the checkpoint's fp8 KV cache on SM 8.x at engine start (the weights are
        # not in question: re-recorded with --kv-cache-dtype bfloat16); so does dryboot's plan
        code, out = plan_output(nm.CONFIGS / row["config"], row["gpu"], "--tensor-parallel-size", str(tp_of(row)))
        assert code == 2 and "FP8 KV cache is not supported by the Triton MLA backend" in out, out[-500:]
        return
    if not row["ok"]:
        assert report.refused, f"vLLM or the oracle fails ({row['error'][:200]}); dryboot answered"
        assert "not modelled" in report.refused or "not checked" in report.refused, report.refused
        return
    assert not report.refused, report.refused
    assert report.stages[0].allocated_bytes == row["allocated_bytes"], (cid, report.stages[0].allocated_bytes)


def test_corpus_size() -> None:
    """Both DeepSeek-V3 NVFP4 checkpoints exact on 0.28.0 on SM 9.0 (Marlin) and 12.0 (CUTLASS),
    V3-0324 on SM 8.0 too (V3.1's fp8 KV cache is refused there by vLLM's Triton MLA), Qwen3.5-122B
    on SM 9.0 and 12.0; the Blackwell SM 10.0 rows of 0.28.0 through FlashInfer TRT-LLM (the oracle
    failed there before, and dryboot refused them)."""
    exact = {
        (v, row["config"], row["gpu"])
        for v, cases in RECORDED.items()
        for row in cases.values()
        if row["ok"] and not _dryboot(row, v).refused
    }
    assert {("0.28.0", DSV3_0324.name, g) for g in ("A100-80GB", "H100", "RTX 5090")} <= exact
    assert {("0.28.0", c, g) for c in (DSV31.name, QWEN35.name) for g in ("H100", "RTX 5090")} <= exact
    assert ("0.30.0", DSV31.name, "H100") in exact  # 0.30.0's Marlin layouts: 0.28.0's
    # Kimi-K2.5's wrapper: DeepSeek-V3's text model, its tower bf16 but the float32 temporal table
    assert {("0.28.0", KIMI25.name, g) for g in ("H100", "RTX 5090")} | {("0.27.1", KIMI25.name, "H100")} <= exact
    # K2.6: its layer 0 and shared experts excluded too
    assert ("0.28.0", "nvidia--Kimi-K2.6-NVFP4", "H100") in exact
    assert ("0.27.1", DSV3_0324.name, "RTX 5090") in exact  # CUTLASS, 0.27.1's q/k/v_range kept
    assert ("0.28.0", QWEN35.name, "A100-80GB") in exact
    assert {("0.30.0", c, g) for c in (DSV3_0324.name, QWEN35.name) for g in ("H100", "RTX 5090")} <= exact
    assert {("0.27.1", c, "H100") for c in (DSV31.name, QWEN35.name)} <= exact
    # 0.29.0 / 0.31.0 on H100 (Marlin; 0.31.0 without the per-layer workspace), 0.32.0 on SM 12.0
    assert {(v, c, "H100") for v in ("0.29.0", "0.31.0") for c in (DSV31.name, QWEN35.name)} <= exact
    assert ("0.32.0", DSV31.name, "RTX 5090") in exact
    # V3.1's fp8 KV cache on SM 8.0: vLLM refuses it (Triton MLA); its weights recorded under
    # --kv-cache-dtype bfloat16
    bf16 = RECORDED["0.28.0"][f"{DSV31.name} A100-80GB --tensor-parallel-size 8 --kv-cache-dtype bfloat16"]
    assert bf16["ok"] and _dryboot(bf16, "0.28.0").stages[0].allocated_bytes == bf16["allocated_bytes"]
    assert {("0.28.0", c, "B200") for c in (DSV31.name, DSV3_0324.name)} <= exact


def test_kernels_are_vllms() -> None:
    """NVFP4 linear layers through Marlin below SM 10.0, one ``ModelOptNvFp4FusedMoE`` per MoE
    layer (58 of DeepSeek-V3's 61: ``first_k_dense_replace`` 3), ModelOpt's KV-cache method on
    every MLA layer."""
    checked = 0
    for cases in RECORDED.values():
        for row in cases.values():
            if not row["ok"] or not row["config"].startswith(("nvidia--DeepSeek-V3", "nvidia--Kimi")):
                continue
            k = row["kernels"]
            moe = 60 if "Kimi" in row["config"] else 58  # first_k_dense_replace 1 / 3 of 61 layers
            assert k["ModelOptNvFp4FusedMoE"] == moe and k["ModelOptKVCacheMethod"] == 61, k
            if row["capability"][0] < 10 and "K2.6" not in row["config"]:  # K2.6: only experts quantized
                assert "MarlinNvFp4LinearKernel" in k, k
            checked += 1
    assert checked >= 4


def test_blackwell_refused_by_name() -> None:
    """SM 10.0 on a release whose FlashInfer TRT-LLM experts are not recorded (0.31.0) is refused by name."""
    refused = model_weights(DSV31, tp=8, compute_capability=(10, 0), sm_count=148, vllm_version="0.31.0").refused or ""
    assert "TRT-LLM" in refused and "not modelled" in refused, refused


def test_plan_h100_dsv31_prints_vllms_figure() -> None:
    """``plan --gpu H100 --tensor-parallel-size 8`` on nvidia/DeepSeek-V3.1-NVFP4 (vLLM 0.28.0):
    the recorded figure after loading, and a verdict."""
    code, out = plan_output(DSV31, "H100", "--tensor-parallel-size", "8", "--vllm-version", "0.28.0")
    want = RECORDED["0.28.0"][f"{DSV31.name} H100 --tensor-parallel-size 8"]["allocated_bytes"]
    assert code == 0 and f"{want:,} bytes" in out, out[-2000:]
    assert "Model loading took 46.75 GiB memory" in out

"""Compressed-tensors W4A16 NVFP4 (llm-compressor's NVFP4A16: NVFP4 weights, 16-bit activations) against
vLLM itself.

vLLM serves it as ``CompressedTensorsW4A4Fp4(use_a16=True)`` (``compressed_tensors.py``
``_get_scheme_from_parts``: NVFP4 weights without input quantization) over
``init_nvfp4_linear_kernel(use_a16=True)``, the kernel choice of ModelOpt's ``W4A16_NVFP4``: Marlin FP4 on
every SM on 0.27.1-0.29.0; from 0.30.0 FlashInfer's CuTe DSL W4A16 GEMM on SM 10.0 / 10.3; on 0.32.0 /
0.33.0 Humming's NVFP4 kernel on SM 9.0 (where ``prioritize_humming`` ranks it first, humming-kernels
installed); Marlin elsewhere. After loading a layer holds what ModelOpt's does: the packed weight and its
fp8 group scales in the kernel's layout and one float32 global scale (the per-part ``weight_global_scale``
max-reduced and inverted), no input scale. Its MoE experts (``CompressedTensorsW4A4Nvfp4MoEMethod(use_a16=True)``)
go to ``MarlinExperts`` on every SM (no FlashInfer / CUTLASS backend takes 16-bit activations), Humming's
on 0.32.0 / 0.33.0 SM 9.0, with W4A4's tensors (the input global scales are created and kept).

The rows of ``quant-recorded-ctnvfp4a16-<version>.json`` are vLLM's own after ``process_weights_after_loading``
on the meta device (``quant_cases_ctnvfp4a16.py``: a composed Qwen3-8B and Qwen3-30B-A3B on the RTX 3090,
A100, H100, B200 and RTX 5090 at TP 1; H100 on 0.32.0 / 0.33.0 recorded with the humming-kernels wheel the
release pins). dryboot refused every one before ("W4A16 NVFP4 is not modelled").
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

import pytest
import quant_cases_ctnvfp4a16 as ct
from quant_harness import case_ids, dryboot_weights, load_recorded, plan_output, record_live

from dryboot.vllm.model_executor.layers.quantization.scaled_mm import ScaledScheme, ct_scheme

RECORDED = load_recorded("quant-recorded-ctnvfp4a16-")
CASES = case_ids(RECORDED)
RELEASES = ("0.27.1", "0.28.0", "0.29.0", "0.30.0", "0.31.0", "0.32.0", "0.33.0")


def _check(version: str, row: dict[str, Any]) -> None:
    report = dryboot_weights(ct.CONFIGS, row, version)
    if not row["ok"]:
        assert report.refused, f"vLLM or the oracle fails ({str(row.get('error'))[:200]}); dryboot answered"
        return
    assert not report.refused, report.refused
    assert report.stages[0].allocated_bytes == row["allocated_bytes"], (row, report.stages[0].allocated_bytes)


@pytest.mark.parametrize(("version", "cid"), CASES)
def test_matches_vllm_after_loading(version: str, cid: str) -> None:
    """Each recorded case byte-exact (refused by name before)."""
    _check(version, RECORDED[version][cid])


def test_scheme_is_weight_only_nvfp4() -> None:
    """A config group of NVFP4 weights without ``input_activations`` is the weight-only scheme; NVFP4 inputs
    keep W4A4's."""
    w = {"num_bits": 4, "type": "float", "strategy": "tensor_group", "group_size": 16, "symmetric": True}
    assert ct_scheme({"weights": w, "input_activations": None}) == ScaledScheme("nvfp4_a16", "group")
    assert ct_scheme({"weights": w, "input_activations": dict(w, dynamic="local")}) == ScaledScheme("nvfp4", "group")


def test_every_release_and_gpu_recorded() -> None:
    """Both configs on the five GPUs at TP 1 on every release, every row answered by vLLM, and the kernels vLLM
    named: Marlin's linear kernel below SM 9.0 and on SM 12.0 everywhere; CuTe DSL on SM 10.0 from 0.30.0;
    Humming on SM 9.0 on 0.32.0 / 0.33.0; the experts Marlin's (Humming's there)."""
    assert set(RECORDED) == set(RELEASES)
    for version, cases in RECORDED.items():
        seen = {(r["config"], r["gpu"]) for r in cases.values() if r["ok"]}
        configs = ("Qwen--Qwen3-8B+CT-NVFP4A16", "Qwen--Qwen3-30B-A3B+CT-NVFP4A16")
        assert seen == {(c, g[0]) for c in configs for g in ct.GPUS}, version
        for row in cases.values():
            assert row["kernels"].get(_linear_kernel(version, row["gpu"]), 0) > 0, (version, row["gpu"], row["kernels"])
            if "A3B" in row["config"]:
                experts = "HummingIndexedExperts" if _humming(version, row["gpu"]) else "MarlinExperts"
                assert any(k.endswith(experts) for k in row["linear_kernels"]), (version, row["gpu"], row)


def _humming(version: str, gpu: str) -> bool:
    return gpu == "H100" and version in ("0.32.0", "0.33.0")


def _linear_kernel(version: str, gpu: str) -> str:
    """The linear kernel vLLM names for the release and GPU (``init_nvfp4_linear_kernel(use_a16=True)``)."""
    if gpu == "B200" and version not in ("0.27.1", "0.28.0", "0.29.0"):
        return "FlashInferCuteDslNvFp4W4A16LinearKernel"
    return "HummingNvFp4LinearKernel" if _humming(version, gpu) else "MarlinNvFp4LinearKernel"


def test_plan_prints_weights() -> None:
    """``plan --gpu "RTX 3090"`` on the dense config (0.33.0): vLLM's figure, where dryboot refused before."""
    cfg = ct.CONFIGS / "Qwen--Qwen3-8B+CT-NVFP4A16"
    code, out = plan_output(cfg, "RTX 3090", "--vllm-version", "0.33.0")
    want = RECORDED["0.33.0"][f"{cfg.name} RTX 3090 --tensor-parallel-size 1"]["allocated_bytes"]
    assert f"{want:,} bytes" in out, out[-2000:]
    assert code in (0, 1, 4), out[-2000:]


@pytest.mark.skipif(not os.environ.get("DRYBOOT_VLLM_PYTHON"), reason="needs a boot environment (DRYBOOT_VLLM_PYTHON)")
def test_live_oracle(tmp_path: Path) -> None:
    """Re-record the dense case on the RTX 3090 with the boot environment's vLLM and check dryboot against it."""
    doc = record_live(
        tmp_path, ["Qwen--Qwen3-8B+CT-NVFP4A16"], RECORD_SET="ctnvfp4a16", RECORD_GPUS="RTX 3090", RECORD_FAST="1"
    )
    assert len(doc["cases"]) == 1
    for row in doc["cases"].values():
        _check(doc["vllm"], row)

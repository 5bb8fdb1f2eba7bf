"""dryboot's quantized Llama-4 text model against what vLLM holds after loading.

The Llama-4 set (``quant_cases_llama4.py``): ``data/weights/quant-recorded-llama4-<version>.json``
holds vLLM's own figures (``RECORD_SET=llama4 record_quant_weights.py``: the model built by vLLM's
loader on the meta device, ``process_weights_after_loading`` run, every storage still held
counted in 512-byte blocks) for tiny ``Llama4ForCausalLM`` configs under AWQ, GPTQ, AutoRound
(``auto_gptq`` / ``auto_awq`` packing), compressed-tensors W4A16 and W8A8 fp8 (channel weights,
dynamic tokens), on SM 8.6 / 8.9 / 9.0 at TP 1 and 2: the dense MLPs, shared experts and routed
experts quantized, the router not. Every case is checked in the default run (no vLLM needed);
with ``DRYBOOT_VLLM_PYTHON`` set, one is re-recorded live.
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

import pytest
import quant_cases_llama4 as l4
from quant_harness import assert_weights, case_ids, check_live_wna16, dryboot_weights, load_recorded

from dryboot.vllm.model_executor.model_loader.loader import model_weights

RECORDED = load_recorded("quant-recorded-llama4-")
CASES = case_ids(RECORDED)


def _refusal(version: str, row: dict[str, Any]) -> str | None:
    """What dryboot must name where it does not give vLLM's figure; ``None``: byte-exact."""
    sm = row["capability"][0] * 10 + row["capability"][1]
    config = row["config"]
    if "FP8-dynamic" in config and 90 <= sm < 110:
        return "CUTLASS grouped-GEMM"  # vLLM's fp8 channel experts on Hopper (the oracle lacks the kernel)
    if "FP8-block" in config and sm == 90 and version != "0.28.0":
        return "DeepGEMM"  # the dense fp8 block layers (scaled_mm.py)
    if "ModelOpt" in config and 100 <= sm < 110 and "NVFP4" not in config:
        # ModelOpt's experts on SM 10.x: FlashInfer TRT-LLM (NVFP4 modelled, recorded with
        # quant_fakes' FlashInfer stand-ins and RECORD_MXFP4_NATIVE; the oracle failed on the meta device before)
        return "TRT-LLM"
    return None


#: releases whose W8A8 / NVFP4 / ModelOpt rows dryboot's release gate refuses (none since 0.27.1 was checked)
GATED: tuple[str, ...] = ()


def _gated(version: str, row: dict[str, Any]) -> bool:
    """compressed-tensors W8A8 / NVFP4 and ModelOpt on a release of :data:`GATED`: dryboot's release
    gate (``weights.SCALED_CHECKED_RELEASES``) refuses them by name; where it is lifted, exact (0.27.1
    and 0.30.0 now: every row exact or refused as vLLM / the oracle fails)."""
    return version in GATED and any(k in row["config"] for k in ("W8A8", "NVFP4", "ModelOpt"))


def test_corpus_size() -> None:
    """Byte-exact: AWQ, GPTQ, AutoRound (GPTQ and AWQ packing) and W4A16 (the wrapper, Scout's and
    Maverick's text models at their real sizes too) on 0.27.1, 0.28.0, 0.30.0 and 0.33.0; W8A8 int8 /
    fp8, NVFP4 and ModelOpt FP8 / NVFP4 (SM 12.0 and 10.0 too: on 0.33.0 with FlashInfer's KV counter
    in the figure, refused by name before) on 0.27.1, 0.28.0, 0.30.0 and 0.33.0 (0.27.1's fp8 below
    SM 8.9: Humming, refused by name)."""
    exact: dict[str, set[str]] = {}
    n = 0
    for version, cases in RECORDED.items():
        for row in cases.values():
            humming_missing = version == "0.33.0" and row["capability"] == [9, 0] and not row.get("humming")
            if row["ok"] and _refusal(version, row) is None and not humming_missing and not _gated(version, row):
                exact.setdefault(version, set()).add(row["config"])
                n += 1
    for version in ("0.27.1", "0.28.0", "0.30.0", "0.32.0", "0.33.0"):
        assert {
            "tiny-llama4-text+AWQ-g128",
            "tiny-llama4-text+CT-W4A16-g32",
            "tiny-llama4-vl+CT-W4A16-g32",
            "meta-llama--Llama-4-Scout-17B-16E-Instruct-text+CT-W4A16-g32",
            "meta-llama--Llama-4-Maverick-17B-128E-Instruct-text+CT-W4A16-g32",
            "meta-llama--Llama-4-Maverick-17B-128E-Instruct-text+AWQ-g128",
            "tiny-llama4-text+GPTQ-Int4-g128",
            "tiny-llama4-text+AutoRound-W4A16",
            "tiny-llama4-text+AutoRound-W4A16-awq",
        } <= exact.get(version, set()), version
    for version in ("0.27.1", "0.28.0", "0.30.0", "0.32.0", "0.33.0"):
        assert {
            "tiny-llama4-text+CT-W8A8-FP8-dynamic",
            "tiny-llama4-text+CT-W8A8-FP8-block",
            "tiny-llama4-text+CT-W8A8-INT8-dynamic",
            "tiny-llama4-text+CT-NVFP4",
            "tiny-llama4-text+ModelOpt-FP8",
            "tiny-llama4-text+ModelOpt-NVFP4",
        } <= exact.get(version, set()), version
    assert n >= 350  # 86 on 0.27.1, 92 on 0.28.0, 90 on 0.30.0, 86 on 0.33.0
    # 0.33.0 on B200: ModelOpt NVFP4 experts through FlashInfer TRT-LLM (the oracle failed there before)
    rows = [r for r in RECORDED["0.33.0"].values() if r["gpu"] == "B200" and "ModelOpt-NVFP4" in r["config"]]
    assert sorted(r["argv"][-1] for r in rows if r["ok"] and _refusal("0.33.0", r) is None) == ["1", "2"]
    # and on 0.27.1, 0.28.0, 0.30.0 and 0.32.0 (the same layout; no KV counter before 0.33.0)
    for version in ("0.27.1", "0.28.0", "0.30.0", "0.32.0"):
        rows = [r for r in RECORDED[version].values() if r["gpu"] == "B200" and "ModelOpt-NVFP4" in r["config"]]
        assert sorted(r["argv"][-1] for r in rows if r["ok"] and _refusal(version, r) is None) == ["1", "2"], version


@pytest.mark.parametrize(("version", "cid"), CASES)
def test_matches_vllm_after_loading(version: str, cid: str) -> None:
    row = RECORDED[version][cid]
    if version == "0.33.0" and row["capability"] == [9, 0] and not row.get("humming"):
        pytest.skip("0.33.0 on SM 9.0 recorded without humming-kernels: not a CUDA install's choice")
    report = dryboot_weights(l4.CONFIGS, row, version)
    why = _refusal(version, row)
    if (
        _gated(version, row)
        and report.refused
        and "W8A8/NVFP4 layouts after loading are checked on vLLM" in report.refused
    ):
        return
    assert_weights(report, row, why)


def test_unrecorded_stays_refused_by_name() -> None:
    """A release, a GPU or a parallelism not recorded is refused by name; without a GPU the
    repacked layout is unknown."""
    cfg = l4.CONFIGS / "tiny-llama4-text+CT-W4A16-g32"
    assert "0.27.1, 0.28.0, 0.30.0, 0.32.0, 0.33.0 only" in (
        model_weights(cfg, compute_capability=(8, 6), sm_count=82, vllm_version="0.29.0").refused or ""
    )
    assert "SM 8.6, 8.9, 9.0 only" in (
        model_weights(cfg, compute_capability=(10, 0), sm_count=148, vllm_version="0.28.0").refused or ""
    )
    assert "pipeline or expert" in (
        model_weights(cfg, pp=2, compute_capability=(8, 6), sm_count=82, vllm_version="0.28.0").refused or ""
    )
    assert "name the GPU" in (model_weights(cfg, vllm_version="0.28.0").refused or "")


@pytest.mark.skipif(not os.environ.get("DRYBOOT_VLLM_PYTHON"), reason="needs vLLM (DRYBOOT_VLLM_PYTHON)")
def test_live_oracle(tmp_path: Path) -> None:
    """Re-record one case with the boot environment's vLLM and check dryboot against it."""
    check_live_wna16(tmp_path, "tiny-llama4-text+CT-W4A16-g32", "llama4", l4.CONFIGS)

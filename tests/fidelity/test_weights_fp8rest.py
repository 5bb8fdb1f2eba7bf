"""dryboot's weights of the published quantized configs ``plan --gpu H200`` left without a figure,
against what vLLM holds after loading (issue 33).

The set (``quant_cases_fp8rest.py``): ``data/weights/quant-recorded-fp8rest-<version>.json`` holds
vLLM's own figures (``RECORD_SET=fp8rest record_quant_weights.py``: the model built by vLLM's loader
on the meta device, ``process_weights_after_loading`` run, every storage still held counted in
512-byte blocks; DeepGEMM present on SM 9.0 as the CUDA wheel vendors it) for
XiaomiMiMo/MiMo-V2-Flash (plain fp8 blocks), poolside/Laguna-S-2.1-FP8 and Laguna-XS.2-FP8
(compressed-tensors fp8 blocks; XS.2's offline Hadamard transforms) and nvidia/MiniMax-M3-NVFP4
(ModelOpt MIXED_PRECISION), verbatim. Every case is checked in the default run (no vLLM needed):
byte-exact where dryboot answers, refused by name where vLLM or the oracle fails or the layout is
not modelled. With ``DRYBOOT_VLLM_PYTHON`` set, one case is re-recorded live.
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

import pytest
import quant_cases_fp8rest as fr
from quant_harness import (
    assert_weights,
    case_ids,
    dryboot_weights,
    load_recorded,
    plan_output,
    record_live,
)

from dryboot.vllm.model_executor.model_loader.loader import model_weights

RECORDED = load_recorded("quant-recorded-fp8rest-")
CASES = case_ids(RECORDED)
MIMO = "XiaomiMiMo--MiMo-V2-Flash"
LAGUNA_S = "poolside--Laguna-S-2.1-FP8"
LAGUNA_XS = "poolside--Laguna-XS.2-FP8"
MINIMAX_M3 = "nvidia--MiniMax-M3-NVFP4"


def _refusal(version: str, row: dict[str, Any]) -> str | None:
    """What dryboot must name where it does not give vLLM's figure; ``None``: byte-exact."""
    if not row["ok"]:
        return None
    return None


@pytest.mark.parametrize(("version", "cid"), CASES)
def test_matches_vllm_after_loading(version: str, cid: str) -> None:
    """Byte-exact where dryboot answers; where vLLM or the oracle fails, dryboot refuses."""
    row = RECORDED[version][cid]
    assert_weights(dryboot_weights(fr.CONFIGS, row, version), row, _refusal(version, row))


def test_corpus_size() -> None:
    """MiMo-V2-Flash exact on the oldest release that builds it (0.28.0: 0.27.1's transformers does
    not know ``mimo_v2_flash``, refused by vLLM and by name), 0.30.0 and 0.33.0 on SM 8.6, 8.9 and
    9.0 at TP 1, 2 and 4 (TP 4: a key part of 192 rows, off vLLM's 128-row blocks, which vLLM lets
    pass for a fused QKV layer), and at TP 8 on SM 9.0."""
    exact = {
        (v, row["config"], row["gpu"], row["argv"][1])
        for v, cases in RECORDED.items()
        for row in cases.values()
        if row["ok"] and not dryboot_weights(fr.CONFIGS, row, v).refused
    }
    for v in ("0.28.0", "0.30.0", "0.33.0"):
        for gpu in ("RTX 3090", "RTX 4090", "H100"):
            assert {(v, MIMO, gpu, tp) for tp in ("1", "2", "4")} <= exact, (v, gpu)
        assert (v, MIMO, "H100", "8") in exact


def test_laguna() -> None:
    """Laguna-S-2.1-FP8 exact on 0.27.1 and 0.30.0 (SM 8.9 / 9.0, TP 1), 0.28.0 (TP 1 and 8) and
    0.33.0 (SM 8.6 / 8.9 / 9.0 at TP 1 and 8: on SM 8.x FlashInfer's two KV counters, 48- and 72-head
    layers); Laguna-XS.2-FP8 (offline Hadamard transforms) exact at TP 1 on 0.27.1, 0.28.0, 0.30.0 and
    0.33.0, and at TP 8 refused as vLLM refuses it (its shared expert's 64 rows per rank off the
    128-row blocks). Laguna on the RTX 3090 is compressed-tensors fp8 below SM 8.9: its dense layers go to
    Humming's W8A16 fp8 kernel, ahead of Marlin; its rows, recorded without humming-kernels, hold Marlin's
    figure (``quant_harness.recorded_without_humming``: dryboot answers Humming's, test_quant_humfp8.py)."""
    for v, gpus, tps in (
        ("0.27.1", ("RTX 4090", "H100"), ("1",)),
        ("0.28.0", ("RTX 4090", "H100"), ("1", "8")),
        ("0.30.0", ("RTX 4090", "H100"), ("1",)),
        ("0.33.0", ("RTX 3090", "RTX 4090", "H100"), ("1", "8")),
    ):
        for gpu in gpus:
            for tp in tps:
                row = RECORDED[v][f"{LAGUNA_S} {gpu} --tensor-parallel-size {tp}"]
                assert_weights(dryboot_weights(fr.CONFIGS, row, v), row, None)
    for gpu in ("RTX 3090", "RTX 4090", "H100"):
        row = RECORDED["0.33.0"][f"{LAGUNA_XS} {gpu} --tensor-parallel-size 1"]
        assert_weights(dryboot_weights(fr.CONFIGS, row, "0.33.0"), row, None)
        row = RECORDED["0.33.0"][f"{LAGUNA_XS} {gpu} --tensor-parallel-size 8"]
        assert not row["ok"] and "output_partition_size = 64" in row["error"]
        assert_weights(dryboot_weights(fr.CONFIGS, row, "0.33.0"), row, "output size per rank (64)")
    counters = RECORDED["0.33.0"][f"{LAGUNA_S} RTX 3090 --tensor-parallel-size 1"]["allocated_bytes"]
    assert counters - RECORDED["0.33.0"][f"{LAGUNA_S} H100 --tensor-parallel-size 1"]["allocated_bytes"] > 3_932_160


def test_minimax_m3_nvfp4_on_0_28() -> None:
    """nvidia/MiniMax-M3-NVFP4 on vLLM 0.28.0 at TP 8: exact on SM 8.9 and 9.0 (Marlin MXFP8 linear
    layers, 240, and NVFP4 Marlin experts, 57 MoE layers, with their per-layer workspaces); on SM 9.0
    0.31.0 (Humming after Marlin, that Marlin layout not recorded there) refused by name (0.32.0's and
    0.33.0's Humming layout: test_weights_mm3hum.py)."""
    for gpu in ("RTX 4090", "H100"):
        row = RECORDED["0.28.0"][f"{MINIMAX_M3} {gpu} --tensor-parallel-size 8"]
        assert row["kernels"] == {"MarlinMxfp8LinearKernel": 240, "ModelOptNvFp4FusedMoE": 57}, row["kernels"]
        assert_weights(dryboot_weights(fr.CONFIGS, row, "0.28.0"), row, None)
    refused = model_weights(
        fr.CONFIGS / MINIMAX_M3, tp=8, compute_capability=(9, 0), sm_count=132, vllm_version="0.31.0"
    )
    assert "HummingMxfp8LinearKernel" in (refused.refused or ""), refused.refused


def test_kernels_are_vllms() -> None:
    """MiMo-V2-Flash: 98 ``Fp8LinearMethod`` layers (48 ``qkv_proj`` / ``o_proj`` and the one dense
    MLP's two), 47 ``Fp8MoEMethod`` blocks, ``Fp8KVCacheMethod`` on all 48 attention layers."""
    checked = 0
    for cases in RECORDED.values():
        for row in cases.values():
            if row["ok"] and row["config"] == MIMO:
                k = row["kernels"]
                assert (k["Fp8LinearMethod"], k["Fp8MoEMethod"], k["Fp8KVCacheMethod"]) == (98, 47, 48), k
                checked += 1
    assert checked >= 28
    assert all(not row["ok"] for row in RECORDED["0.27.1"].values() if row["config"] == MIMO)


def test_refused_by_name() -> None:
    """Outside what is recorded dryboot names what it does not model."""
    mimo = fr.CONFIGS / MIMO
    assert "name the GPU" in (model_weights(mimo).refused or "")
    assert "pipeline or expert" in (model_weights(mimo, pp=2, compute_capability=(9, 0), sm_count=132).refused or "")
    laguna = fr.CONFIGS / LAGUNA_S
    assert "name the GPU" in (model_weights(laguna).refused or "")
    refused = model_weights(laguna, compute_capability=(9, 0), sm_count=132, vllm_version="0.29.0").refused or ""
    assert "checked on vLLM 0.27.1, 0.28.0, 0.30.0, 0.33.0 only" in refused, refused
    refused = model_weights(laguna, compute_capability=(10, 0), sm_count=148, vllm_version="0.30.0").refused or ""
    assert "SM 8.6, 8.9, 9.0 only" in refused, refused


@pytest.mark.parametrize("config", [MIMO, MINIMAX_M3, LAGUNA_S, LAGUNA_XS])
def test_plan_h200_gives_the_weights(config: str) -> None:
    """``plan --gpu H200 -tp 8`` on the published config prints vLLM's figure (vLLM 0.28.0, plan's
    default; the H100 row: the same SM 9.0 and SM count)."""
    # Laguna-XS.2 at TP 1 (at TP 8 vLLM refuses it, above)
    v, tp = "0.28.0", "1" if config == LAGUNA_XS else "8"
    _code, out = plan_output(fr.CONFIGS / config, "H200", "--tensor-parallel-size", tp)
    want = RECORDED[v][f"{config} H100 --tensor-parallel-size {tp}"]["allocated_bytes"]
    assert f"{want:,} bytes" in out, out[-2000:]
    assert "Weights: not given" not in out


@pytest.mark.skipif(not os.environ.get("DRYBOOT_VLLM_PYTHON"), reason="needs vLLM (DRYBOOT_VLLM_PYTHON)")
def test_live_oracle(tmp_path: Path) -> None:
    """Re-record MiMo-V2-Flash on the RTX 4090 at TP 2 with the boot environment's vLLM and check
    dryboot against it."""
    doc = record_live(tmp_path, [MIMO], RECORD_SET="fp8rest", RECORD_GPUS="RTX 4090", RECORD_TPS="2", RECORD_FAST="1")
    for row in doc["cases"].values():
        report = dryboot_weights(fr.CONFIGS, row, doc["vllm"])
        assert_weights(report, row, _refusal(doc["vllm"], row))

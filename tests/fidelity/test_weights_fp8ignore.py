"""dryboot's ignore-list matching per quantization method, against what vLLM holds after loading
(issue 33).

The set (``quant_cases_fp8ignore.py``): composed Qwen3-8B / Qwen3-30B-A3B configs (each with its
``SOURCE``) whose ignore lists hold module prefixes, one shard of a fused layer, vLLM's fused
name, one expert's projection or ``re:`` patterns; ``data/weights/quant-recorded-fp8ignore-<version>.json``
holds vLLM's own figures on 0.27.1, 0.30.0 and 0.33.0 (``RECORD_SET=fp8ignore record_quant_weights.py``).
Every case is checked in the default run (no vLLM needed): byte-exact where vLLM builds the model,
refused by name where it refuses (a fused layer's shards on and off the list).
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

import pytest
import quant_cases_fp8ignore as fi
from quant_harness import assert_weights, case_ids, dryboot_weights, load_recorded, record_live

from dryboot.vllm.model_executor.model_loader.loader import model_weights

RECORDED = load_recorded("quant-recorded-fp8ignore-")
CASES = case_ids(RECORDED)
RELEASES = ("0.27.1", "0.30.0", "0.33.0")
#: the configs vLLM refuses (some but not all shards of a fused layer on the list), and the line
#: dryboot names it with
SHARDS_REFUSED = {
    "Qwen--Qwen3-8B+FP8-block-shard": "some but not all shards of model.layers.0.self_attn.qkv_proj",
    "Qwen--Qwen3-8B+CT-W8A8-FP8-shard": "some but not all shards of model.layers.0.self_attn.qkv_proj",
    "Qwen--Qwen3-8B+AWQ-shard": "some but not all shards of model.layers.0.self_attn.qkv_proj",
}


#: the ModelOpt NVFP4 MoE config (excluded experts); on 0.33.0 its H100 row is recorded with
#: humming-kernels 0.1.19 (Humming's NVFP4 kernels ahead of Marlin on SM 9.0, as a CUDA install has them)
NVFP4_EXPERTS = "nvidia--Qwen3-30B-A3B-NVFP4+experts"


def _refusal(version: str, row: dict[str, Any]) -> str | None:
    """What dryboot must name where vLLM refuses or the layout is not checked; ``None``: byte-exact."""
    if not row["ok"]:
        return SHARDS_REFUSED.get(row["config"])
    return None


@pytest.mark.parametrize(("version", "cid"), CASES)
def test_matches_vllm_after_loading(version: str, cid: str) -> None:
    """Byte-exact where vLLM builds the model; refused by name where it refuses."""
    row = RECORDED[version][cid]
    assert_weights(dryboot_weights(fi.CONFIGS, row, version), row, _refusal(version, row))


def test_corpus() -> None:
    """Every config (ten) on each of the three releases, SM 8.9 and 9.0 at TP 1; the shard configs
    refused by vLLM with its own ValueError, every other config built."""
    assert len(CASES) == 60
    for v in RELEASES:
        for name in sorted(p.name for p in fi.CONFIGS.iterdir()):
            for gpu in ("RTX 4090", "H100"):
                row = RECORDED[v][f"{name} {gpu} --tensor-parallel-size 1"]
                if name in SHARDS_REFUSED:
                    assert not row["ok"] and "ValueError" in row["error"], (v, name, row.get("error"))
                elif row["ok"] is False:
                    pytest.fail(f"{v} {name} {gpu}: {row['error'][:200]}")


def _kernels(v: str, name: str, gpu: str = "RTX 4090") -> dict[str, int]:
    kernels: dict[str, int] = RECORDED[v][f"{name} {gpu} --tensor-parallel-size 1"]["kernels"]
    return kernels


def test_each_methods_rule() -> None:
    """What each rule leaves quantized, by vLLM's own kernel counts (Qwen3-8B: 36 layers x 4 linear
    layers): plain fp8's prefixes skip nothing (144), its fused name and shards skip layer 0 (141);
    ModelOpt's "model.layers.1" skips layers 1 and 10-19 as a substring and "model.layers.2.mlp"
    two more (98); compressed-tensors' pattern on the fused "qkv_proj" name skips it from 0.30.0
    (143) and not on 0.27.1 (144); excluded experts (an MoE layer's, one expert's projection) are
    served unquantized under plain fp8 and ModelOpt alike (two ``UnquantizedFusedMoEMethod``)."""
    for v in RELEASES:
        assert _kernels(v, "Qwen--Qwen3-8B+FP8-block-prefix")["Fp8LinearMethod"] == 144
        assert _kernels(v, "Qwen--Qwen3-8B+FP8-block-fused")["Fp8LinearMethod"] == 141
        assert _kernels(v, "Qwen--Qwen3-8B+ModelOpt-FP8-substring")["CutlassFP8ScaledMMLinearKernel"] == 98
    fused = "Qwen--Qwen3-8B+CT-W8A8-FP8-fusedregex"
    assert _kernels("0.27.1", fused)["CutlassFP8ScaledMMLinearKernel"] == 144
    for v in ("0.30.0", "0.33.0"):
        assert _kernels(v, fused)["CutlassFP8ScaledMMLinearKernel"] == 143
    for v in RELEASES:
        for name in ("Qwen--Qwen3-30B-A3B-FP8+experts", NVFP4_EXPERTS):
            assert _kernels(v, name).get("UnquantizedFusedMoEMethod") == 2, (v, name, _kernels(v, name))


def test_without_a_gpu() -> None:
    """Without ``--gpu`` (the layout vLLM creates, before its post-load step) the same rules: plain
    fp8's prefixes leave every decoder layer fp8, ModelOpt's substring leaves 11 layers in bfloat16,
    its excluded experts two MoE layers (the figures the recorder gives before
    ``process_weights_after_loading``, on the H100: the RTX 4090's ModelOpt FP8 row holds
    FlashInfer's KV counter too)."""
    for v in RELEASES:
        for name in ("Qwen--Qwen3-8B+FP8-block-prefix", "Qwen--Qwen3-8B+ModelOpt-FP8-substring", NVFP4_EXPERTS):
            row = RECORDED[v][f"{name} H100 --tensor-parallel-size 1"]
            report = model_weights(fi.CONFIGS / name, vllm_version=v)
            assert not report.refused, report.refused
            assert report.stages[0].allocated_bytes == row["built_allocated_bytes"], (v, name)


@pytest.mark.skipif(not os.environ.get("DRYBOOT_VLLM_PYTHON"), reason="needs vLLM (DRYBOOT_VLLM_PYTHON)")
def test_live_oracle(tmp_path: Path) -> None:
    """Re-record the plain fp8 prefix and shard configs on the RTX 4090 with the boot environment's
    vLLM and check dryboot against them."""
    names = ["Qwen--Qwen3-8B+FP8-block-prefix", "Qwen--Qwen3-8B+FP8-block-shard"]
    doc = record_live(tmp_path, names, RECORD_SET="fp8ignore", RECORD_GPUS="RTX 4090", RECORD_FAST="1")
    for row in doc["cases"].values():
        assert_weights(dryboot_weights(fi.CONFIGS, row, doc["vllm"]), row, _refusal(doc["vllm"], row))

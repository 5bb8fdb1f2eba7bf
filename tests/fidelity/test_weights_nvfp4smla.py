"""dryboot's ModelOpt NVFP4 sparse-MLA weights (nvidia/DeepSeek-V3.2-NVFP4, nvidia/GLM-5-NVFP4 and its
5.x successors: the MLA projections and the indexer excluded, NVFP4 dense MLPs / shared and routed
experts, ``kv_cache_quant_algo: FP8``) on a named GPU against what vLLM holds after
``process_weights_after_loading`` (issue 33).

vLLM's figures: ``data/weights/quant-recorded-nvfp4smla-<version>.json``, recorded by
``RECORD_SET=nvfp4smla record_quant_weights.py`` (each config in a process of its own; with
``RECORD_ARGV='["--kv-cache-dtype","bfloat16"]'`` for the bfloat16-cache rows) for the published
configs of ``quant_cases_nvfp4smla.py`` at TP 8. Byte-exact where dryboot answers; refused by name
where vLLM or the oracle fails: the checkpoints' fp8 KV cache on SM 9.x before 0.30.0 (no sparse MLA
backend takes ``fp8_e4m3``). SM 10.0 (B200) on 0.28.0 and 0.30.0-0.33.0 (recorded with
``RECORD_MXFP4_NATIVE=1 RECORD_WORKSPACE=1 RECORD_GPUS=B200``, the fp8 cache, and a bfloat16 one on 0.28.0
and 0.33.0): FlashInfer's NVFP4 layers and TRT-LLM experts, FLASHINFER_MLA_SPARSE (0.33.0's FA4 with a
bfloat16 cache: the same impl), which reserves nothing while the model is built, and the MLA prefill
backend its layers keep (FLASH_ATTN for DeepSeek-V3.2's (128, 64, 128) dims; TRT-LLM ragged's 394 MiB workspace for
GLM-5's (192, 64, 256)): ``loader.mla_prefill_workspace``, refused by name before. From
0.31.0 the checkpoints' fp8 cache (FLASHINFER_MLA_SPARSE_SM90) holds each layer's
FLASH_ATTN_MLA_SPARSE ``cu_seqlens_q`` less than a bfloat16 cache (recorded on 0.31.0, 0.32.0 and 0.33.0,
H200; 0.32.0's and 0.33.0's NVFP4 layers and experts go through Humming on SM 9.0, recorded with
humming-kernels 0.1.17 and, through ``DRYBOOT_HUMMING_PATH``, 0.1.19 as vLLM's CUDA wheels install them).
"""

from __future__ import annotations

from typing import Any

import pytest
import quant_cases_nvfp4smla as ns
from quant_harness import assert_weights, case_ids, dryboot_weights, load_recorded, plan_output

from dryboot.vllm.model_executor.model_loader.loader import model_weights

RECORDED = load_recorded("quant-recorded-nvfp4smla-")
CASES = case_ids(RECORDED)
DSV32 = "nvidia--DeepSeek-V3.2-NVFP4"
GLM5 = "nvidia--GLM-5-NVFP4"
BF16 = "--kv-cache-dtype bfloat16"
#: TRT-LLM ragged's prefill workspace (``VLLM_FLASHINFER_WORKSPACE_BUFFER_SIZE``)
RAGGED = 394 * 1024 * 1024


def _weights(row: dict[str, Any], version: str) -> Any:
    """dryboot's report for a recorded row, at its recorded KV cache dtype and ``max_num_seqs``."""
    argv = row["argv"]
    kv = argv[argv.index("--kv-cache-dtype") + 1] if "--kv-cache-dtype" in argv else "auto"
    return dryboot_weights(ns.CONFIGS, row, version, max_num_seqs=row.get("max_num_seqs"), kv_cache_dtype=kv)


def _refusal(row: dict[str, Any], version: str) -> str | None:
    """What dryboot must name where it does not give vLLM's figure (``None``: byte-exact)."""
    cap = tuple(row["capability"])
    if cap[0] == 12 and version != "0.28.0":
        return "on SM 12.0 with vLLM"  # recorded on 0.28.0 only
    if cap[0] == 9 and "--kv-cache-dtype" not in row["argv"] and version < "0.30.0":
        return "no sparse MLA backend of vLLM"
    return None


@pytest.mark.parametrize(("version", "cid"), CASES)
def test_matches_vllm_after_loading(version: str, cid: str) -> None:
    """Byte-exact where vLLM loads the model; the named refusal where it fails."""
    row = RECORDED[version][cid]
    assert_weights(_weights(row, version), row, _refusal(row, version))


def test_the_fp8_cache_on_sm90() -> None:
    """SM 9.0 under ``auto`` (the checkpoints' FP8 KV cache): before 0.30.0 vLLM finds no sparse MLA
    backend for ``fp8_e4m3``; 0.30.0 serves it (FLASHINFER_MLA_SPARSE_SM90) with the same weights as
    a bfloat16 cache. Every loaded row: the NVFP4 layers through Marlin, ``ModelOptKVCacheMethod`` on
    every attention layer (through Humming on 0.32.0)."""
    seen = 0
    for v, cases in RECORDED.items():
        for row in cases.values():
            if tuple(row["capability"]) != (9, 0):
                continue
            seen += 1
            if "--kv-cache-dtype" in row["argv"] or v >= "0.30.0":
                assert row["ok"], row.get("error")
                assert row["kernels"]["ModelOptKVCacheMethod"] == row["kernels"]["ModelOptNvFp4FusedMoE"] + 3
            else:
                assert not row["ok"] and "No valid attention backend" in row["error"], row
    assert seen >= 6
    fp8 = RECORDED["0.30.0"][f"{DSV32} H200 --tensor-parallel-size 8"]["allocated_bytes"]
    assert fp8 == RECORDED["0.30.0"][f"{DSV32} H200 --tensor-parallel-size 8 {BF16}"]["allocated_bytes"]
    # 0.31.0, 0.33.0: a bfloat16 cache's FLASH_ATTN_MLA_SPARSE layers hold an int32 [8193] cu_seqlens_q
    # each (33,280 bytes in 512-byte blocks; 61 layers, 78 on GLM-5), the fp8 cache's SM90 backend none
    for version in ("0.31.0", "0.33.0"):
        for name, layers in ((DSV32, 61), (GLM5, 78)):
            rows = RECORDED[version]
            gap = rows[f"{name} H200 --tensor-parallel-size 8 {BF16}"]["allocated_bytes"]
            assert gap - rows[f"{name} H200 --tensor-parallel-size 8"]["allocated_bytes"] == layers * 33_280


def test_b200_exact_with_the_prefill_workspace() -> None:
    """SM 10.0 at TP 8 on 0.28.0 and 0.30.0-0.33.0 (refused by name before: "MLA prefill backend ... which
    prefill backend a model of MLA, MLA_INDEXER layers builds is not modelled", or as not recorded):
    vLLM's figures (DeepSeek-V3.2-NVFP4 52,048,936,960 bytes per rank on 0.28.0, 52,603,615,744 on 0.30.0
    with its index groups' request ids, 52,603,365,888 on 0.31.0-0.33.0; GLM-5-NVFP4 59,443,849,216,
    60,099,478,528, 60,099,159,040), the NVFP4 experts through ``TrtLlmNvFp4ExpertsMonolithic`` (0.33.0; its layers
    through FlashInfer's CuTe DSL kernel). Only GLM-5's (192, 64, 256) MLA dims build TRT-LLM ragged's
    prefill, whose 394 MiB workspace dryboot adds; the bfloat16 cache's figure is the fp8 one's
    (FLASHINFER_MLA_SPARSE, and 0.33.0's FA4 first, reserve nothing while the model is built)."""
    want = {
        ("0.28.0", DSV32): 52_048_936_960,
        ("0.28.0", GLM5): 59_443_849_216,
        ("0.30.0", DSV32): 52_603_615_744,
        ("0.30.0", GLM5): 60_099_478_528,
        **{(v, DSV32): 52_603_365_888 for v in ("0.31.0", "0.32.0", "0.33.0")},
        **{(v, GLM5): 60_099_159_040 for v in ("0.31.0", "0.32.0", "0.33.0")},
    }
    for (version, name), nbytes in want.items():
        rows = RECORDED[version]
        row = rows[f"{name} B200 --tensor-parallel-size 8"]
        assert row["ok"] and row["allocated_bytes"] == nbytes, (version, name)
        rep = _weights(row, version)
        assert not rep.refused, rep.refused
        prefill = [n for n in rep.notes if "MLA prefill workspace" in n]
        assert ["TRTLLM_RAGGED" in n for n in prefill] == ([True] if name == GLM5 else []), prefill
        bf16 = rows.get(f"{name} B200 --tensor-parallel-size 8 {BF16}")
        assert bf16 is None or bf16["allocated_bytes"] == nbytes, (version, name)
    row = RECORDED["0.33.0"][f"{DSV32} B200 --tensor-parallel-size 8"]
    assert row["kernels"]["FlashInferCuteDslNvFp4LinearKernel"] == 183
    assert row["linear_kernels"] == {"ABCMeta": 58, "FusedMoEKernel/TrtLlmNvFp4ExpertsMonolithic": 58}
    # recorded with the worker's workspace manager set up, as Worker.init_device does (TRT-LLM ragged's
    # constructor fails without it: GLM-5's 0.28.0 row before)
    assert RECORDED["0.33.0"][f"{GLM5} B200 --tensor-parallel-size 8"]["workspace"]


def test_b200_other_sparse_backends_refused_by_name() -> None:
    """On SM 10.x the sparse layers' own backend decides what else is built: FLASHMLA_SPARSE (a 16-bit
    cache above 16 heads per rank, or named) reserves its own buffers from the worker's workspace, not
    modelled there: refused by name, as is a release not recorded."""
    cfg = ns.CONFIGS / DSV32
    for version, tp, kv, backend, why in (
        ("0.28.0", 4, "bfloat16", None, "take FLASHMLA_SPARSE (bfloat16 cache, 32 heads per rank)"),
        ("0.33.0", 8, "auto", "FLASHMLA_SPARSE", "take FLASHMLA_SPARSE (fp8_e4m3 cache, 16 heads per rank)"),
        ("0.29.0", 8, "auto", None, "checked on vLLM 0.28.0, 0.30.0, 0.31.0, 0.32.0, 0.33.0 only"),
    ):
        rep = model_weights(
            cfg,
            tp=tp,
            compute_capability=(10, 0),
            sm_count=148,
            vllm_version=version,
            kv_cache_dtype=kv,
            attention_backend=backend,
            max_num_batched_tokens=8192,
            max_num_seqs=1024,
        )
        assert rep.refused and why in rep.refused, (version, tp, kv, rep.refused)


def test_corpus_size() -> None:
    """DeepSeek-V3.2-NVFP4 exact on H100 / H200 at 0.28.0 (and on the RTX 5090 under ``auto``: its
    fp8_e4m3 cache taken as fp8_ds_mla, CUTLASS NVFP4 layers) and on H200 at 0.30.0 (its index
    groups), GLM-5-NVFP4 on H200 at 0.28.0 and 0.30.0, both on H200 at 0.31.0, 0.32.0 and 0.33.0 (the fp8
    cache and a bfloat16 one; 0.32.0 / 0.33.0 through Humming), GLM-5.1 / 5.2 (IndexCache) / 5.3-NVFP4 at 0.28.0."""
    exact = {
        (v, row["config"], row["gpu"])
        for v, cases in RECORDED.items()
        for row in cases.values()
        if row["ok"] and not _weights(row, v).refused
    }
    want = {
        ("0.28.0", DSV32, "H100"),
        ("0.28.0", DSV32, "H200"),
        ("0.28.0", DSV32, "RTX 5090"),
        *((v, name, "B200") for v in ("0.28.0", "0.30.0", "0.31.0", "0.32.0", "0.33.0") for name in (DSV32, GLM5)),
        ("0.30.0", DSV32, "H200"),
        ("0.31.0", DSV32, "H200"),
        ("0.31.0", GLM5, "H200"),
        ("0.33.0", DSV32, "H200"),
        ("0.33.0", GLM5, "H200"),
        ("0.32.0", DSV32, "H200"),
        ("0.32.0", GLM5, "H200"),
        ("0.28.0", GLM5, "H200"),
        ("0.30.0", GLM5, "H200"),
        ("0.28.0", "nvidia--GLM-5.1-NVFP4", "H200"),
        ("0.28.0", "nvidia--GLM-5.2-NVFP4", "H200"),
        ("0.28.0", "nvidia--GLM-5.3-NVFP4", "H200"),
    }
    assert want <= exact, want - exact


def test_refused_by_name() -> None:
    """A release not recorded, another named KV cache dtype, a GPU vLLM has no sparse backend for."""
    cfg = ns.CONFIGS / DSV32
    for version, cap, sms, kv, why in (
        ("0.29.0", (9, 0), 132, "bfloat16", "checked on vLLM 0.28.0, 0.30.0, 0.31.0, 0.32.0, 0.33.0 only"),
        ("0.28.0", (9, 0), 132, "fp8_ds_mla", "not recorded"),
        ("0.28.0", (8, 9), 128, "bfloat16", "no sparse MLA backend below SM 9.0"),
        ("0.30.0", (12, 0), 170, "auto", "on SM 12.0 with vLLM 0.30.0 are not recorded"),
        ("0.28.0", (9, 0), 132, "auto", "no sparse MLA backend of vLLM 0.28.0 serves on SM 9.x"),
    ):
        rep = model_weights(
            cfg,
            tp=8,
            compute_capability=cap,
            sm_count=sms,
            vllm_version=version,
            kv_cache_dtype=kv,
            max_num_batched_tokens=8192,
            max_num_seqs=1024,
        )
        assert rep.refused and why in rep.refused, (version, cap, kv, rep.refused)


def test_plan_h200_gives_the_weights() -> None:
    """``plan --gpu H200 -tp 8 --kv-cache-dtype bfloat16`` on GLM-5-NVFP4 and DeepSeek-V3.2-NVFP4 prints
    vLLM's figure (0.28.0, plan's default); without the flag it refuses the checkpoints' fp8 cache by
    name, as vLLM does. (DeepSeek-V3.2's config hook takes the given ``bfloat16`` as ``auto`` after
    vLLM has resolved the checkpoint's dtype, so the cache stays bfloat16.)"""
    for name in (GLM5, DSV32):
        want = RECORDED["0.28.0"][f"{name} H200 --tensor-parallel-size 8 {BF16}"]["allocated_bytes"]
        _code, out = plan_output(
            ns.CONFIGS / name, "H200", "--tensor-parallel-size", "8", "--kv-cache-dtype", "bfloat16"
        )
        assert f"{want:,} bytes" in out, (name, out[-2000:])
    code, out = plan_output(ns.CONFIGS / GLM5, "H200", "--tensor-parallel-size", "8")
    assert code == 2 and "No valid attention backend" in out, out[-2000:]


@pytest.mark.parametrize("version", ["0.31.0", "0.33.0"])
def test_plan_h200_serves_the_fp8_cache(version: str) -> None:
    """``plan --gpu H200 -tp 8`` under ``auto`` (the checkpoints' fp8_e4m3 cache) on 0.31.0 / 0.33.0: vLLM's
    weights figure and its FLASHINFER_MLA_SPARSE_SM90 block line (the KV geometry itself:
    ``test_sm90_sparse_mla.py``), exit 0; before, exit 2 ("whose cache layout dryboot does not model")."""
    for name in (GLM5, DSV32):
        want = RECORDED[version][f"{name} H200 --tensor-parallel-size 8"]["allocated_bytes"]
        code, out = plan_output(ns.CONFIGS / name, "H200", "--tensor-parallel-size", "8", "--vllm-version", version)
        assert code == 0, out[-2000:]
        assert f"{want:,} bytes" in out, (name, out[-2000:])
        assert (
            "Setting kv cache block size to 64 for DEEPSEEK_V32_INDEXER/FLASHINFER_MLA_SPARSE_SM90 backend(s)." in out
        )

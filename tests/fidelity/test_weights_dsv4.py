"""DeepSeek-V4's weights against vLLM's own build: the tiny config and the published
DeepSeek-V4-Flash / -Pro configs under their published ``quantization_config`` (fp8 128x128
blocks with e8m0 scales, ``expert_dtype: fp4`` experts through ``Mxfp4MoEMethod``'s Marlin
layout), built on the meta device and put through ``process_weights_after_loading``.

vLLM's figures: ``data/weights/quant-recorded-dsv4-<version>.json``, recorded by
``RECORD_SET=dsv4 record_quant_weights.py`` (``quant_cases_dsv4.py``: RTX 3090, A100, RTX 4090,
H100 at TP 1, 2, 4 and 8 on 0.33.0; 0.30.0, 0.31.0, 0.32.0: 0.33.0's cases on the SM 8.x GPUs
(``RECORD_CASES``, ``RECORD_GPUS``; DeepSeek-V4-Pro on the A100), the same figures as 0.33.0's;
0.28.0: the tiny config and DeepSeek-V4-Flash on the SM 8.x GPUs; 0.27.1 (0.28.0's figures) and
0.29.0 (0.28.0's rotary tables, no eager scratch pool, the broadcast mixer built as on 0.33.0):
the tiny configs and DeepSeek-V4-Flash on the SM 8.x GPUs; ``--kv-cache-dtype fp8``, ``--kernel-config
'{"enable_jit_warmup": false}'``), each row with the scheduler's ``max_num_batched_tokens`` (the
top-k buffer's rows). SM 9.0 fails in 0.33.0's oracle: vLLM's fp8 block linear layers go through
DeepGEMM's ``transform_sf_into_required_layout``, which has no fake shape; dryboot refuses it by
name. 0.27.1-0.32.0's boot environments fail to import the vendored DeepGEMM (its library needs
CUDA's torch libraries) and build the H100 with CUTLASS, which a CUDA install does not: their
H100 rows are not kept.
"""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any

import pytest
import quant_cases_dsv4 as dsv4
from quant_harness import case_ids, load_recorded, plan_output, record_live, tp_of

from dryboot.vllm.model_executor.model_loader.loader import model_weights

RECORDED = load_recorded("quant-recorded-dsv4-")
CASES = case_ids(RECORDED)
#: releases whose oracle build lacks the first layer's ``hc_attn_fn_broadcast``: 0.27.1 and 0.28.0
#: make it in ``load_weights`` (``finalize_mhc_broadcast_weights``), which the meta-device build
#: does not run (no checkpoint values); 0.29.0-0.33.0 in ``process_weights_after_loading``, which
#: it runs
BROADCAST_NOT_BUILT = ("0.27.1", "0.28.0")


def _broadcast_bytes(row: dict[str, Any]) -> int:
    """The ``[(2 + m) m, H]`` float32 broadcast mixer, in 512-byte blocks."""
    config = json.loads((dsv4.CONFIGS / row["config"] / "config.json").read_text())
    m, h = config["hc_mult"], config["hidden_size"]
    return -(-4 * (2 + m) * m * h // 512) * 512


def _dryboot(row: dict[str, Any], version: str, **kw: Any) -> Any:
    args: dict[str, Any] = {
        "tp": tp_of(row),
        "compute_capability": tuple(row["capability"]),
        "sm_count": row["sm_count"],
        "vllm_version": version,
        "max_num_batched_tokens": row.get("max_num_batched_tokens"),
    }
    return model_weights(dsv4.CONFIGS / row["config"], **{**args, **kw})


@pytest.mark.parametrize(("version", "cid"), CASES)
def test_matches_vllm_after_loading(version: str, cid: str) -> None:
    """Byte-exact where vLLM builds it; refused by name where the oracle cannot build it (SM 9.0)."""
    row = RECORDED[version][cid]
    report = _dryboot(row, version)
    if not row["ok"]:
        assert "transform_sf_into_required_layout" in row["error"], row["error"]
        assert report.refused is not None and "DeepGEMM" in report.refused, report.refused
        return
    if row["config"].endswith("-bf16"):  # unquantized: UnquantizedFusedMoEMethod experts
        assert row["quantization"] is None and set(row["kernels"]) == {"UnquantizedFusedMoEMethod"}
    else:
        assert row["quantization"] == "deepseek_v4_fp8"
        assert set(row["kernels"]) == {"Fp8LinearMethod", "Mxfp4MoEMethod"}
    assert report.refused is None, report.refused
    extra = _broadcast_bytes(row) if version in BROADCAST_NOT_BUILT else 0
    assert report.stages[0].allocated_bytes == row["allocated_bytes"] + extra, cid


def test_corpus() -> None:
    """Every SM 8.x GPU at TP 1, 2, 4 and 8 of the tiny config and the published ones, TP 2 holding
    less than TP 1 (the sharded layers); SM 9.0 recorded as vLLM's failure."""
    rows = RECORDED["0.33.0"]
    built = [r for r in rows.values() if r["ok"]]
    assert {r["config"] for r in built} >= {"tiny-DeepseekV4", "deepseek-ai--DeepSeek-V4-Flash"}
    assert {tp_of(r) for r in built} == {1, 2, 4, 8}
    assert all(r["capability"][0] == 8 for r in built)
    assert all(not r["ok"] for r in rows.values() if r["capability"][0] == 9)
    # an H100 row another release's oracle built (without DeepGEMM) is not what a CUDA install holds
    assert all(not r["ok"] for doc in RECORDED.values() for r in doc.values() if r["capability"][0] == 9)
    by_tp = {tp_of(r): r for r in built if r["gpu"] == "A100-80GB" and r["config"] == "tiny-DeepseekV4"}
    assert by_tp[2]["allocated_bytes"] < by_tp[1]["allocated_bytes"]


@pytest.mark.parametrize(
    ("version", "like"), [("0.30.0", "0.33.0"), ("0.31.0", "0.33.0"), ("0.32.0", "0.33.0"), ("0.27.1", "0.28.0")]
)
def test_releases_recorded_alike(version: str, like: str) -> None:
    """0.30.0-0.32.0 hold what 0.33.0 holds, 0.27.1 what 0.28.0 holds: every case both record has
    the same figure (and the same outcome); 0.29.0 is its own (0.28.0's ropes, no scratch pool)."""
    rows, base = RECORDED[version], RECORDED[like]
    shared = sorted(set(rows) & set(base))
    assert len(shared) >= 20, (version, len(shared))
    for cid in shared:
        got, want = rows[cid], base[cid]
        assert (got["ok"], got.get("allocated_bytes")) == (want["ok"], want.get("allocated_bytes")), cid


def test_top_k_buffer_follows_max_num_batched_tokens() -> None:
    """The shared top-k buffer (int32 ``[max_num_batched_tokens, index_topk]``) is the only term
    that moves with the scheduler: vLLM's A100 (2048 rows) and RTX 4090 (8192) rows differ by it."""
    rows = RECORDED["0.33.0"]
    a100 = rows["tiny-DeepseekV4 A100-80GB --tensor-parallel-size 1"]
    rtx = rows["tiny-DeepseekV4 RTX 4090 --tensor-parallel-size 1"]
    rows_apart = rtx["max_num_batched_tokens"] - a100["max_num_batched_tokens"]
    assert rtx["allocated_bytes"] - a100["allocated_bytes"] == 4 * 256 * rows_apart


def test_refusals_name_what_is_missing(tmp_path: Path) -> None:
    row = RECORDED["0.33.0"]["tiny-DeepseekV4 A100-80GB --tensor-parallel-size 1"]

    def refused(**kw: Any) -> str:
        report = _dryboot(row, kw.pop("version", "0.33.0"), **kw)
        assert report.refused is not None
        assert "\n" not in report.refused
        return str(report.refused)

    # every release 0.27.1-0.33.0 is checked (recorded); another is refused by name
    assert "checked on vLLM 0.27.1, 0.28.0, 0.29.0, 0.30.0, 0.31.0, 0.32.0, 0.33.0" in refused(version="0.34.0")
    assert "DeepGEMM" in refused(compute_capability=(9, 0))
    assert "TRT-LLM" in refused(compute_capability=(10, 0))
    assert "FlashInfer" in refused(compute_capability=(12, 0))
    assert "name the GPU" in refused(compute_capability=None)
    assert "max_num_batched_tokens" in refused(max_num_batched_tokens=None)
    assert "expert and data parallelism" in refused(expert_parallel=True)
    assert "pipeline" in refused(pp=2)
    config = (dsv4.CONFIGS / "tiny-DeepseekV4" / "config.json").read_text()
    for old, new, named in (
        ('"expert_dtype": "fp4"', '"expert_dtype": "fp8"', "expert_dtype"),
        ('"quant_method": "fp8"', '"quant_method": "mxfp4"', "mxfp4"),
    ):
        (tmp_path / "config.json").write_text(config.replace(old, new))
        report = model_weights(
            tmp_path, compute_capability=(8, 0), sm_count=108, vllm_version="0.33.0", max_num_batched_tokens=2048
        )
        assert report.refused is not None and named in report.refused, report.refused


@pytest.mark.skipif(not os.environ.get("DRYBOOT_VLLM_PYTHON"), reason="needs vLLM (DRYBOOT_VLLM_PYTHON)")
def test_live_oracle(tmp_path: Path) -> None:
    """Re-record the tiny config with the boot environment's vLLM (any of 0.27.1-0.33.0) on RTX 3090 and
    A100 at TP 1, 2, 4, 8 and check dryboot (plus the broadcast mixer where the build lacks it)."""
    doc = record_live(tmp_path, ["tiny-DeepseekV4"], RECORD_SET="dsv4", RECORD_GPUS="RTX 3090,A100-80GB")
    assert len(doc["cases"]) == 8
    for row in doc["cases"].values():
        assert row["ok"], row.get("error")
        extra = _broadcast_bytes(row) if doc["vllm"] in BROADCAST_NOT_BUILT else 0
        report = _dryboot(row, doc["vllm"])
        assert report.refused is None, report.refused
        assert report.stages[0].allocated_bytes == row["allocated_bytes"] + extra, row


def test_plan_prints_the_weights_on_an_a100() -> None:
    """``plan`` (vLLM 0.28.0, dryboot's default release, whose DeepSeek-V4 KV cache is modelled)
    on DeepSeek-V4-Flash at TP 8 on A100s: the weights line is vLLM's recorded figure, plus the
    broadcast mixer the meta-device build does not make, and the plan ends in a verdict."""
    row = RECORDED["0.28.0"]["deepseek-ai--DeepSeek-V4-Flash A100-80GB --tensor-parallel-size 8"]
    want = row["allocated_bytes"] + _broadcast_bytes(row)
    code, out = plan_output(
        dsv4.CONFIGS / row["config"],
        "A100-80GB",
        "--tensor-parallel-size",
        "8",
        "--kv-cache-dtype",
        "fp8",
        max_model_len="65536",
    )
    assert f"TP 8: {want:,} bytes" in " ".join(out.split()), out[-2000:]
    assert code == 0 and "verdict: fits (exit 0)" in out, out[-800:]

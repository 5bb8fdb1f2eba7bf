"""dryboot's FlashInfer TRT-LLM NVFP4 MoE experts (SM 10.x) against what vLLM holds after loading.

The TRT-LLM cases (``quant_cases_trtllm.py``): ``data/weights/quant-recorded-trtllm-<version>.json`` holds
vLLM's own figures (``RECORD_SET=trtllm RECORD_MXFP4_NATIVE=1 record_quant_weights.py``, FlashInfer's
``block_scale_interleave`` by shape; ``RECORD_ARGV='["--enable-expert-parallel"]'`` for the expert-parallel
rows) for tiny ModelOpt NVFP4 Qwen3-MoE configs on B200 (SM 10.0) under TP 1 / 2 / 4, with and without
expert parallelism, hidden 1024 and 1152 (padded to 1280), on every release that has the backend.
Every case is checked in the default run (no vLLM needed); with ``DRYBOOT_VLLM_PYTHON`` set, one case is
re-recorded live and checked.
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

import pytest
import quant_cases_trtllm as trt
from quant_harness import case_ids, dryboot_weights, load_recorded, record_live

from dryboot.vllm.model_executor.layers.quantization.modelopt import (
    TRTLLM_NVFP4_MOE_RELEASES,
    trtllm_nvfp4_experts_bytes,
)

RECORDED = load_recorded("quant-recorded-trtllm-")
CASES = case_ids(RECORDED)
#: the MoE layers of every config (num_hidden_layers 2, every layer sparse)
MOE_LAYERS = 2


def _ep(row: dict[str, Any]) -> bool:
    return "--enable-expert-parallel" in row["argv"]


def _want(row: dict[str, Any], version: str) -> int:
    """vLLM's figure on a GPU: the row's, plus, under expert parallelism on 0.33.0, each MoE layer's
    int32 expert map ``[E]`` that vLLM builds on the host when the default device is the meta device
    (``expert_map_manager._calculate_expert_maps``; on the GPU otherwise, and on the meta device in
    earlier releases), one 512-byte block per layer here (8 experts)."""
    want: int = row["allocated_bytes"]
    if _ep(row) and version == "0.33.0":
        want += MOE_LAYERS * 512
    return want


@pytest.mark.parametrize(("version", "cid"), CASES)
def test_matches_vllm_after_loading(version: str, cid: str) -> None:
    """Byte-exact on every recorded case: vLLM's experts are FlashInfer TRT-LLM's on every release."""
    row = RECORDED[version][cid]
    assert row["ok"], row.get("error")
    assert row["linear_kernels"] == {"ABCMeta": 2, "FusedMoEKernel/TrtLlmNvFp4ExpertsMonolithic": 2}, row
    report = dryboot_weights(trt.CONFIGS, row, version, expert_parallel=_ep(row))
    assert not report.refused, report.refused
    assert report.stages[0].allocated_bytes == _want(row, version), (cid, report.stages[0].allocated_bytes)


def test_corpus_size() -> None:
    """Every release of :data:`TRTLLM_NVFP4_MOE_RELEASES` recorded: both hidden sizes, TP 1 / 2 / 4, and
    expert parallelism at TP 2 / 4."""
    assert set(RECORDED) == set(TRTLLM_NVFP4_MOE_RELEASES)
    for version, cases in RECORDED.items():
        assert len(cases) == 10, version
        assert sum(_ep(r) for r in cases.values()) == 4, version


def test_hidden_padding_and_expert_parallelism() -> None:
    """The hidden size 1152 padded to 1280 (``align_fp4_moe_hidden_dim_for_fi``), and under expert
    parallelism the local experts whole (intermediate 384 unpadded at TP 4, 96 -> 128 without EP)."""
    rows = RECORDED["0.33.0"]
    base, wide = "tiny-qwen3moe+ModelOpt-NVFP4", "tiny-qwen3moe-h1152+ModelOpt-NVFP4"
    assert trtllm_nvfp4_experts_bytes(8, 1152, 384) == trtllm_nvfp4_experts_bytes(8, 1280, 384)
    assert trtllm_nvfp4_experts_bytes(8, 1024, 96) == trtllm_nvfp4_experts_bytes(8, 1024, 128)
    # TP 2 with and without EP hold the same bytes of weights (4 experts x 384 = 8 x 192): only the
    # expert map differs, which the 0.33.0 oracle keeps on the host
    for name in (base, wide):
        assert (
            rows[f"{name} B200 --tensor-parallel-size 2"]["allocated_bytes"]
            == rows[f"{name} B200 --tensor-parallel-size 2 --enable-expert-parallel"]["allocated_bytes"]
        )
    # 0.32.0 holds the expert map on the meta device: 512 bytes per MoE layer more under EP
    old = RECORDED["0.32.0"]
    assert (
        old[f"{base} B200 --tensor-parallel-size 2 --enable-expert-parallel"]["allocated_bytes"]
        - old[f"{base} B200 --tensor-parallel-size 2"]["allocated_bytes"]
        == MOE_LAYERS * 512
    )


@pytest.mark.skipif(not os.environ.get("DRYBOOT_VLLM_PYTHON"), reason="needs vLLM (DRYBOOT_VLLM_PYTHON)")
def test_live_oracle(tmp_path: Path) -> None:
    """Re-record the padded config at TP 2 with the boot environment's vLLM; dryboot agrees."""
    doc = record_live(
        tmp_path,
        ["tiny-qwen3moe-h1152+ModelOpt-NVFP4"],
        RECORD_SET="trtllm",
        RECORD_MXFP4_NATIVE="1",
        RECORD_TPS="2",
    )
    for row in doc["cases"].values():
        assert row["ok"], row.get("error")
        report = dryboot_weights(trt.CONFIGS, row, doc["vllm"])
        assert report.stages[0].allocated_bytes == _want(row, doc["vllm"]), row["config"]

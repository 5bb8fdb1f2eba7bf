"""Attention sinks outside gpt-oss and FlashInfer's KV counter (issue 33).

vLLM's figures: ``data/weights/quant-recorded-sinksfam-<version>.json`` (``RECORD_SET=sinksfam
record_quant_weights.py``, ``quant_cases_sinksfam.py``; ``VLLM_HAS_FLASHINFER_CUBIN=1``, 8,192
batched tokens): Granite-SWA, Granite-MoE-SWA (sinks on) and Laguna (sinks on its sliding layers),
unquantized, and Granite-MoE-SWA's tiny config as published (no sinks: FlashInfer on B200 only), on
RTX 5090 and B200, vLLM 0.33.0 and 0.32.0. With ``flashinfer-cubin`` FlashInfer
serves layers with sinks on SM 12.x (FlashAttention 2, SM 12.x's default, takes none), so vLLM
0.33.0 builds ``FlashInferImpl`` and its shared multi-CTA KV counter for them while the model is
built. Before, these walks did not ask about the counter and the safety net
(``weights.unmodelled_flashinfer_counter``) took SM 12.x's default backend: on RTX 5090 the figures
were answered a counter short (Granite-SWA's tiny config 19,946,496 B for vLLM's 20,208,640;
Laguna's 39,153,664 B for 39,415,808) and on B200 refused by name. dryboot's unquantized figure
is the one as built (``built_allocated_bytes``), as for every unquantized family. 0.32.0 builds no
counter (the same figures on both GPUs). Needs no vLLM.
"""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).resolve().parent))

import quant_cases_sinksfam as sf
from quant_harness import case_ids, dryboot_weights, load_recorded

RECORDED = load_recorded("quant-recorded-sinksfam-")
CASES = case_ids(RECORDED)
#: vLLM 0.33.0's counter per config and GPU (8,192 tokens x query heads x int32): Granite's 8 heads;
#: Laguna's sink (sliding) layers on RTX 5090, every layer on B200 (the buffer grows to 16 heads)
COUNTERS = {
    ("GraniteSWAForCausalLM", "RTX 5090"): 262_144,
    ("GraniteSWAForCausalLM", "B200"): 262_144,
    ("GraniteMoeSWAForCausalLM-sinks", "RTX 5090"): 262_144,
    ("GraniteMoeSWAForCausalLM-sinks", "B200"): 262_144,
    ("LagunaForCausalLM", "RTX 5090"): 262_144,
    ("LagunaForCausalLM", "B200"): 262_144 + 524_288,
    # Granite-MoE-SWA's tiny config as published (attention_sinks false): FlashInfer on B200 only
    ("GraniteMoeSWAForCausalLM", "RTX 5090"): 0,
    ("GraniteMoeSWAForCausalLM", "B200"): 262_144,
}


@pytest.mark.parametrize(("version", "cid"), CASES)
def test_matches_vllm_as_built(version: str, cid: str) -> None:
    """Byte-exact with vLLM's figure as built (the counter in it on 0.33.0)."""
    row = RECORDED[version][cid]
    assert row["ok"], row.get("error")
    report = dryboot_weights(sf.CONFIGS, row, version)
    assert not report.refused, report.refused
    assert report.stages[0].allocated_bytes == row["built_allocated_bytes"]


@pytest.mark.parametrize(("config", "gpu"), sorted(COUNTERS))
def test_counter_is_the_release_difference(config: str, gpu: str) -> None:
    """vLLM 0.33.0 holds the counter above 0.32.0's figure; dryboot names it (``attention counter``)."""
    cid = f"{config} {gpu} --tensor-parallel-size 1"
    new, old = RECORDED["0.33.0"][cid], RECORDED["0.32.0"][cid]
    assert new["built_allocated_bytes"] - old["built_allocated_bytes"] == COUNTERS[config, gpu]
    assert (
        dryboot_weights(sf.CONFIGS, new, "0.33.0").stages[0].by_kind.get("attention counter", 0)
        == COUNTERS[config, gpu]
    )


def test_without_cubin_no_counter_on_rtx5090() -> None:
    """Without ``flashinfer-cubin`` FlashInfer takes no sinks: on RTX 5090 (FlashAttention 2 for the
    other layers) no layer builds it, so dryboot holds no counter there (Granite-SWA: every layer
    has sinks)."""
    row = {**RECORDED["0.33.0"]["GraniteSWAForCausalLM RTX 5090 --tensor-parallel-size 1"], "flashinfer_cubin": False}
    stage = dryboot_weights(sf.CONFIGS, row, "0.33.0").stages[0]
    assert "attention counter" not in stage.by_kind
    assert (
        stage.allocated_bytes
        == RECORDED["0.32.0"]["GraniteSWAForCausalLM RTX 5090 --tensor-parallel-size 1"]["built_allocated_bytes"]
    )


def test_corpus_size() -> None:
    """Four configs on two GPUs on each release."""
    for version in ("0.32.0", "0.33.0"):
        assert len(RECORDED[version]) == 8

"""Unquantized gpt-oss (the bf16 layout of gpt-oss-20b / gpt-oss-120b) on Blackwell with vLLM 0.33.0.

vLLM's figures: ``data/weights/quant-recorded-ossbf16-0.33.0.json`` (``RECORD_SET=ossbf16
record_quant_weights.py``, ``quant_cases_ossbf16.py``; each case in a fresh process's state, with
``VLLM_HAS_FLASHINFER_CUBIN=1`` and, at TP 1, ``0``). With ``flashinfer-cubin`` FlashInfer serves
the attention sinks on SM 10.0, so ``FlashInferImpl.__init__`` allocates the shared multi-CTA KV
counter while the model is built: dryboot's unquantized figure (as built, as for every unquantized
family, ``built_allocated_bytes``) is vLLM's with the counter; without the package vLLM takes
another backend and holds none. Before, dryboot refused these by name (its walk did not ask about
the counter: "4,096 B above" vLLM's figure after the post-load step on a tiny config, which is
this set's per-layer difference between the two figures, not a missing term). RTX 5090 (SM 12.0)
at TP 1 with the package too: FlashAttention 2 takes no sinks there, FlashInfer does, so the counter
is in vLLM's figure; dryboot answered 2 MiB short there before (41,863,190,528 B for 20b, no
counter: its safety net takes SM 12.x's default for FlashAttention). Needs no vLLM.
"""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Any

import pytest

sys.path.insert(0, str(Path(__file__).resolve().parent))

import quant_cases_ossbf16 as oss
from quant_harness import case_ids, dryboot_weights, load_recorded, tp_of

from dryboot.vllm.backends import flashinfer_kv_counter_bytes
from dryboot.vllm.model_executor.model_loader.weights import ALLOC_ROUND

RECORDED = load_recorded("quant-recorded-ossbf16-")
CASES = case_ids(RECORDED)
#: decoder layers and query heads of the two configs
LAYERS = {"openai--gpt-oss-20b-unquantized": 24, "openai--gpt-oss-120b-unquantized": 36}
HEADS = 64


def _row(config: str, tp: int, cubin: bool = True) -> dict[str, Any]:
    suffix = "" if cubin else " (no flashinfer-cubin)"
    return RECORDED["0.33.0"][f"{config} B200 --tensor-parallel-size {tp}{suffix}"]


@pytest.mark.parametrize(("version", "cid"), CASES)
def test_matches_vllm_as_built(version: str, cid: str) -> None:
    """Byte-exact with vLLM's figure as built (the counter in it where FlashInfer serves the sinks)."""
    row = RECORDED[version][cid]
    assert row["ok"], row.get("error")
    report = dryboot_weights(oss.CONFIGS, row, version)
    assert not report.refused, report.refused
    assert report.stages[0].allocated_bytes == row["built_allocated_bytes"]


def test_corpus_size() -> None:
    """Both configs at TP 1, 2 and 4 with ``flashinfer-cubin``, and at TP 1 without it."""
    rows = RECORDED["0.33.0"].values()
    got = {(r["config"], tp_of(r), r.get("flashinfer_cubin")) for r in rows if r["gpu"] == "B200"}
    want = {(c, tp, True) for c in LAYERS for tp in (1, 2, 4)} | {(c, 1, False) for c in LAYERS}
    assert want <= got


@pytest.mark.parametrize("config", sorted(LAYERS))
def test_the_counter_is_the_cubin_difference(config: str) -> None:
    """With the package vLLM holds the counter (8,192 tokens x 64 heads per rank, int32) beside the
    same weights; dryboot names it (``attention counter``) only then."""
    cubin, without = _row(config, 1), _row(config, 1, cubin=False)
    counter = flashinfer_kv_counter_bytes(8192, HEADS, 148)
    assert cubin["built_allocated_bytes"] - without["built_allocated_bytes"] == counter == 2 * 1024 * 1024
    assert dryboot_weights(oss.CONFIGS, cubin, "0.33.0").stages[0].by_kind["attention counter"] == counter
    assert "attention counter" not in dryboot_weights(oss.CONFIGS, without, "0.33.0").stages[0].by_kind


@pytest.mark.parametrize("config", sorted(LAYERS))
@pytest.mark.parametrize("tp", [1, 2, 4])
def test_post_load_step_frees_a_block_a_layer(config: str, tp: int) -> None:
    """vLLM's figure after ``process_weights_after_loading`` is 512 B a layer below the one as
    built: each attention layer's two CPU scale scalars leave for the host (two blocks) and
    FlashInfer's float32 sinks copy (``[64 / TP]``, one block) joins: the gap a comparison of the
    figure as built with the one after the step shows (on B200, 12 KiB for 20b, 18 KiB for 120b)."""
    row = _row(config, tp)
    assert row["built_allocated_bytes"] - row["allocated_bytes"] == LAYERS[config] * ALLOC_ROUND


def test_rtx5090_holds_the_counter_too() -> None:
    """SM 12.0 with ``flashinfer-cubin``: the same figures as B200 at TP 1 (the counter sized by
    8,192 tokens x 64 heads exceeds either SM count), dryboot's with its ``attention counter``."""
    for config in LAYERS:
        rtx = RECORDED["0.33.0"][f"{config} RTX 5090 --tensor-parallel-size 1"]
        assert rtx["built_allocated_bytes"] == _row(config, 1)["built_allocated_bytes"]
        assert "attention counter" in dryboot_weights(oss.CONFIGS, rtx, "0.33.0").stages[0].by_kind

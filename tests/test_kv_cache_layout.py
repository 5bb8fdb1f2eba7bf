"""The KV cache layouts a worker's backends declare and the engine core's check that every pipeline
stage reports the same (:mod:`dryboot.vllm.kv_cache_layout`), DeepSeek-V4's packed stages included."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from dryboot.errors import InputError
from dryboot.vllm.kv_cache_layout import DEFAULT_PREFERENCE, check_stage_layouts, declared_layouts
from dryboot.vllm.kv_cache_utils import packed
from dryboot.vllm.versions import rules_for

RECORD = Path(__file__).resolve().parent / "fidelity" / "data" / "release-architectures" / "vllm-0.30.0.json"


def test_deepseek_v4_indexer_asks_for_the_block_outermost_layouts() -> None:
    assert declared_layouts(packed.INDEXER_BACKEND, (9, 0)) == ("BLHNC", "BLNHC")
    for name in (packed.BACKEND, packed.COMPRESSOR_BACKEND, packed.attention_name((9, 0))):
        assert declared_layouts(name, (10, 0)) is None


def test_deepseek_v4_stages_report_what_vllm_asserted() -> None:
    """DeepseekV4ForCausalLM#2 on 0.30.0 (``-pp 3``): stage 0 holds no ratio-4 layer; the stages'
    reports are vLLM's recorded ones, word for word."""
    row = json.loads(RECORD.read_text())["architectures"]["DeepseekV4ForCausalLM"][2]
    assert "-pp" in row["argv"] and row["vllm"]["ok"] is False
    names = [
        packed.layer_backend(n, (9, 0), packed.DS_MLA) for n in ("model.layers.0.attn", "model.layers.0.attn.swa_cache")
    ]
    indexed = [*names, packed.layer_backend("model.layers.2.attn.indexer.k_cache", (9, 0), packed.DS_MLA)]
    with pytest.raises(InputError) as e:
        check_stage_layouts([names, indexed, indexed], (9, 0), rules_for("0.30.0"))
    reports = [list(DEFAULT_PREFERENCE), ["BLHNC", "BLNHC"], ["BLHNC", "BLNHC"]]
    assert f"Workers disagree on supported KV cache layouts: {reports}" in row["vllm"]["error"]
    assert f"Workers disagree on supported KV cache layouts: {reports}" in e.value.line()


def test_a_family_words_its_own_refusal() -> None:
    with pytest.raises(InputError) as e:
        check_stage_layouts([["DEEPSEEK_V4_INDEXER"], []], (9, 0), rules_for("0.29.0"), refusal="stage 1 differs")
    assert e.value.line().endswith("stage 1 differs")


def test_no_layout_is_resolved_before_029() -> None:
    check_stage_layouts([["DEEPSEEK_V4_INDEXER"], []], (9, 0), rules_for("0.28.0"))

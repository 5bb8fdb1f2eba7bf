"""dryboot against vLLM's recorded engine start for Gemma-4 with an fp8 KV cache on SM 9.0
(``gemma4_fp8_mm_prefix_cases``): every record agrees, and the 0.31+ switch
``fa_quantized_mm_prefix_sm90`` is needed (off, 0.31.0's ``--block-size 16`` case is wrong: FlashAttention
4 at 64-token pages where vLLM's Triton keeps 16)."""

from __future__ import annotations

import dataclasses

import gemma4_fp8_mm_prefix_cases as C
import pytest
import release_records

from dryboot.vllm import versions

RECORDED = release_records.Recorded(C)
_problems = RECORDED.problems


def test_every_case_is_recorded_on_every_release() -> None:
    assert RECORDED.complete()


@pytest.mark.parametrize("key", RECORDED.keys())
def test_dryboot_matches_recorded_oracle(key: str) -> None:
    assert not _problems(key)


def test_switch_is_needed(monkeypatch: pytest.MonkeyPatch) -> None:
    rules = versions.rules_for("0.31.0")
    assert rules.fa_quantized_mm_prefix_sm90
    monkeypatch.setitem(versions.VERSIONS, "0.31.0", dataclasses.replace(rules, fa_quantized_mm_prefix_sm90=False))
    versions.rules_for.cache_clear()
    try:
        assert _problems("0.31.0/gemma4-mm-block16")
    finally:
        versions.rules_for.cache_clear()

"""dryboot against vLLM's recorded engine start for Gemma-4 with an fp8 KV cache on SM 9.0
(``gemma4_fp8_mm_prefix_cases``): every record agrees. The 0.31+ switch ``fa_quantized_mm_prefix_sm90``
no longer moves a figure here: with the Triton/FlashAttention composite modelled, 0.31.0's ``--block-size
16`` case is the composite precluded by its 64-token pages (Triton keeps 16) whatever FlashAttention says;
``test_sm90_composite.py`` pins the switch by FlashAttention's recorded reason."""

from __future__ import annotations

import gemma4_fp8_mm_prefix_cases as C
import pytest
import release_records

RECORDED = release_records.Recorded(C)
_problems = RECORDED.problems


def test_every_case_is_recorded_on_every_release() -> None:
    assert RECORDED.complete()


@pytest.mark.parametrize("key", RECORDED.keys())
def test_dryboot_matches_recorded_oracle(key: str) -> None:
    assert not _problems(key)

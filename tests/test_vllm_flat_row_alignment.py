"""vLLM 0.31.0's flat-row ``block_stride_alignment`` of a sparse MLA layer
(``MLAAttention.get_kv_cache_spec``, ``_uses_flat_kv_cache``), read from its source: which
backends set it, and to how many bytes."""

from __future__ import annotations

from dataclasses import replace

import pytest

from dryboot.vllm.dtypes import KVQuantMode
from dryboot.vllm.kv_cache_interface import AttentionSpec, LayerKind
from dryboot.vllm.kv_cache_spec import flat_row_alignment, indexer_spec

#: DeepSeek-V3.2's latent row in a 16-bit cache (576 values, 2 bytes each)
MLA = AttentionSpec(
    layer_kind=LayerKind.MLA,
    block_size=64,
    num_kv_heads=1,
    head_size=576,
    head_size_v=0,
    torch_dtype="bfloat16",
    kv_cache_dtype="auto",
    quant_mode=KVQuantMode.NONE,
    content_bytes=1152,
    backend="FLASHINFER_MLA_SPARSE",
    indexes_kv_by_block_stride=False,
)
DS_MLA = replace(MLA, backend="FLASHMLA_SPARSE", kv_cache_dtype="fp8_ds_mla", torch_dtype="uint8", content_bytes=656)


@pytest.mark.parametrize(
    ("spec", "major", "expected"),
    [
        (MLA, 10, 1152),  # FlashInfer's sparse kernels read flat rows
        (replace(MLA, backend="FLASHMLA_SPARSE"), 10, 1152),  # no ds_mla layout: flat rows
        (replace(MLA, backend="FLASHMLA_SPARSE"), 9, 1152),
        (DS_MLA, 10, 656),  # SM100's TMA addresses ds_mla rows
        (DS_MLA, 9, 1),  # off SM 10.x a ds_mla cache is paged
        (replace(MLA, backend="FLASH_ATTN_MLA_SPARSE"), 9, 1),
        (replace(MLA, backend="FLASHINFER_MLA_SPARSE_SM120"), 12, 1),
        (replace(MLA, backend="FLASHINFER_MLA"), 10, 1),  # dense MLA
        (indexer_spec(132, 64), 10, 1),  # the indexer's key cache sets none
    ],
)
def test_flat_row_alignment(spec: AttentionSpec, major: int, expected: int) -> None:
    assert flat_row_alignment(spec, major) == expected

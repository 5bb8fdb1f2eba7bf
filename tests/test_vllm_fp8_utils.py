"""``dryboot.vllm.fp8_utils``: fp8 block-quantized shards under TP, refused with vLLM's message."""

from __future__ import annotations

import contextlib

import pytest
from hypothesis import given
from hypothesis import strategies as st

from dryboot.errors import InputError
from dryboot.vllm.fp8_utils import block_shards, check_block_shards

_FP8 = {"quant_method": "fp8", "weight_block_size": [128, 128]}
# Qwen3-30B-A3B-FP8's widths
_QWEN3_MOE = {"intermediate_size": 6144, "moe_intermediate_size": 768}


def test_shards_read_from_fp8_and_compressed_tensors_blocks() -> None:
    assert block_shards(_FP8, _QWEN3_MOE) == (("linear", 6144, 128, 128), ("moe", 768, 128, 128))
    ct = {
        "quant_method": "compressed-tensors",
        "config_groups": {"g": {"weights": {"strategy": "block", "block_structure": [128, 128]}}},
    }
    laguna = {"intermediate_size": 8192, "moe_intermediate_size": 512, "shared_expert_intermediate_size": 512}
    assert block_shards(ct, laguna) == (
        ("linear", 8192, 128, 128),
        ("linear", 512, 128, 128),
        ("moe", 512, 128, 128),
    )
    # a shared expert left unquantized is not checked; no blocks, no shards
    assert block_shards(
        {**_FP8, "ignore": ["*.shared_experts.*"]}, {"moe_intermediate_size": 512, "n_shared_experts": 1}
    ) == (("moe", 512, 128, 128),)
    assert block_shards({"quant_method": "fp8"}, _QWEN3_MOE) == ()
    assert block_shards({"quant_method": "awq", "weight_block_size": [128, 128]}, _QWEN3_MOE) == ()


def test_moe_shard_refused_on_028_refined_later() -> None:
    shards = block_shards(_FP8, _QWEN3_MOE)
    check_block_shards(shards, 2, "c.json", moe_refine=False)  # 384: whole blocks
    with pytest.raises(
        InputError, match="gate's and up's weight = 192 is not divisible by weight quantization block_n = 128"
    ):
        check_block_shards(shards, 4, "c.json", moe_refine=False)
    # 0.29+: scales refined to 32-wide blocks (192 and 96 hold whole ones)
    check_block_shards(shards, 4, "c.json", moe_refine=True)
    check_block_shards(shards, 8, "c.json", moe_refine=True)
    with pytest.raises(InputError, match="gate's and up's weight = 48"):
        check_block_shards(shards, 16, "c.json", moe_refine=True)


def test_linear_shard_refused_on_every_release() -> None:
    shards = (("linear", 512, 128, 128),)
    for refine in (False, True):
        with pytest.raises(
            InputError, match="output_partition_size = 64 is not divisible by weight quantization block_n = 128"
        ):
            check_block_shards(shards, 8, "c.json", moe_refine=refine)


@given(
    st.dictionaries(st.text(max_size=8), st.one_of(st.integers(), st.text(max_size=4), st.none())), st.integers(1, 64)
)
def test_hostile_config_never_crashes(text: dict[str, object], tp: int) -> None:
    shards = block_shards({**_FP8, "weight_block_size": [64, 128]}, text)
    with contextlib.suppress(InputError):
        check_block_shards(shards, tp, "c.json", moe_refine=False)


def test_mixtral_style_experts_take_intermediate_size() -> None:
    """MiniMax-M2.5 (``num_local_experts`` 256, ``intermediate_size`` 1536, no
    ``moe_intermediate_size``): its experts are the fused MoE; at TP 8 the 192-wide shard is refused
    by vLLM 0.28.0 (recorded: ``data/corpus/vllm-0.28.0.json``) and served from 0.29 (refined to 64)."""
    minimax = {"intermediate_size": 1536, "num_local_experts": 256}
    shards = block_shards(_FP8, minimax)
    assert shards == (("moe", 1536, 128, 128),)
    with pytest.raises(InputError, match="gate's and up's weight = 192 is not divisible by weight quantization"):
        check_block_shards(shards, 8, "m", moe_refine=False)
    check_block_shards(shards, 8, "m", moe_refine=True)
    check_block_shards(shards, 4, "m", moe_refine=False)

"""Each quantization method's ignore-list matching (``quant_utils``), against vLLM's rules as its
source states them (``is_layer_skipped``, compressed-tensors' ``should_ignore_layer``, ModelOpt's
``is_layer_excluded``); the figures they change are recorded in
``tests/fidelity/test_weights_fp8ignore.py``."""

from __future__ import annotations

import pytest

from dryboot.errors import InputError
from dryboot.vllm.model_executor.layers.quantization.utils.quant_utils import (
    ShardsDiffer,
    fused_shards,
    is_layer_excluded,
    is_layer_skipped,
    should_ignore_layer,
)

QKV = "model.layers.0.self_attn.qkv_proj"
GATE_UP = "model.layers.0.mlp.gate_up_proj"
DOWN = "model.layers.0.mlp.down_proj"


def test_fused_shards() -> None:
    assert fused_shards(QKV) == tuple(f"model.layers.0.self_attn.{p}_proj" for p in "qkv")
    assert fused_shards(DOWN) is None


def test_fp8_exact() -> None:
    """Plain fp8: a prefix names no layer; a fused layer by its own name or all its shards."""
    assert not is_layer_skipped(DOWN, ["model.layers.0.mlp", "model.layers.0"])
    assert is_layer_skipped(DOWN, [DOWN])
    assert is_layer_skipped(QKV, [QKV])
    assert is_layer_skipped(GATE_UP, ["model.layers.0.mlp.gate_proj", "model.layers.0.mlp.up_proj"])
    assert not is_layer_skipped(GATE_UP, ["model.layers.1.mlp.gate_proj"])
    with pytest.raises(ShardsDiffer, match="some but not all shards"):
        is_layer_skipped(QKV, ["model.layers.0.self_attn.q_proj"])


def test_fp8_experts() -> None:
    """An MoE layer is skipped when its name is inside an entry naming experts."""
    ex = "model.layers.1.mlp.experts"
    assert is_layer_skipped(ex, ["model.layers.1.mlp.experts.5.down_proj"])
    assert is_layer_skipped(ex, [ex])
    assert not is_layer_skipped(ex, ["model.layers.1.mlp"])
    assert not is_layer_skipped(ex, ["model.layers.11.mlp.experts.0.w1"])


def test_substring_and_suffix() -> None:
    """AWQ's substrings (the fused name first: ``v_proj`` is inside ``qkv_proj``); the suffix mode."""
    assert is_layer_skipped(QKV, ["v_proj"], match_mode="substring")
    assert is_layer_skipped("model.layers.10.mlp.down_proj", ["model.layers.1"], match_mode="substring")
    with pytest.raises(InputError):
        is_layer_skipped(QKV, ["q_proj"], match_mode="substring")
    assert is_layer_skipped("model.layers.0.self_attn.b_proj", ["b_proj"], match_mode="suffix")
    assert not is_layer_skipped("model.layers.0.self_attn.q_b_proj", ["b_proj"], match_mode="suffix")


def test_compressed_tensors_per_release() -> None:
    """A pattern matching the fused name alone ignores it from 0.30.0, not before; a prefix given
    as a name ignores nothing; a ``re:`` prefix matches from the start."""
    pattern = [r"re:.*layers\.0\.self_attn\.qkv_proj$"]
    assert should_ignore_layer(QKV, pattern, "0.30.0")
    assert should_ignore_layer(QKV, pattern, "0.33.0")
    assert not should_ignore_layer(QKV, pattern, "0.27.1")
    assert not should_ignore_layer(QKV, pattern, "0.29.0")
    assert should_ignore_layer(QKV, [QKV], "0.27.1")
    assert not should_ignore_layer(DOWN, ["model.layers.0.mlp"], "0.33.0")
    assert should_ignore_layer(DOWN, [r"re:model\.layers\.0\.mlp"], "0.33.0")
    for v in ("0.27.1", "0.33.0"):
        with pytest.raises(ShardsDiffer):
            should_ignore_layer(QKV, ["model.layers.0.self_attn.q_proj"], v)


def test_modelopt() -> None:
    """ModelOpt: exact (with shards), then substrings (a ``language_model.`` prefix dropped), then
    shell wildcards."""
    assert is_layer_excluded("model.layers.12.mlp.down_proj", ["model.layers.1"])
    assert not is_layer_excluded("model.layers.2.mlp.down_proj", ["model.layers.1"])
    assert is_layer_excluded("model.layers.0.mlp.gate_up_proj", ["mlp.gate"])
    assert is_layer_excluded("model.layers.61.mlp.experts", ["model.layers.61*"])
    assert is_layer_excluded("language_model.model.layers.0.mlp.down_proj", ["model.layers.0.mlp"])
    assert not is_layer_excluded(DOWN, [])
    with pytest.raises(ShardsDiffer):
        is_layer_excluded(QKV, ["model.layers.0.self_attn.q_proj"])

"""Step5's config reading (``dryboot.vllm.models.step5``): what vLLM 0.33.0 refuses of a Step5
config, in its words, and what dryboot does not plan, named (read in ``vllm/models/step5/nvidia``;
the geometry is checked against the recorded engine starts in ``tests/fidelity/``)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from config_changes import changed
from dryboot.errors import InputError
from dryboot.vllm.config.hf import LayerKind, extra_of
from dryboot.vllm.kv_cache_utils.repeat_packed import Step5Caches
from dryboot.vllm.models import step5
from dryboot.vllm.transformers_utils.config import geometry_from_config

TINY = Path(__file__).resolve().parent / "fidelity" / "data" / "architectures" / "Step5ForCausalLM.json"


def _config(**changes: Any) -> dict[str, Any]:
    return changed(json.loads(TINY.read_text()), changes)


def test_dsa_layers_are_the_full_attention_ones() -> None:
    model = geometry_from_config(_config())
    caches = extra_of(model, Step5Caches)
    assert caches is not None and caches.dsa_layers == (False, True, False, True)
    assert model.layer_kinds == (LayerKind.SLIDING, LayerKind.FULL, LayerKind.SLIDING, LayerKind.FULL)
    assert step5.kv_cache_layout(model) == "repeat-packed"


def test_disabled_sparse_config_is_the_plain_layout() -> None:
    model = geometry_from_config(_config(sparse_config={"enabled": False}))
    assert extra_of(model, Step5Caches) is None and step5.kv_cache_layout(model) == "grouped"


@pytest.mark.parametrize(
    ("changes", "words"),
    [
        ({"sparse_config": None}, "requires a checkpoint with a sparse_config section"),
        ({"sparse_config": {"enabled": "yes"}}, "sparse_config.enabled must be a bool"),
        ({"sparse_config": {"topk": 2048}}, "topk in [1, 1024]"),
        ({"sparse_config": {"index_tp_size": 2, "sparse_indexer_num_heads": 16}}, "in (2, 4), got 8"),
        ({"sparse_config": {"proxy_dim": 256}}, "planned with"),
        ({"use_head_wise_attn_gate": False}, "require use_head_wise_attn_gate=true"),
        ({"head_dim": 128}, "require head_size 192, got 128"),
        ({"head_dim": 64}, "head dimensions 128 or 192, got 64"),
        ({"use_moe_router_bias": None}, "requires use_moe_router_bias=true"),
        ({"need_fp32_gate": False}, "need_fp32_gate=true for stable router logits"),
        ({"moe_layers_enum": "1,1"}, "duplicate layer indices"),
        ({"layer_types": ["sliding_attention"] * 4}, "without a full_attention (DSA) layer"),
        ({"layer_types": ["full_attention"] * 3}, "must include the dense stack and every MTP layer"),
        ({"attention_other_setting": {"attention_type": "full_attention"}}, "not verified"),
    ],
)
def test_refusals_name_the_field_and_reason(changes: dict[str, Any], words: str) -> None:
    with pytest.raises(InputError, match=None) as err:
        geometry_from_config(_config(**changes))
    assert words in str(err.value), str(err.value)


@pytest.mark.parametrize(
    ("tp", "words"),
    [(4, "got 2"), (8, "got 1"), (3, "can neither be split across nor replicated")],
)
def test_tensor_parallel_geometry(tp: int, words: str) -> None:
    model = geometry_from_config(_config())
    with pytest.raises(InputError) as err:
        step5.verify(model, tp)
    assert words in str(err.value)

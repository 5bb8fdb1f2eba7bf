"""EXAONE MoE (``exaone_moe.py``, ``ExaoneMoeForCausalLM``): Qwen3's attention (per-head q/k
norms), dense gated MLPs below ``first_k_dense_replace``, then MoE blocks: the router ``[E, H]``,
the float32 ``e_score_correction_bias`` ``[E]``, ``num_shared_experts`` shared experts (one gated
MLP ``moe_intermediate_size x num_shared_experts`` wide) and ``num_experts`` experts; the head
untied. The sliding-window layers change no weight. ``ExaoneMoEForCausalLM`` (0.32.0+'s registry:
the same class under a second name) is the same layout."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from dryboot.vllm.model_executor.model_loader import weights as W
from dryboot.vllm.model_executor.models.compose import Family, Layout, decoder


def _moe_layer(config: Mapping[str, Any], li: int) -> bool:
    return li >= W._int(config, "first_k_dense_replace", 0)


def _shared(config: Mapping[str, Any]) -> int:
    return W._int(config, "moe_intermediate_size") * W._int(config, "num_shared_experts", 0)


_EXAONE_MOE = decoder(Layout(qk_norm="head", moe=_moe_layer, shared=_shared, score_bias=True))

FAMILIES: dict[str, Family] = {
    "ExaoneMoeForCausalLM": _EXAONE_MOE,
    # 0.32.0+'s registry maps this second spelling to the same class (exaone_moe.py)
    "ExaoneMoEForCausalLM": _EXAONE_MOE,
}

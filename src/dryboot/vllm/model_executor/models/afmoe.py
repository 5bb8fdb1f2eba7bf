"""AFMoE (``afmoe.py``, ``AfmoeForCausalLM``): attention with per-head q/k norms and an output
gate ``gate_proj`` ``[heads / TP x head_dim, H]``, four RMSNorms per layer, dense gated MLPs below
``num_dense_layers``, then MoE blocks: the router in float32 with its float32 ``expert_bias``
``[E]``, ``num_shared_experts`` shared experts (one gated MLP ``moe_intermediate_size x
num_shared_experts`` wide) and ``num_experts`` experts; the head untied. A pipeline stage without
MoE layers is refused, as vLLM refuses it."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from dryboot.vllm.model_executor.model_loader import weights as W
from dryboot.vllm.model_executor.models.compose import Family, Layout, decoder


def _moe_layer(config: Mapping[str, Any], li: int) -> bool:
    return li >= W._int(config, "num_dense_layers", 0)


def _shared(config: Mapping[str, Any]) -> int:
    return W._int(config, "moe_intermediate_size") * W._int(config, "num_shared_experts", 0)


FAMILIES: dict[str, Family] = {
    "AfmoeForCausalLM": decoder(
        Layout(
            norms=4,
            qk_norm="head",
            output_gate=True,
            moe=_moe_layer,
            shared=_shared,
            router_fp32=True,
            score_bias=True,
            stage_needs_moe=True,
        ),
    ),
}

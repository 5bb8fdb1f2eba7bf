"""Command-R MoE (``cohere2_moe.py``, ``Cohere2MoeForCausalLM``): Command-R's layer (one LayerNorm,
attention and MLP in parallel, the head tied, every stage holding embedding, norm and head) with,
per layer of ``mlp_layer_types``, a dense gated MLP (``dense``) or a MoE block (``sparse``: router
``[E, H]``, ``num_experts`` experts of ``intermediate_size``, ``num_shared_experts`` shared ones as
one gated MLP). TP above the experts is refused, as vLLM refuses it."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from dryboot.vllm.model_executor.model_loader import weights as W
from dryboot.vllm.model_executor.models.compose import Family, Layout, decoder


def _sparse(config: Mapping[str, Any], li: int) -> bool:
    kinds = config.get("mlp_layer_types") or []
    return li < len(kinds) and kinds[li] == "sparse"


def _shared(config: Mapping[str, Any]) -> int:
    return W._int(config, "intermediate_size") * W._int(config, "num_shared_experts", 0)


FAMILIES: dict[str, Family] = {
    "Cohere2MoeForCausalLM": decoder(
        Layout(
            norms=1,
            tied=True,
            every_stage=True,
            moe=_sparse,
            shared=_shared,
            moe_inter_key="intermediate_size",
            tp_over_experts_refused=True,
        ),
        refused=("use_qk_norm",),
    ),
}

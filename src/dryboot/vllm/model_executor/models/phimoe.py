"""Phi-3.5-MoE (``phimoe.py``, ``PhiMoEForCausalLM``): biased QKV and ``o_proj``, LayerNorms with
biases, the LM head with a bias ``[vocab padded / TP]``, a ``FusedMoE`` block on every layer
(router ``[E, H]``, ``num_local_experts`` experts of ``intermediate_size``)."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from dryboot.vllm.model_executor.models.compose import Family, Layout, decoder


def _every_layer(config: Mapping[str, Any], li: int) -> bool:
    return True


FAMILIES: dict[str, Family] = {
    "PhiMoEForCausalLM": decoder(
        Layout(
            qkv_bias=True,
            o_bias=True,
            norm_bias=True,
            head_bias=True,
            moe=_every_layer,
            every_stage=True,
            experts_key="num_local_experts",
            moe_inter_key="intermediate_size",
        )
    ),
}

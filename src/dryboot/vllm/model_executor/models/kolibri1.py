"""Kolibri-1 (vLLM 0.33.0's registry: ``Kolibri1ForCausalLM`` served by the Transformers modeling
backend, ``TransformersMoEForCausalLM``, on transformers' ``Kolibri1Config``): per layer four
RMSNorms ``[H]`` (input, post-attention, post-self-attention, post-MLP), one ``qkv_proj`` (no
bias), ``o_proj``, per-head q/k norms ``[head_dim]``, vLLM's ``Attention`` with its scale buffers;
on every layer a MoE block: the router ``[E, H]`` in the model dtype, a float32
``e_score_correction_bias`` ``[E]`` buffer, ``num_local_experts`` experts (``FusedMoE``) of
``moe_intermediate_size`` and a gated shared expert of ``shared_expert_intermediate_size``;
transformers' rotary buffers (``inv_freq`` / ``original_inv_freq`` float32 ``[head_dim / 2]``, on
every stage); the head untied by default.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from dryboot.vllm.model_executor.model_loader import weights as W
from dryboot.vllm.model_executor.models.compose import Family, Layout, decoder

#: ``Kolibri1Config``'s defaults of the fields the layout reads (transformers 5.x; its
#: ``attribute_map`` stores ``num_experts`` as ``num_local_experts``)
_DEFAULTS: dict[str, Any] = {
    "vocab_size": 128000,
    "hidden_size": 2560,
    "num_hidden_layers": 50,
    "num_attention_heads": 48,
    "num_key_value_heads": 4,
    "max_position_embeddings": 262144,
    "tie_word_embeddings": False,
    "moe_intermediate_size": 512,
    "num_local_experts": 384,
    "head_dim": 128,
    "shared_expert_intermediate_size": 512,
}


def _prepare(config: Mapping[str, Any]) -> Mapping[str, Any]:
    """``Kolibri1Config``: its defaults, ``num_experts`` read as ``num_local_experts``."""
    out = {**_DEFAULTS, **{k: v for k, v in config.items() if v is not None}}
    if "num_experts" in config and "num_local_experts" not in config:
        out["num_local_experts"] = config["num_experts"]
    return out


def _shared(config: Mapping[str, Any]) -> int:
    return W._int(config, "shared_expert_intermediate_size")


FAMILIES: dict[str, Family] = {
    "Kolibri1ForCausalLM": decoder(
        Layout(
            qk_norm="head",
            norms=4,
            moe=lambda config, li: True,
            experts_key="num_local_experts",
            shared=_shared,
            score_bias=True,
            score_bias_buffer=True,
        ),
        _prepare,
    ),
}

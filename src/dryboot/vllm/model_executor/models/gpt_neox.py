"""GPT-NeoX (``gpt_neox.py``, ``GPTNeoXForCausalLM``): two LayerNorms with biases per layer,
``query_key_value`` and ``dense`` with biases (``attention_bias``, true by default), a plain MLP
``dense_h_to_4h`` / ``dense_4h_to_h`` with biases, ``final_layer_norm``, the untied ``embed_out``;
the rotary table over ``rotary_pct`` of the head. The embedding, final norm and head on every
pipeline stage."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from dryboot.vllm.model_executor.models.compose import Family, Layout, decoder


def _prepare(config: Mapping[str, Any]) -> Mapping[str, Any]:
    out = {"tie_word_embeddings": False, "attention_bias": True, **config}
    out.setdefault("partial_rotary_factor", out.get("rotary_pct", 0.25))
    return out


FAMILIES: dict[str, Family] = {
    "GPTNeoXForCausalLM": decoder(
        Layout(
            every_stage=True,
            norm_bias=True,
            qkv_bias="attention_bias",
            o_bias="attention_bias",
            mlp="plain",
            mlp_bias=True,
        ),
        _prepare,
    ),
}

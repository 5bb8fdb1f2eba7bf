"""GLM-4 (``glm4.py``, ``Glm4ForCausalLM``): Llama's layout with four RMSNorms per layer (``input``,
``post_self_attn``, ``post_attention``, ``post_mlp``), a QKV bias under ``attention_bias`` (true
unless the config says otherwise, ``Glm4Config``'s default) and a partial rotary table
(``partial_rotary_factor``, 0.5 by default)."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from dryboot.vllm.model_executor.models.compose import Family, Layout, decoder


def _prepare(config: Mapping[str, Any]) -> Mapping[str, Any]:
    return {"attention_bias": True, "partial_rotary_factor": 0.5, **config}


FAMILIES: dict[str, Family] = {
    "Glm4ForCausalLM": decoder(Layout(norms=4, qkv_bias="attention_bias"), _prepare, refused=("mlp_bias",)),
}

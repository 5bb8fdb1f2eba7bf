"""EXAONE 3 (``exaone.py``, ``ExaoneForCausalLM``): Llama's parameters under GPT-style names
(``transformer.h.N.attn.attention.qkv_proj``, ``mlp.c_proj``, ``ln_1`` / ``ln_2``, ``ln_f``) and
the config's ``num_layers``."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from dryboot.vllm.model_executor.models.compose import Family, Layout, decoder


def _prepare(config: Mapping[str, Any]) -> Mapping[str, Any]:
    """``ExaoneConfig``: ``num_layers`` is its layer count."""
    if "num_hidden_layers" in config or "num_layers" not in config:
        return config
    return {**config, "num_hidden_layers": config["num_layers"]}


FAMILIES: dict[str, Family] = {"ExaoneForCausalLM": decoder(Layout(), _prepare, refused=("mlp_bias",))}

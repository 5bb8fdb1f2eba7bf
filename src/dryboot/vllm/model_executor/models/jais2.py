"""Jais-2 (``jais2.py``, ``Jais2ForCausalLM``): biases on every linear layer (QKV, ``o_proj``,
the non-gated MLP's ``up_proj`` / ``down_proj``), LayerNorms with biases."""

from __future__ import annotations

from dryboot.vllm.model_executor.models.compose import Family, Layout, decoder

FAMILIES: dict[str, Family] = {
    "Jais2ForCausalLM": decoder(
        Layout(qkv_bias=True, o_bias=True, norm_bias=True, mlp="plain", mlp_bias=True),
    ),
}

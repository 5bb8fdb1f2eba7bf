"""Nemotron (``nemotron.py``, ``NemotronForCausalLM``): LayerNorm1P with biases (two per layer,
the final one), a non-gated MLP (``up_proj`` / ``down_proj``), a partial rotary table
(``partial_rotary_factor``)."""

from __future__ import annotations

from dryboot.vllm.model_executor.models.compose import Family, Layout, decoder

FAMILIES: dict[str, Family] = {
    "NemotronForCausalLM": decoder(
        Layout(norm_bias=True, mlp="plain", qkv_bias="attention_bias", o_bias="attention_bias", mlp_bias="mlp_bias")
    ),
}

"""Arcee AFM (``arcee.py``, ``ArceeForCausalLM``): Llama's layout with a non-gated MLP
(``up_proj`` ``[I / TP, H]``, ReLU², ``down_proj``)."""

from __future__ import annotations

from dryboot.vllm.model_executor.models.compose import Family, Layout, decoder

FAMILIES: dict[str, Family] = {
    "ArceeForCausalLM": decoder(Layout(mlp="plain"), refused=("mlp_bias", "attention_bias")),
}

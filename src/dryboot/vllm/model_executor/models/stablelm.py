"""StableLM (``stablelm.py``, ``StablelmForCausalLM``; ``StableLmForCausalLM`` and
``StableLMEpochForCausalLM``): LayerNorms with biases (two per layer and the final one), a QKV
bias under ``use_qkv_bias``, a gated MLP, a partial rotary table (``partial_rotary_factor``)."""

from __future__ import annotations

from dryboot.vllm.model_executor.models.compose import Family, Layout, decoder

_STABLELM = decoder(Layout(norm_bias=True, qkv_bias="use_qkv_bias", every_stage=True), refused=("qk_layernorm",))

FAMILIES: dict[str, Family] = {"StableLmForCausalLM": _STABLELM, "StableLMEpochForCausalLM": _STABLELM}

"""Architectures vLLM 0.28.0 serves through its Transformers modeling backend
(``models/transformers/``, ``TransformersForCausalLM``: ``OlmoForCausalLM``, ``Olmo2ForCausalLM``,
``SmolLM3ForCausalLM``, ``Starcoder2ForCausalLM``, ``VaultGemmaForCausalLM``): the Hugging Face
modules with vLLM's parallel linear layers swapped in, so ``q_proj`` / ``k_proj`` / ``v_proj``
stay three allocations and ``gate_up_proj`` is fused; the rotary embedding is transformers' own
(float32 ``inv_freq`` and ``original_inv_freq`` ``[rotary_dim / 2]``, no table); vLLM's attention
layers hold no scale buffers of the model's. That is 0.27.1-0.29.0's backend (recorded on 0.28.0
and 0.29.0); 0.30+'s fuses q/k/v and builds vLLM's ``Attention`` with its scale buffers
(:func:`.compose.backend_layout`, applied by :func:`.compose.decoder`, which also gives the
architectures 0.29+ move onto the backend their backend layout). Per architecture:

* OLMo: non-parametric LayerNorms (no norm weights at all);
* OLMo-2: ``post_attention_layernorm`` / ``post_feedforward_layernorm``, q/k norms over the whole
  projections;
* SmolLM3: Llama's layer, the head tied (``SmolLM3Config``'s default);
* StarCoder2: biases on every linear layer (``use_bias``, true by default), LayerNorms with
  biases, a non-gated MLP (``c_fc`` / ``c_proj``), the head tied;
* VaultGemma: ``input_layernorm`` / ``pre_feedforward_layernorm``, the embedding's ``embed_scale``
  scalar buffer, the head tied.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from dryboot.vllm.model_executor.models.compose import Family, Layout, decoder


def _hf(**fields: Any) -> Layout:
    """The backend's layout: separate q/k/v, transformers' rotary buffers, no attention scales."""
    return Layout(qkv="separate", rope="hf", attention_scales=False, **fields)


def _starcoder2(config: Mapping[str, Any]) -> Mapping[str, Any]:
    return {"use_bias": True, **config}


FAMILIES: dict[str, Family] = {
    "OlmoForCausalLM": decoder(_hf(norms=0, final_norm=False), refused=("clip_qkv",)),
    "Olmo2ForCausalLM": decoder(_hf(qk_norm="whole")),
    "SmolLM3ForCausalLM": decoder(_hf(tied=True), refused=("mlp_bias", "attention_bias")),
    "Starcoder2ForCausalLM": decoder(
        _hf(qkv_bias="use_bias", o_bias="use_bias", norm_bias=True, mlp="plain", mlp_bias="use_bias", tied=True),
        _starcoder2,
    ),
    "VaultGemmaForCausalLM": decoder(_hf(tied=True, scalars=1)),
}

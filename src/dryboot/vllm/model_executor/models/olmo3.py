"""OLMo-3 (``olmo3.py``, ``Olmo3ForCausalLM``): no norm before attention or MLP, two after
(``post_attention_layernorm``, ``post_feedforward_layernorm``), q/k RMSNorms over the whole
projections (``[heads x head_dim]``, ``[kv_heads x head_dim]``, replicated on every rank), the
head untied; the sliding-window layers change no weight."""

from __future__ import annotations

from dryboot.vllm.model_executor.models.compose import Family, Layout, decoder

FAMILIES: dict[str, Family] = {
    "Olmo3ForCausalLM": decoder(Layout(qk_norm="whole", every_stage=True, hf_rope_by_layer_type=True))
}

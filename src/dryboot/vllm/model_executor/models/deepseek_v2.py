"""GLM-5 (``deepseek_v2.py``, ``GlmMoeDsaForCausalLM``): vLLM builds it as DeepSeek-V3.2
(``GlmMoeDsaForCausalLM`` subclasses ``DeepseekV2ForCausalLM``): multi-head latent attention
with the sparse-attention indexer on the layers its IndexCache schedule keeps
(:func:`weights.has_indexer`: ``index_topk_freq`` / ``index_skip_topk_offset`` /
``index_topk_pattern``), DeepSeek's MoE blocks past ``first_k_dense_replace``. The walk's
DeepSeek-V3.2 layout over ``GlmMoeDsaConfig``'s defaults (transformers 5.x) for what a config
leaves out; from the config only."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from dryboot.vllm.model_executor.models.compose import Family, built_as

#: ``GlmMoeDsaConfig``'s defaults (transformers 5.x) that the DeepSeek walk reads
DEFAULTS: dict[str, Any] = {
    "vocab_size": 154880,
    "hidden_size": 6144,
    "intermediate_size": 12288,
    "moe_intermediate_size": 2048,
    "num_hidden_layers": 78,
    "num_attention_heads": 64,
    "num_key_value_heads": 64,
    "n_shared_experts": 1,
    "n_routed_experts": 256,
    "kv_lora_rank": 512,
    "q_lora_rank": 2048,
    "qk_rope_head_dim": 64,
    "v_head_dim": 256,
    "qk_nope_head_dim": 192,
    "max_position_embeddings": 202752,
    "tie_word_embeddings": False,
    "index_topk": 2048,
    "index_head_dim": 128,
    "index_n_heads": 32,
    "first_k_dense_replace": 3,
}


def _prepare(config: Mapping[str, Any]) -> Mapping[str, Any]:
    return {**DEFAULTS, **config}


FAMILIES: dict[str, Family] = {"GlmMoeDsaForCausalLM": built_as("DeepseekV32ForCausalLM", prepare=_prepare)}

"""Mistral Large 3 (``mistral_large_3.py``, ``MistralLarge3ForCausalLM``): a DeepSeek-V3 model
class (MLA, dense layers below ``first_k_dense_replace``, then MoE with shared experts and the
float32 ``e_score_correction_bias`` under ``noaux_tc``): the walk's DeepSeek layout."""

from __future__ import annotations

from dryboot.vllm.model_executor.models.compose import Family, built_as

FAMILIES: dict[str, Family] = {"MistralLarge3ForCausalLM": built_as("DeepseekV3ForCausalLM")}

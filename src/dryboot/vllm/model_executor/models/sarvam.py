"""Sarvam-M MLA (``sarvam.py``, ``SarvamMLAForCausalLM``): GLM-4.7-Flash's parameters (the walk's
``glm4_moe_lite`` layout: DeepSeek's MLA, dense layers below ``first_k_dense_replace``, MoE with
shared experts, the gate in float32 with its float32 ``e_score_correction_bias`` always built); a
pipeline stage without MoE layers is refused as vLLM refuses it ("No SarvamMLAMoE layer found")."""

from __future__ import annotations

from dryboot.vllm.model_executor.models.compose import Family, built_as

FAMILIES: dict[str, Family] = {"SarvamMLAForCausalLM": built_as("Glm4MoeLiteForCausalLM")}

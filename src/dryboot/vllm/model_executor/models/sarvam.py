"""Sarvam-M MLA (``sarvam.py``, ``SarvamMLAForCausalLM``): GLM-4.7-Flash's parameters (the walk's
``glm4_moe_lite`` layout: DeepSeek's MLA, dense layers below ``first_k_dense_replace``, MoE with
shared experts, its float32 ``e_score_correction_bias`` always built, the gate an ``nn.Linear`` in
float32 up to 0.30 and a ``GateLinear`` in the model dtype from 0.31 on:
``VersionRules.moe_gate_model_dtype``); a pipeline stage without MoE layers is refused as vLLM
refuses it ("No SarvamMLAMoE layer found")."""

from __future__ import annotations

from dryboot.vllm.model_executor.models.compose import Family, built_as

FAMILIES: dict[str, Family] = {"SarvamMLAForCausalLM": built_as("Glm4MoeLiteForCausalLM")}

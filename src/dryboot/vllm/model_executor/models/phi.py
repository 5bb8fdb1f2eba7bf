"""Phi-1 / Phi-2 (``phi.py``, ``PhiForCausalLM``): one LayerNorm with bias per layer (attention and MLP
in parallel), ``qkv_proj`` and ``dense`` with biases, a plain MLP ``fc1`` / ``fc2`` of ``n_inner``
(``4 H`` when absent; ``intermediate_size`` is not read) with biases, ``final_layernorm``, an untied
LM head with a bias; the rotary table over ``partial_rotary_factor`` of the head. The embedding,
final norm and head on every pipeline stage."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from dryboot.vllm.model_executor.model_loader import weights as W
from dryboot.vllm.model_executor.models.compose import Family, Layout, decoder


def _prepare(config: Mapping[str, Any]) -> Mapping[str, Any]:
    """``phi.py`` sizes the MLP by ``n_inner`` (``4 H`` when absent), not ``intermediate_size``."""
    return {**config, "intermediate_size": config.get("n_inner") or 4 * W._int(config, "hidden_size")}


FAMILIES: dict[str, Family] = {
    "PhiForCausalLM": decoder(
        Layout(
            every_stage=True,
            norms=1,
            norm_bias=True,
            qkv_bias=True,
            o_bias=True,
            mlp="plain",
            mlp_bias=True,
            head_bias=True,
        ),
        _prepare,
        # the Transformers backend (0.33.0's registry) builds transformers' PhiMLP: fc1 / fc2 of
        # intermediate_size, and vLLM's ParallelLMHead without its bias
        backend_prepare=lambda config: config,
    ),
}

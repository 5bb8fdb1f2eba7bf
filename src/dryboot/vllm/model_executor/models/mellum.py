"""Mellum (``mellum.py``, ``MellumForCausalLM``): Qwen3's attention (per-head q/k norms), per layer
of ``mlp_layer_types`` a dense gated MLP (``dense``) or a MoE block (``sparse``: router ``[E, H]``,
``num_experts`` experts of ``moe_intermediate_size``); ``rope_parameters`` per layer type, so one
rotary table per type among the stage's layers (``get_rope`` caches one per distinct rope); the
head untied. A pipeline stage without MoE layers is refused, as vLLM's own class (up to 0.31.0) refuses
it; the Transformers backend (0.32+) builds it (`compose.backend_layout`)."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from dryboot.vllm.model_executor.models.compose import Family, Layout, decoder


def _sparse(config: Mapping[str, Any], li: int) -> bool:
    kinds = config.get("mlp_layer_types") or []
    return li < len(kinds) and kinds[li] == "sparse"


def _tables(config: Mapping[str, Any], layers: range) -> int:
    """Distinct ropes of the stage's layer types (one table each)."""
    ropes = config.get("rope_parameters_by_type")
    types = config.get("layer_types") or []
    if not isinstance(ropes, Mapping) or not all(isinstance(r, Mapping) for r in ropes.values()):
        return 1
    seen = {repr(sorted(ropes.get(types[li], {}).items())) for li in layers if li < len(types)}
    return max(1, len(seen))


def _prepare(config: Mapping[str, Any]) -> Mapping[str, Any]:
    """The rotary table's size reads the full-attention rope (the sizes do not differ by type);
    the ropes by layer type are kept for :func:`_tables`."""
    ropes = config.get("rope_parameters")
    if isinstance(ropes, Mapping) and isinstance(ropes.get("full_attention"), Mapping):
        return {**config, "rope_parameters": ropes["full_attention"], "rope_parameters_by_type": ropes}
    return config


FAMILIES: dict[str, Family] = {
    "MellumForCausalLM": decoder(
        Layout(qk_norm="head", moe=_sparse, rope_tables=_tables, stage_needs_moe=True, hf_rope_by_layer_type=True),
        _prepare,
    ),
}

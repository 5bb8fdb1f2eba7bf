"""Hunyuan MoE V1 (``hunyuan_v1.py``, ``HunYuanMoEV1ForCausalLM``): Llama's attention with
per-head q/k norms (``query_layernorm`` / ``key_layernorm`` under ``use_qk_norm``, ``head_dim``
``attention_head_dim``), on every layer a MoE block: the router ``[E, H]``, under
``use_mixed_mlp_moe`` a gated shared MLP ``intermediate_size x num_shared_expert`` wide, and
``num_experts`` experts of ``moe_intermediate_size``; the head tied unless the config unties it.
Per-layer lists (``moe_intermediate_size``, ``num_shared_expert``) that differ by layer, and the
cross-layer attention sharing (``use_cla`` with ``cla_share_factor`` above 1, which vLLM fails),
are refused by name."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from dryboot.errors import InputError
from dryboot.vllm.model_executor.model_loader import weights as W
from dryboot.vllm.model_executor.models.compose import Family, Layout, decoder


def _one(config: Mapping[str, Any], key: str) -> Any:
    v = config.get(key)
    if isinstance(v, list):
        if not v or any(x != v[0] for x in v):
            raise InputError("config.json", key, "values that differ by layer are not modelled")
        return v[0]
    return v


def _prepare(config: Mapping[str, Any]) -> Mapping[str, Any]:
    out = {"tie_word_embeddings": True, **config}
    if out.get("use_cla") and (out.get("cla_share_factor") or 1) > 1:
        raise InputError("config.json", "cla_share_factor", "cross-layer attention sharing is not modelled")
    if not out.get("use_qk_norm", True):
        raise InputError("config.json", "use_qk_norm", "HunYuanMoEV1ForCausalLM without use_qk_norm is not modelled")
    for key in ("moe_intermediate_size", "num_shared_expert"):
        out[key] = _one(out, key)
    if out.get("attention_head_dim"):
        out["head_dim"] = out["attention_head_dim"]
    return out


def _every_layer(config: Mapping[str, Any], li: int) -> bool:
    return True


def _shared(config: Mapping[str, Any]) -> int:
    if not config.get("use_mixed_mlp_moe"):
        return 0
    return W._int(config, "intermediate_size") * W._int(config, "num_shared_expert", 1)


FAMILIES: dict[str, Family] = {
    "HunYuanMoEV1ForCausalLM": decoder(
        # backend_attention_whole: transformers' HunYuanMoEV1 gives its attention no TP plan (0.29.0's
        # Transformers backend keeps it whole on every rank, recorded)
        Layout(qk_norm="head", tied=True, moe=_every_layer, shared=_shared, backend_attention_whole=True),
        _prepare,
        refused=("attention_bias",),
    ),
}

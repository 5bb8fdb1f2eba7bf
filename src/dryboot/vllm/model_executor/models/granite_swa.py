"""Granite-SWA and Granite-MoE-SWA (vLLM 0.29.0+'s registry: ``GraniteSWAForCausalLM`` is
``granite.py``'s ``GraniteForCausalLM``, ``GraniteMoeSWAForCausalLM`` ``granitemoeshared.py``'s
``GraniteMoeSharedForCausalLM``, on transformers' ``GraniteSWAConfig`` / ``GraniteMoeSWAConfig``):
Granite's layouts plus what ``granite_layer_attn_params`` gives each layer:

* a per-head attention sink (``self_attn.sinks``, ``[num_attention_heads / TP]`` in the model
  dtype) on every layer, unless ``attention_sinks`` is false (the config class always writes
  ``layer_types``, which turns the sinks on);
* a rotary table per distinct non-zero ``layer_rope_theta`` among the stage's layers (``get_rope``
  caches one ``cos_sin_cache`` per base; a 0 is a NoPE layer, no table); the config class writes
  ``rope_theta`` for every layer when absent;
* where vLLM 0.33.0 builds FlashInfer attention for the layers (SM 10.x; with sinks SM 12.x too,
  with ``flashinfer-cubin``): its shared multi-CTA KV counter (``compose.Layout.sinks``; recorded:
  ``quant_cases_sinksfam.py``, RTX 5090 and B200).

Granite-SWA: Llama's decoder layer (``attention_bias`` or ``bias`` on QKV and ``o_proj``,
``mlp_bias`` on the MLP), the head tied by default (``GraniteSWAConfig``), the embedding / norm /
head on their stages. Granite-MoE-SWA: ``hidden // heads`` heads (``granitemoe.py`` ignores
``head_dim``), no attention bias, a router ``[E, H]`` and ``num_local_experts`` experts of width
``intermediate_size`` on every layer, a shared gated MLP of ``shared_intermediate_size`` when
non-zero, the embedding, final norm and head on every pipeline stage (no ``PPMissingLayer``).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from dryboot.errors import InputError
from dryboot.vllm.model_executor.model_loader import weights as W
from dryboot.vllm.model_executor.models.compose import Family, Layout, decoder

#: ``GraniteSWAConfig``'s defaults of the fields the layout reads (transformers 5.x)
_SWA_DEFAULTS: dict[str, Any] = {
    "vocab_size": 100352,
    "hidden_size": 2560,
    "intermediate_size": 8192,
    "num_hidden_layers": 24,
    "num_attention_heads": 20,
    "num_key_value_heads": 4,
    "max_position_embeddings": 8192,
    "tie_word_embeddings": True,
}
#: ``GraniteMoeSWAConfig``'s
_MOE_SWA_DEFAULTS: dict[str, Any] = {
    "vocab_size": 32000,
    "hidden_size": 4096,
    "intermediate_size": 11008,
    "num_hidden_layers": 32,
    "num_attention_heads": 32,
    "max_position_embeddings": 2048,
    "tie_word_embeddings": False,
    "num_local_experts": 8,
    "shared_intermediate_size": 0,
}


def _thetas(config: Mapping[str, Any]) -> list[float]:
    """Each layer's rotary base: ``layer_rope_theta``, else the global ``rope_theta`` on every
    layer (``rope_parameters``, default 10000).

    :raises InputError: ``layer_rope_theta`` not one number per layer."""
    n = W._int(config, "num_hidden_layers")
    per_layer = config.get("layer_rope_theta")
    if per_layer is None:
        rope = config.get("rope_parameters") or {}
        theta = rope.get("rope_theta", config.get("rope_theta", 10000.0))
        return [float(theta)] * n
    if not isinstance(per_layer, list) or len(per_layer) != n or not all(isinstance(t, int | float) for t in per_layer):
        raise InputError("config.json", "layer_rope_theta", f"must list one number per layer ({n})")
    return [float(t) for t in per_layer]


def _rope_tables(config: Mapping[str, Any], layers: range) -> int:
    """The rotary tables of the stage's ``layers``: one per distinct non-zero base."""
    thetas = _thetas(config)
    return len({thetas[li] for li in layers if thetas[li] != 0})


def _uses_rope(config: Mapping[str, Any], li: int) -> bool:
    return _thetas(config)[li] != 0


def _sinks(config: Mapping[str, Any], li: int) -> bool:
    """``granite_layer_attn_params``: ``attention_sinks``, default true (``layer_types`` is set)."""
    return bool(config.get("attention_sinks", True))


def _prepare(defaults: Mapping[str, Any]) -> Any:
    def read(config: Mapping[str, Any]) -> Mapping[str, Any]:
        out = {**defaults, **{k: v for k, v in config.items() if v is not None}}
        out.setdefault("num_key_value_heads", out["num_attention_heads"])
        # Granite's attention: bias on QKV and o_proj with attention_bias or bias
        out["attention_bias"] = bool(out.get("attention_bias") or out.get("bias"))
        return out

    return read


def _moe_prepare(config: Mapping[str, Any]) -> Mapping[str, Any]:
    out = dict(_prepare(_MOE_SWA_DEFAULTS)(config))
    out.pop("head_dim", None)  # granitemoe.py: hidden // heads whatever head_dim says
    return out


def _shared(config: Mapping[str, Any]) -> int:
    return W._int(config, "shared_intermediate_size", 0)


#: what ``granite_layer_attn_params`` adds to either layout: the rotary tables, the NoPE layers and
#: the per-head sinks (their parameter, and FlashInfer's KV counter where it serves them)
_LAYER_ATTN_PARAMS: dict[str, Any] = {
    "rope_tables": _rope_tables,
    "uses_rope": _uses_rope,
    "head_vector": _sinks,
    "sinks": _sinks,
}

FAMILIES: dict[str, Family] = {
    "GraniteSWAForCausalLM": decoder(
        Layout(
            qkv_bias="attention_bias",
            o_bias="attention_bias",
            mlp_bias="mlp_bias",
            tied=True,
            **_LAYER_ATTN_PARAMS,
        ),
        _prepare(_SWA_DEFAULTS),
    ),
    "GraniteMoeSWAForCausalLM": decoder(
        Layout(
            moe=lambda config, li: True,
            experts_key="num_local_experts",
            moe_inter_key="intermediate_size",
            shared=_shared,
            every_stage=True,
            **_LAYER_ATTN_PARAMS,
        ),
        _moe_prepare,
    ),
}

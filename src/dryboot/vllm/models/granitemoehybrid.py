"""Granite-4 (GraniteMoeHybrid): Mamba2 layers with some attention layers, by ``layer_types``.

Mirrors ``vllm/model_executor/models/granitemoehybrid.py`` fed by transformers'
``GraniteMoeHybridConfig``: layer ``i`` is built from ``layer_types[i]`` (``mamba`` or
``linear_attention``: a ``MambaMixer2`` at ``model.layers.i.mixer``; ``attention`` or
``full_attention``: attention at ``model.layers.i.self_attn.attn``; absent, every layer is
Mamba2). Attention heads are ``hidden_size // num_attention_heads`` wide whatever ``head_dim``
says (``GraniteMoeHybridAttention``). The Mamba2 mixer spans ``mamba_expand * hidden_size``
with ``mamba_n_heads`` heads of ``mamba_d_head`` (``"auto"``: that width over the heads),
``mamba_n_groups`` groups, state ``mamba_d_state``, conv kernel ``mamba_d_conv``
(``GraniteMoeHybridForCausalLM.get_mamba_state_shape_from_config``); both states take
``--mamba-cache-dtype`` / ``--mamba-ssm-cache-dtype`` (``mamba2_state_dtype``, no config
pin). A hybrid model class: the attention block is aligned to the mamba page, a page the
model class computes without the speculative tokens' convolution rows.
"""

from __future__ import annotations

from typing import Any

from dryboot.errors import InputError
from dryboot.vllm.config.hf import ConfigFields, LayerKind, ModelGeometry
from dryboot.vllm.models.common import geometry, mamba2_mixer, num_layers
from dryboot.vllm.models.nemotron_h import verify as verify  # MambaMixer2's group split rule

#: ``ALL_DECODER_LAYER_TYPES`` (both transformers spellings).
_TYPES = {
    "mamba": LayerKind.MAMBA2,
    "linear_attention": LayerKind.MAMBA2,
    "attention": LayerKind.FULL,
    "full_attention": LayerKind.FULL,
}

#: ``GraniteMoeHybridConfig``'s defaults (transformers 5.x) the geometry reads (the weights per
#: rank read these and more: ``model_loader/weights.py``)
CONFIG_DEFAULTS: dict[str, Any] = {
    "hidden_size": 4096,
    "num_hidden_layers": 32,
    "num_attention_heads": 32,
    "max_position_embeddings": 2048,
    "mamba_n_heads": 128,
    "mamba_n_groups": 1,
    "mamba_d_state": 256,
    "mamba_d_head": "auto",
    "mamba_d_conv": 4,
    "mamba_expand": 2,
    "mamba_chunk_size": 256,
}


def defaults(f: ConfigFields) -> dict[str, Any]:
    return dict(CONFIG_DEFAULTS)


def read(f: ConfigFields, architecture: str) -> ModelGeometry:
    n = num_layers(f)
    types = f.get("layer_types")
    if types is None:
        types = ["mamba"] * n
    if not isinstance(types, list) or len(types) != n:
        raise InputError(f.source, f.where("layer_types"), f"must list one type per layer ({n})")
    for i, t in enumerate(types):
        if t not in _TYPES:
            raise InputError(f.source, f"{f.where('layer_types')}[{i}]", f"unknown layer type {t!r}")
    kinds = tuple(_TYPES[t] for t in types)
    heads = f.integer("num_attention_heads")
    kv = f.integer("num_key_value_heads", default=heads)
    if heads % kv:
        raise InputError(f.source, f.where("num_key_value_heads"), f"{kv} KV heads do not divide {heads} heads")
    mamba2 = mamba2_mixer(f, f.integer("mamba_expand") * f.integer("hidden_size"))
    return geometry(
        f,
        architecture,
        "granitemoehybrid",
        kinds,
        heads=(heads, kv, f.integer("hidden_size") // heads),
        mamba2=mamba2,
        hybrid_class=True,
        hf_layer_types=True,
        hf_legacy_attention_name=True,
        align_state_without_spec=True,
    )

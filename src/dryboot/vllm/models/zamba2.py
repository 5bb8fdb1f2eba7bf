"""Zamba2: Mamba2 layers, some of them also running a shared-weight attention block.

Mirrors ``vllm/model_executor/models/zamba2.py`` fed by transformers' ``Zamba2Config``: every
entry of ``layers_block_type`` is a Mamba2 layer (``mamba`` / ``linear_attention``), and each
``hybrid`` entry also runs one of ``num_mem_blocks`` shared attention blocks. The weights are
shared, the KV caches are not: vLLM builds one ``Attention`` per hybrid layer
(``model.attn.<j>``), so a model with ``H`` hybrid layers out of ``n`` keeps ``H`` attention
caches and ``n`` Mamba2 states (``<H + i>.mixer``). The attention keeps every query head as a KV
head (``num_attention_heads / TP``, no grouped KV), ``attention_head_dim`` wide (the config
class derives ``2 * hidden_size // num_attention_heads``; a value in the file wins). The mixer
spans ``mamba_expand * hidden_size`` with ``n_mamba_heads`` heads, ``mamba_ngroups`` groups,
state ``mamba_d_state``, conv kernel ``mamba_d_conv``; the model class sizes the hybrid
alignment without speculative rows (``get_mamba_state_shape_from_config``).

Refused by name: a ``num_key_value_heads`` other than the attention heads (vLLM aligns the
hybrid block with the config's KV heads while the layers keep all heads: not modelled), and a
``mamba_headdim`` other than the mixer width over ``n_mamba_heads`` (the alignment reads the
former, the layers the latter: not modelled).
"""

from __future__ import annotations

from typing import Any

from dryboot.errors import InputError
from dryboot.vllm.config.hf import ConfigFields, LayerKind, Mamba2, ModelGeometry
from dryboot.vllm.models.common import geometry, num_layers
from dryboot.vllm.models.nemotron_h import verify_after_attention

# MambaMixer2's group split rule, after the shared attention blocks' backends

_MAMBA = ("mamba", "linear_attention")

#: ``Zamba2Config`` class defaults.
_DEFAULTS = {
    "hidden_size": 2560,
    "num_hidden_layers": 54,
    "num_attention_heads": 32,
    "max_position_embeddings": 4096,
    "mamba_d_state": 64,
    "mamba_d_conv": 4,
    "mamba_expand": 2,
    "mamba_ngroups": 1,
    "n_mamba_heads": 8,
    "chunk_size": 256,
    "num_mem_blocks": 1,
}


def defaults(f: ConfigFields) -> dict[str, Any]:
    return dict(_DEFAULTS)


def _default_types() -> list[str]:
    """``Zamba2Config``'s 54-layer pattern when ``layers_block_type`` is absent."""
    return (
        ["mamba"]
        + (["mamba"] * 5 + ["hybrid"]) * 7
        + ["mamba"] * 4
        + ["hybrid"]
        + ["mamba"] * 3
        + ["hybrid"]
        + ["mamba"] * 2
    )


def read(f: ConfigFields, architecture: str) -> ModelGeometry:
    n = num_layers(f)
    types = f.get("layers_block_type")
    if types is None:
        types = _default_types()
    if not isinstance(types, list) or len(types) != n:
        raise InputError(f.source, f.where("layers_block_type"), f"must list one type per layer ({n})")
    for i, t in enumerate(types):
        if t != "hybrid" and t not in _MAMBA:
            raise InputError(f.source, f"{f.where('layers_block_type')}[{i}]", f"unknown layer type {t!r}")
    hidden = f.integer("hidden_size")
    heads = f.integer("num_attention_heads")
    kv = f.integer("num_key_value_heads", default=heads)
    if kv != heads:
        raise InputError(
            f.source,
            f.where("num_key_value_heads"),
            f"{kv} differs from num_attention_heads ({heads}): Zamba2's attention keeps every head while "
            "vLLM sizes the hybrid block with num_key_value_heads; not modelled",
        )
    inner = f.integer("mamba_expand") * hidden
    m_heads = f.integer("n_mamba_heads")
    # a key the file sets wins over the value Zamba2Config derives (its extra keys are set last)
    head_dim = f.integer("attention_head_dim") if f.given("attention_head_dim") else 2 * hidden // heads
    attn_hidden = f.integer("attention_hidden_size") if f.given("attention_hidden_size") else 2 * hidden
    if head_dim * heads != attn_hidden:
        raise InputError(
            f.source,
            f.where("attention_head_dim"),
            f"{heads} heads of {head_dim} do not make attention_hidden_size {attn_hidden}: vLLM's Zamba2Attention "
            "refuses it (attention_hidden_size must be divisible by num_attention_heads)",
        )
    given = f.data.get("mamba_headdim")
    if given is not None and given != inner // m_heads:
        raise InputError(
            f.source,
            f.where("mamba_headdim"),
            f"{given} is not mamba_expand * hidden_size / n_mamba_heads ({inner // m_heads}): vLLM's layers use "
            "the latter and its hybrid alignment the former; not modelled",
        )
    mamba2 = Mamba2(
        num_heads=m_heads,
        head_dim=inner // m_heads,
        n_groups=f.integer("mamba_ngroups"),
        state_size=f.integer("mamba_d_state"),
        conv_kernel=f.integer("mamba_d_conv"),
        chunk_size=f.opt_int("chunk_size"),
        intermediate_size=inner,
    )
    hybrid = sum(1 for t in types if t == "hybrid")
    kinds = (LayerKind.FULL,) * hybrid + (LayerKind.MAMBA2,) * n
    names = tuple(f"model.attn.{j}" for j in range(hybrid)) + tuple(f"{hybrid + i}.mixer" for i in range(n))
    return geometry(
        f,
        architecture,
        "zamba2",
        kinds,
        heads=(heads, heads, head_dim),
        mamba2=mamba2,
        hybrid_class=True,
        align_state_without_spec=True,
        layer_names=names,
    )


#: the family's ``verify_built`` hook: MambaMixer2's group split rule, after the shared attention blocks' backends
verify_built = verify_after_attention

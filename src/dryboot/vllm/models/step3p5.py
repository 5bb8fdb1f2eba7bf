"""Step-3.5 (``Step3p5ForCausalLM``): sliding-window and full layers whose heads may differ.

Mirrors ``vllm/model_executor/models/step3p5.py`` (``Step3p5DecoderLayer``, ``Step3p5Attention``)
with vLLM 0.28.0's own ``Step3p5Config`` (``transformers_utils/configs/step3p5.py``):

* a layer slides when the config has a ``sliding_window`` and the layer's type is
  ``sliding_attention`` (without ``layer_types``: the even-numbered layers); the model clears the
  model-level window (``cache_config.sliding_window = None``), so every other layer is full;
* the layers whose type is ``attention_other_setting["attention_type"]`` take that block's
  ``num_attention_heads``, ``num_attention_groups`` (KV heads) and ``head_dim``; the others the
  config's ``num_attention_heads``, ``num_attention_groups`` and ``head_dim`` (else
  ``hidden_size // heads``);
* ``layer_types`` is cut to ``num_hidden_layers`` (the class keeps only that many);
* ``max_position_embeddings`` (the class default is ``None``) sizes the rotary embedding;
* every pipeline stage must hold an MoE layer (``moe_layers_enum``, else layers 1 on), and a
  stage other than the first reads ``tie_word_embeddings``, which the class does not set.

Its MTP module (``Step3p5MTP``) is not modelled.
"""

from __future__ import annotations

from typing import Any

from dryboot.errors import InputError, missing_field
from dryboot.vllm.config.hf import AttentionGeometry, ConfigFields, LayerKind, ModelGeometry
from dryboot.vllm.models.common import geometry, num_layers

_DEFAULTS: dict[str, Any] = {
    "num_hidden_layers": 48,
    "hidden_size": 5120,
    "num_attention_heads": 40,
    "num_attention_groups": 8,
    "max_seq_len": 4096,
    "moe_num_experts": 16,
    "att_impl_type": "GQA",
}

SLIDING = "sliding_attention"


def defaults(f: ConfigFields) -> dict[str, Any]:
    return dict(_DEFAULTS)


def _heads(f: ConfigFields, other: dict[str, Any] | None) -> tuple[int, int, int]:
    """(attention heads, KV heads, head size) of a layer, ``other`` its ``attention_other_setting``
    when that block applies to it."""
    o = ConfigFields(f.source, other, f.where("attention_other_setting") + ".") if other else None
    heads = (o.opt_int("num_attention_heads") if o else None) or f.integer("num_attention_heads")
    kv = (o.opt_int("num_attention_groups") if o else None) or f.integer("num_attention_groups")
    head_dim = (o.opt_int("head_dim") if o else None) or f.opt_int("head_dim") or f.integer("hidden_size") // heads
    return heads, kv, head_dim


def _moe_layers(f: ConfigFields, n: int) -> list[int]:
    """The MoE decoder layers: ``moe_layers_enum`` (a comma-separated string), else 1 to n-1.

    :raises InputError: an enum that is not such a string.
    """
    value = f.get("moe_layers_enum")
    if value is None:
        return list(range(1, n))
    try:
        return [int(i) for i in str(value).strip().split(",")] if isinstance(value, str) else _bad_enum(f)
    except ValueError:
        return _bad_enum(f)


def _bad_enum(f: ConfigFields) -> list[int]:
    raise InputError(f.source, f.where("moe_layers_enum"), "must be a comma-separated string of layer indices")


def read(f: ConfigFields, architecture: str) -> ModelGeometry:
    n = num_layers(f)
    if f.get("att_impl_type") != "GQA":
        raise InputError(
            f.source, f.where("att_impl_type"), f"Unsupported attention implementation: {f.get('att_impl_type')}"
        )
    if not f.given("max_position_embeddings"):
        # Step3p5Config defaults it to None, and the rotary embedding needs it
        raise InputError(
            f.source,
            f.where("max_position_embeddings"),
            missing_field("vLLM builds the rotary embedding with it: TypeError on None"),
        )
    types = f.get("layer_types")
    if types is not None:
        if not isinstance(types, list) or len(types) < n or not all(isinstance(t, str) for t in types):
            raise InputError(f.source, f.where("layer_types"), f"must list a type for each of the {n} layers")
        types = types[:n]
    other = f.get("attention_other_setting") or None
    if other is not None and not isinstance(other, dict):
        raise InputError(f.source, f.where("attention_other_setting"), "must be an object")
    sw = f.opt_int("sliding_window") if f.get("sliding_window") else None
    kinds: list[LayerKind] = []
    geo: dict[LayerKind, tuple[int, int, int]] = {}
    for i in range(n):
        sliding_type = types[i] == SLIDING if types else i % 2 == 0
        kind = LayerKind.SLIDING if sw and sliding_type else LayerKind.FULL
        applies = other is not None and bool(types) and types[i] == other.get("attention_type")
        heads = _heads(f, other if applies else None)
        if geo.setdefault(kind, heads) != heads:
            raise InputError(
                f.source,
                f.where("attention_other_setting"),
                f"{kind.value} layers with different heads {geo[kind]} and {heads}: not modelled",
            )
        kinds.append(kind)
    for q_heads, kv, _ in geo.values():
        if q_heads % kv:
            raise InputError(f.source, f.where("num_attention_groups"), f"{kv} KV heads do not divide {q_heads} heads")
    base = geo.get(LayerKind.SLIDING) or geo[LayerKind.FULL]
    full = geo.get(LayerKind.FULL)
    moe = [i for i in _moe_layers(f, n) if 0 <= i < n]
    if not moe:
        raise InputError(
            f.source, f.where("moe_layers_enum"), "no MoE layer: vLLM asserts 'No MoE layers found in the model.'"
        )
    config_heads = f.integer("num_attention_heads")
    extra: dict[str, Any] = {}
    if not f.given("tie_word_embeddings"):
        extra["pp_refusal"] = "AttributeError: 'Step3p5Config' object has no attribute 'tie_word_embeddings'"
    elif sorted(set(moe)) != list(range(min(moe), n)):
        extra["pp_refusal"] = "MoE layers that are not every layer from the first one on: not modelled"
    return geometry(
        f,
        architecture,
        "step3p5",
        tuple(kinds),
        # ModelConfig checks the config's num_attention_heads against TP; verify() the others
        heads=(config_heads, base[1], base[2]),
        sliding_window=sw,
        full_attention=AttentionGeometry(full[1], full[2], full[2]) if full and full != base else None,
        num_mtp_layers=f.opt_int("num_nextn_predict_layers") or 0,
        mtp_kind=None,
        moe_experts=("moe_num_experts", f.integer("moe_num_experts")),
        first_moe_layer=min(moe),
        extra_attention_heads=tuple(sorted({h for h, _, _ in geo.values() if h != config_heads})),
        **extra,
    )


def verify(model: ModelGeometry, tensor_parallel_size: int) -> None:
    """Refusals of ``Step3p5Attention`` (the full layers' KV heads against TP; every layer's heads
    are checked with ``extra_attention_heads``) and of its MoE block (more TP ranks than experts).

    :raises InputError: naming the field and vLLM's reason.
    """
    tp = tensor_parallel_size
    if model.full_attention is not None:
        kv = model.full_attention.num_kv_heads
        if tp > 1 and (kv % tp if kv >= tp else tp % kv):
            raise InputError(
                model.source,
                "num_attention_groups",
                f"{kv} KV heads can neither be split across nor replicated over {tp} ranks (Step3p5Attention)",
            )
    if model.parallel.moe_experts is not None and tp > model.parallel.moe_experts[1]:
        raise InputError(
            model.source,
            model.parallel.moe_experts[0],
            f"Tensor parallel size {tp} is greater than the number of experts {model.parallel.moe_experts[1]}.",
        )

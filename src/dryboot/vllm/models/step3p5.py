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

from dataclasses import dataclass
from typing import Any

from dryboot.errors import InputError, missing_field
from dryboot.vllm.config.hf import AttentionGeometry, ConfigFields, FamilyExtra, LayerKind, ModelGeometry, extra_of
from dryboot.vllm.models.common import config_class_lacks, geometry, num_layers
from dryboot.vllm.versions import VersionRules

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

#: what ``step3p5.py``'s MoE block reads that transformers' ``Step3p7TextConfig`` (0.33: switch
#: ``hf_config_class_architectures``) does not define, in read order; vLLM's own ``Step3p5Config``
#: (0.28-0.32) defaults each to true
HF_REQUIRED = ("use_moe_router_bias", "need_fp32_gate", "norm_expert_weight")
#: of those, what the MoE block asserts true (``Only support use_moe_router_bias is true.``)
ASSERTED_TRUE = ("use_moe_router_bias", "need_fp32_gate")


@dataclass(frozen=True)
class RouterFields(FamilyExtra):
    """The fields of :data:`HF_REQUIRED` config.json leaves out, in read order (refused where
    transformers' class reads the config: :func:`verify_release`)."""

    unset: tuple[str, ...]


def defaults(f: ConfigFields) -> dict[str, Any]:
    return dict(_DEFAULTS)


#: transformers' ``Step3p7TextConfig`` defaults (vLLM 0.33 reads Step-3.5 configs with it,
#: ``_CONFIG_REGISTRY``), in this module's names (``num_attention_groups`` and ``moe_num_experts`` are
#: its ``attribute_map`` aliases of ``num_key_value_heads`` and ``n_routed_experts``); it has no
#: ``max_seq_len``, and every field of :data:`HF_REQUIRED` is left undefined
HF_CLASS_DEFAULTS: dict[str, Any] = {
    "num_hidden_layers": 45,
    "hidden_size": 4096,
    "num_attention_heads": 64,
    "num_attention_groups": 8,
    "head_dim": 128,
    "max_position_embeddings": 128000,
    "moe_num_experts": 288,
    "att_impl_type": "GQA",
    "tie_word_embeddings": False,
}
#: ``Step3p7TextConfig.attribute_map``: a key config.json may give under the other name
_HF_ALIASES = {"num_key_value_heads": "num_attention_groups", "n_routed_experts": "moe_num_experts"}


def _heads(f: ConfigFields, other: dict[str, Any] | None) -> tuple[int, int, int]:
    """(attention heads, KV heads, head size) of a layer, ``other`` its ``attention_other_setting``
    when that block applies to it."""
    o = ConfigFields(f.source, other, f.where("attention_other_setting") + ".") if other else None
    heads = (o.opt_int("num_attention_heads") if o else None) or f.integer("num_attention_heads")
    kv = (o.opt_int("num_attention_groups") if o else None) or f.integer("num_attention_groups")
    head_dim = (o.opt_int("head_dim") if o else None) or f.opt_int("head_dim") or f.integer("hidden_size") // heads
    return heads, kv, head_dim


def _moe_layers(f: ConfigFields, n: int, first: int) -> list[int]:
    """The MoE decoder layers: ``moe_layers_enum`` (a comma-separated string), else ``first`` to n-1
    (1 with vLLM's own ``Step3p5Config``, 3 with transformers' class, which also takes
    ``mlp_layer_types``' ``sparse`` layers where config.json lists them).

    :raises InputError: an enum that is not such a string.
    """
    types = f.data.get("mlp_layer_types") if first == 3 else None
    if isinstance(types, list):
        return [i for i, t in enumerate(types) if t == "sparse"]
    value = f.get("moe_layers_enum")
    if value is None:
        return list(range(first, n))
    try:
        return [int(i) for i in str(value).strip().split(",")] if isinstance(value, str) else _bad_enum(f)
    except ValueError:
        return _bad_enum(f)


def _bad_enum(f: ConfigFields) -> list[int]:
    raise InputError(f.source, f.where("moe_layers_enum"), "must be a comma-separated string of layer indices")


def _layer_types(f: ConfigFields, n: int, hf: bool) -> list[str] | None:
    """``layer_types`` as the config class keeps it: cut to ``n`` (vLLM's class); transformers' class
    splits the ``num_nextn_predict_layers`` trailing MTP entries off and defaults to every layer
    full.

    :raises InputError: not a list of strings; too short (vLLM's class); another length than
        ``n`` (+ the MTP layers) under transformers' class (``validate_layer_type``)."""
    types = f.get("layer_types")
    if types is None:
        return ["full_attention"] * n if hf else None
    if not isinstance(types, list) or not all(isinstance(t, str) for t in types):
        raise InputError(f.source, f.where("layer_types"), f"must list a type for each of the {n} layers")
    if not hf:
        if len(types) < n:
            raise InputError(f.source, f.where("layer_types"), f"must list a type for each of the {n} layers")
        return types[:n]
    nextn = f.integer("num_nextn_predict_layers", default=0, minimum=0)
    if nextn and len(types) == n + nextn:
        types = types[:n]
    if len(types) != n:
        raise InputError(
            f.source,
            f.where("layer_types"),
            f"{len(types)} layer types for {n} layers: transformers' Step3p7TextConfig refuses them "
            "(validate_layer_type)",
        )
    return types


def _check_config(f: ConfigFields) -> None:
    """What both config classes' readers refuse before the layers.

    :raises InputError: an attention other than GQA, no ``max_position_embeddings`` (the rotary
        embedding needs it), a router field the MoE block asserts true set otherwise."""
    if f.get("att_impl_type") != "GQA":
        raise InputError(
            f.source, f.where("att_impl_type"), f"Unsupported attention implementation: {f.get('att_impl_type')}"
        )
    if f.get("max_position_embeddings") is None:
        # Step3p5Config defaults it to None, and the rotary embedding needs it
        raise InputError(
            f.source,
            f.where("max_position_embeddings"),
            missing_field("vLLM builds the rotary embedding with it: TypeError on None"),
        )
    for key in ASSERTED_TRUE:
        if key in f.data and f.data[key] is not True:
            raise InputError(
                f.source, f.where(key), f"vLLM's Step-3.5 MoE block asserts it (Only support {key} is true)"
            )


def _read(f: ConfigFields, architecture: str, hf: bool) -> ModelGeometry:
    """The geometry as vLLM's own ``Step3p5Config`` (``hf`` false: 0.28-0.32) or transformers'
    ``Step3p7TextConfig`` (``hf``: 0.33) reads ``f`` (module docstring). Under transformers' class a
    sliding layer takes ``attention_other_setting``'s ``num_attention_heads`` only (its
    ``num_sliding_attention_heads``), every layer the config's KV heads and head size, and the
    whole-model head count ``ModelConfig`` checks against TP is the largest layer's
    (``ModelArchitectureConfig.from_layers``)."""
    if hf:
        f = ConfigFields(
            f.source, {_HF_ALIASES.get(k, k): v for k, v in f.data.items()}, f.prefix, root=f.root
        ).with_defaults(HF_CLASS_DEFAULTS)
    n = num_layers(f)
    _check_config(f)
    types = _layer_types(f, n, hf)
    other = f.get("attention_other_setting") or None
    if other is not None and not isinstance(other, dict):
        raise InputError(f.source, f.where("attention_other_setting"), "must be an object")
    sw = f.opt_int("sliding_window") if f.get("sliding_window") else None
    global_heads = f.integer("num_attention_heads")
    sliding_heads = f.opt_int("num_sliding_attention_heads") or (
        (other or {}).get("num_attention_heads") or global_heads
    )
    kinds: list[LayerKind] = []
    layer_heads: list[int] = []
    geo: dict[LayerKind, tuple[int, int, int]] = {}
    for i in range(n):
        sliding_type = types[i] == SLIDING if types else i % 2 == 0
        kind = LayerKind.SLIDING if sw and sliding_type else LayerKind.FULL
        if hf:
            q = sliding_heads if sliding_type else global_heads
            heads = (q, f.integer("num_attention_groups"), f.integer("head_dim"))
        else:
            applies = other is not None and types is not None and types[i] == other.get("attention_type")
            heads = _heads(f, other if applies else None)
        if geo.setdefault(kind, heads) != heads:
            raise InputError(
                f.source,
                f.where("attention_other_setting"),
                f"{kind.value} layers with different heads {geo[kind]} and {heads}: not modelled",
            )
        kinds.append(kind)
        layer_heads.append(heads[0])
    for q_heads, kv, _ in geo.values():
        if q_heads % kv:
            raise InputError(f.source, f.where("num_attention_groups"), f"{kv} KV heads do not divide {q_heads} heads")
    base = geo.get(LayerKind.SLIDING) or geo[LayerKind.FULL]
    full = geo.get(LayerKind.FULL)
    moe = [i for i in _moe_layers(f, n, 3 if hf else 1) if 0 <= i < n]
    if not moe:
        raise InputError(
            f.source, f.where("moe_layers_enum"), "no MoE layer: vLLM asserts 'No MoE layers found in the model.'"
        )
    config_heads = max(layer_heads) if hf else global_heads
    extra: dict[str, Any] = {}
    if not hf and not f.given("tie_word_embeddings"):
        extra["pp_refusal"] = "AttributeError: 'Step3p5Config' object has no attribute 'tie_word_embeddings'"
    elif sorted(set(moe)) != list(range(min(moe), n)):
        extra["pp_refusal"] = "MoE layers that are not every layer from the first one on: not modelled"
    if hf:
        extra["family_extra"] = RouterFields(tuple(k for k in HF_REQUIRED if k not in f.data))
    return geometry(
        f,
        architecture,
        "step3p5",
        tuple(kinds),
        # ModelConfig checks the config's num_attention_heads against TP; verify() the others
        heads=(config_heads, base[1], base[2]),
        sliding_window=sw,
        full_attention=AttentionGeometry(full[1], full[2], full[2]) if full and full != base else None,
        num_mtp_layers=f.integer("num_nextn_predict_layers", default=0, minimum=0),
        mtp_kind=None,
        moe_experts=("moe_num_experts", f.integer("moe_num_experts")),
        first_moe_layer=min(moe),
        extra_attention_heads=tuple(sorted({h for h in layer_heads if h != config_heads})),
        **extra,
    )


@dataclass(frozen=True)
class Readings(FamilyExtra):
    """Both readings of one config: by vLLM's own ``Step3p5Config`` (``own``, 0.28-0.32) and by
    transformers' ``Step3p7TextConfig`` (``hf``, 0.33: switch ``hf_config_class_architectures``),
    each a geometry or the refusal that reading makes (:func:`for_release` picks one)."""

    own: ModelGeometry | InputError
    hf: ModelGeometry | InputError


def _attempt(f: ConfigFields, architecture: str, hf: bool) -> ModelGeometry | InputError:
    try:
        return _read(f, architecture, hf)
    except InputError as exc:
        return exc


def read(f: ConfigFields, architecture: str) -> ModelGeometry:
    """The geometry as vLLM's own ``Step3p5Config`` reads the config, carrying both readings
    (:class:`Readings`); where only transformers' class reads it, that reading.

    :raises InputError: what both config classes' readers refuse (vLLM's own class's words)."""
    own, hf = _attempt(f, architecture, False), _attempt(f, architecture, True)
    if isinstance(own, InputError) and isinstance(hf, InputError):
        raise own
    shown = hf if isinstance(own, InputError) else own
    assert isinstance(shown, ModelGeometry)
    return shown.evolve(family_extra=Readings(own, hf))


def for_release(model: ModelGeometry, rules: VersionRules) -> ModelGeometry:
    """``model`` as the release's config class reads it (:class:`Readings`).

    :raises InputError: the refusal of that reading."""
    readings = extra_of(model, Readings)
    if readings is None:
        return model
    chosen = readings.hf if "Step3p5ForCausalLM" in rules.hf_config_class_architectures else readings.own
    if isinstance(chosen, InputError):
        raise chosen
    return chosen


def verify_release(model: ModelGeometry, rules: VersionRules) -> None:
    """A config that leaves out a field of :data:`HF_REQUIRED` where the release reads it with
    transformers' ``Step3p7TextConfig`` (0.33): the MoE block fails while it is built.

    :raises InputError: naming the first such field, in vLLM's words."""
    fields = extra_of(model, RouterFields)
    if fields is not None and fields.unset and "Step3p5ForCausalLM" in rules.hf_config_class_architectures:
        key = fields.unset[0]
        raise InputError(model.source, key, config_class_lacks("Step-3.5", "Step3p7TextConfig", key))


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

"""MiMo-V2-Flash (``MiMoV2FlashForCausalLM``): sliding and full layers with their own heads and
separate K and V head sizes.

Mirrors ``vllm/model_executor/models/mimo_v2.py`` (``MiMoV2FlashDecoderLayer``,
``MiMoV2Attention``) on the checkpoint's own keys, which transformers' ``MiMoV2FlashConfig`` keeps
as given (the model reads them, no class default):

* layer ``i`` is a sliding-window layer when ``hybrid_layer_pattern[i] == 1``, with
  ``swa_num_attention_heads``, ``swa_num_key_value_heads``, ``swa_head_dim``, ``swa_v_head_dim``
  (else the K head size) and a window of ``sliding_window_size`` tokens; the others are full
  layers with ``num_attention_heads``, ``num_key_value_heads``, ``head_dim`` and ``v_head_dim``
  (class default 128);
* the layers' ``Attention`` is built without the cache config: the KV cache keeps the model dtype
  whatever ``--kv-cache-dtype`` says; from 0.32 (switch ``mimo_v2_cache_config``) with it, its
  ``sliding_window`` cleared, so ``--kv-cache-dtype`` applies;
* where the V head size differs from the K one, the layer takes a DiffKV backend: the one
  ``--attention-backend`` names when it is a ``*_DIFFKV`` backend, else ``FLASH_ATTN_DIFFKV``
  (FlashAttention 3 serves it on SM90);
* ``add_swa_attention_sink_bias`` gives the sliding layers attention sinks.

Its MTP module (``MiMoV2MTP``) is not modelled.
"""

from __future__ import annotations

from dataclasses import dataclass, replace
from typing import Any

from dryboot.errors import InputError, missing_field
from dryboot.vllm.backends import DIFFKV_BACKENDS, AttentionBackend
from dryboot.vllm.config.hf import AttentionGeometry, ConfigFields, FamilyExtra, LayerKind, ModelGeometry, extra_of
from dryboot.vllm.models.common import geometry, num_layers
from dryboot.vllm.versions import VersionRules

_DEFAULTS: dict[str, Any] = {
    "num_hidden_layers": 48,
    "num_attention_heads": 64,
    "num_key_value_heads": 4,
    "head_dim": 192,
    "v_head_dim": 128,
    "max_position_embeddings": 131072,
    "n_routed_experts": 256,
}

#: keys the model reads for its sliding-window layers, with no config-class default
_SWA_KEYS = ("swa_num_attention_heads", "swa_num_key_value_heads", "swa_head_dim", "sliding_window_size")


@dataclass(frozen=True)
class MiMoV2Extra(FamilyExtra):
    """``diffkv``: the attention layers have separate K and V head sizes and take a DiffKV backend
    (``FLASH_ATTN_DIFFKV`` unless ``--attention-backend`` names a ``*_DIFFKV`` one);
    ``cache_config``: they are built with the cache config (the release's switch)."""

    diffkv: bool = False
    cache_config: bool = False


def defaults(f: ConfigFields) -> dict[str, Any]:
    return dict(_DEFAULTS)


def read(f: ConfigFields, architecture: str) -> ModelGeometry:
    n = num_layers(f)
    if not f.given("layernorm_epsilon"):
        raise InputError(f.source, f.where("layernorm_epsilon"), missing_field("vLLM's MiMo-V2 layers read it"))
    pattern = f.get("hybrid_layer_pattern")
    if not isinstance(pattern, list) or len(pattern) != n or any(p not in (0, 1) for p in pattern):
        raise InputError(f.source, f.where("hybrid_layer_pattern"), f"required: one 0 or 1 per layer ({n})")
    kinds = tuple(LayerKind.SLIDING if p == 1 else LayerKind.FULL for p in pattern)
    full = (f.integer("num_attention_heads"), f.integer("num_key_value_heads"), f.integer("head_dim"))
    full_v = f.integer("v_head_dim") if f.has("v_head_dim") else full[2]
    swa = full
    swa_v = full_v
    window = None
    if LayerKind.SLIDING in kinds:
        for key in _SWA_KEYS:
            if not f.given(key):
                raise InputError(f.source, f.where(key), missing_field("vLLM's MiMo-V2 reads it"))
        swa = (
            f.integer("swa_num_attention_heads"),
            f.integer("swa_num_key_value_heads"),
            f.integer("swa_head_dim"),
        )
        swa_v = f.integer("swa_v_head_dim") if f.given("swa_v_head_dim") else swa[2]
        window = f.integer("sliding_window_size")
    for heads, kv, _ in {swa, full}:
        if heads % kv:
            raise InputError(f.source, f.where("num_key_value_heads"), f"{kv} KV heads do not divide {heads} heads")
    split = {
        (swa[2] != swa_v) if LayerKind.SLIDING in kinds else None,
        (full[2] != full_v) if LayerKind.FULL in kinds else None,
    }
    split.discard(None)
    if len(split) > 1:
        raise InputError(
            f.source,
            f.where("v_head_dim"),
            "some layers with separate K and V head sizes (a DiffKV backend) and some without: not modelled",
        )
    moe = f.get("moe_layer_freq")
    has_moe = isinstance(moe, list) and any(moe)
    base, base_v = (swa, swa_v) if LayerKind.SLIDING in kinds else (full, full_v)
    return geometry(
        f,
        architecture,
        "mimo_v2",
        kinds,
        heads=(f.integer("num_attention_heads"), base[1], base[2]),
        head_dim_v=base_v,
        sliding_window=window,
        full_attention=AttentionGeometry(full[1], full[2], full_v) if LayerKind.SLIDING in kinds else None,
        extra_attention_heads=tuple(sorted({swa[0]} - {f.integer("num_attention_heads")})),
        attention_sinks=LayerKind.SLIDING in kinds and f.boolean("add_swa_attention_sink_bias"),
        family_extra=MiMoV2Extra(diffkv=split == {True}),
        moe_experts=("n_routed_experts", f.integer("n_routed_experts")) if has_moe else None,
        num_mtp_layers=f.opt_int("num_nextn_predict_layers") or 0,
        mtp_kind=None,
    )


def verify(model: ModelGeometry, tensor_parallel_size: int) -> None:
    """The MoE block's refusal of more tensor-parallel ranks than routed experts.

    :raises InputError: naming the experts key and vLLM's message.
    """
    if model.parallel.moe_experts is not None and tensor_parallel_size > model.parallel.moe_experts[1]:
        key, n = model.parallel.moe_experts
        raise InputError(
            model.source,
            key,
            f"Tensor parallel size {tensor_parallel_size} is greater than the number of experts {n}.",
        )


def for_release(model: ModelGeometry, rules: VersionRules) -> ModelGeometry:
    """Releases whose ``mimo_v2.py`` builds the attention layers with the cache config (switch
    ``mimo_v2_cache_config``: 0.32+)."""
    extra = extra_of(model, MiMoV2Extra)
    if rules.mimo_v2_cache_config and extra is not None:
        return replace(model, family_extra=replace(extra, cache_config=True))
    return model


def kv_cache_dtype(model: ModelGeometry, requested: str) -> str:
    """Built without the cache config (``mimo_v2.py`` before 0.32), the attention layers' KV cache
    dtype is ``auto`` (the model dtype) whatever ``--kv-cache-dtype`` says, and they select their
    backend with it; built with it (:func:`for_release`), ``requested``."""
    extra = extra_of(model, MiMoV2Extra)
    return requested if extra is not None and extra.cache_config else "auto"


def attention_backend(model: ModelGeometry, requested: str | None) -> AttentionBackend | None:
    """The model hands its layers a DiffKV backend (``mimo_v2.py``): the requested one when it is
    a DiffKV backend, else ``FLASH_ATTN_DIFFKV`` (FlashAttention 3 on SM90)."""
    extra = extra_of(model, MiMoV2Extra)
    if extra is None or not extra.diffkv:
        return None
    return DIFFKV_BACKENDS[requested if requested in DIFFKV_BACKENDS else "FLASH_ATTN_DIFFKV"]

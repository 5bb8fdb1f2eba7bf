"""Falcon (``FalconForCausalLM``, ``RWForCausalLM``): attention built without the cache config.

Mirrors ``vllm/model_executor/models/falcon.py`` (``FalconAttention``) with transformers'
``FalconConfig`` (``model_type`` ``falcon``) and vLLM 0.28.0's ``RWConfig`` (``RefinedWeb``,
``RefinedWebModel``; ``n_layer``, ``n_head``, ``n_head_kv``, ``n_embed``; a hidden size of 8192
means the new decoder architecture):

* KV heads: ``num_kv_heads`` with ``new_decoder_architecture``, else one with ``multi_query``,
  else one per attention head; head size ``hidden_size // num_attention_heads``;
* the rotary layers' ``Attention`` is built without the cache config, so its KV cache keeps the
  model dtype whatever ``--kv-cache-dtype`` says and no sliding window applies
  (``cache_config_ignored``);
* ALiBi layers compute their slopes as tensors, which vLLM cannot do on the meta device:
  refused, as the harness cannot verify them.
"""

from __future__ import annotations

from typing import Any

from dryboot.errors import InputError, missing_field
from dryboot.vllm.config.hf import ConfigFields, LayerKind, ModelGeometry
from dryboot.vllm.models.common import MAX_LAYERS, geometry

_FALCON = {
    "num_hidden_layers": 32,
    "num_attention_heads": 71,
    "hidden_size": 4544,
    "max_position_embeddings": 2048,
    "alibi": False,
    "new_decoder_architecture": False,
    "multi_query": True,
}
_RW = {
    "n_layer": 2,
    "n_head": 8,
    "hidden_size": 64,
    "alibi": False,
    "new_decoder_architecture": False,
    "multi_query": True,
}


def _rw(f: ConfigFields) -> bool:
    return str(f.get("model_type") or "") in ("RefinedWeb", "RefinedWebModel")


def defaults(f: ConfigFields) -> dict[str, Any]:
    return dict(_RW if _rw(f) else _FALCON)


def read(f: ConfigFields, architecture: str) -> ModelGeometry:
    rw = _rw(f)
    for key in ("rope_parameters", "tie_word_embeddings") if rw else ():
        # RWConfig sets neither, and vLLM's Falcon model reads both
        if not f.given(key):
            raise InputError(
                f.source,
                f.where(key),
                missing_field(f"RWConfig has no {key}: AttributeError in vLLM's Falcon model"),
            )
    if f.boolean("alibi"):
        raise InputError(
            f.source,
            f.where("alibi"),
            "Falcon's ALiBi slopes are computed as tensors on the model's device: vLLM cannot build it on the "
            "meta device, so it is not verified",
        )
    n = f.integer("n_layer" if rw else "num_hidden_layers", maximum=MAX_LAYERS)
    heads = f.integer("n_head" if rw else "num_attention_heads")
    hidden = f.integer("n_embed") if f.given("n_embed") else f.integer("hidden_size")
    if hidden % heads:
        raise InputError(
            f.source,
            f.where("hidden_size"),
            f"{hidden} is not a multiple of the {heads} attention heads (vLLM asserts)",
        )
    new_arch = f.boolean("new_decoder_architecture") or (rw and hidden == 8192)
    if new_arch:
        kv_key = "n_head_kv" if rw else "num_kv_heads"
        kv = f.integer(kv_key) if f.given(kv_key) else (1 if rw else heads)
    elif f.boolean("multi_query", default=True):
        kv = 1
    else:
        kv = heads
    if heads % kv:
        raise InputError(f.source, f.where("num_kv_heads"), f"{kv} KV heads do not divide {heads} attention heads")
    if f.given("quantization_config"):
        raise InputError(
            f.source,
            f.where("quantization_config"),
            "a quantized Falcon checkpoint is not modelled (its attention is built without the cache config)",
        )
    return geometry(
        f,
        architecture,
        "falcon",
        (LayerKind.FULL,) * n,
        heads=(heads, kv, hidden // heads),
        hidden_size=hidden,
        layer_prefix="transformer.h",
        attention_suffix="self_attention.attn",
    )


def kv_cache_dtype(model: ModelGeometry, requested: str) -> str:
    """The attention layers are built without the cache config (``falcon.py``): their KV cache dtype is
    ``auto`` (the model dtype) whatever ``--kv-cache-dtype`` says, and they select their backend
    with it."""
    return "auto"

"""EAGLE-1 heads of the Llama layout (``llama_eagle.py``, ``EagleLlamaForCausalLM``: what vLLM
builds for ``--speculative-config`` method ``eagle`` with a ``LlamaForCausalLM`` head config), per
rank of the last pipeline stage, in the target's dtype:

* ``num_hidden_layers`` Llama decoder layers (``qkv_proj`` ``[(heads / TP + 2 kv_r) x head_dim,
  H]``, ``o_proj``, ``gate_up_proj``, ``down_proj``, the attention layer's six float32 scalars),
  the first without its ``input_layernorm`` (EAGLE's layout), the others with it, each with its
  ``post_attention_layernorm``;
* ``fc`` ``[H, 2 H]`` (replicated, no bias); no final norm;
* a rotary table over ``max(max_position_embeddings, the target's max_model_len)``, unless
  ``get_rope``'s cache hands back the target's own;
* the embedding, own or shared with the target's as for EAGLE-3 (``llama_eagle3.py``); no LM head
  of its own (the target's computes the logits).

Refused by name: another head architecture, a quantized head, biases.
"""

from __future__ import annotations

from collections.abc import Collection, Mapping
from typing import Any

from dryboot.errors import InputError
from dryboot.vllm.model_executor.model_loader import weights as W
from dryboot.vllm.model_executor.models.llama_eagle3 import (
    DRAFTER_WALKS,
    DrafterWeights,
    _attention_mlp_layer,
    _head_dim,
    _opt,
    _positive,
    _rope_key,
    _with_embedding_and_head,
)


def eagle_weights(
    target_config: Mapping[str, Any],
    draft_config: Mapping[str, Any],
    par: W.Parallel,
    draft_tensors: Collection[str] | None = None,
    *,
    max_model_len: int,
    dtype: str = "auto",
) -> DrafterWeights:
    """An EAGLE-1 head's own weights (module docstring; :func:`.llama_eagle3.drafter_weights`'s
    arguments).

    :raises InputError: a head other than ``LlamaForCausalLM``, a quantized head, biases."""
    archs = list(draft_config.get("architectures") or [])
    if archs[:1] not in (["LlamaForCausalLM"], ["EagleLlamaForCausalLM"]):
        raise InputError(
            "--speculative-config",
            "method",
            f"the drafter's weights (eagle, {archs[0] if archs else 'no architectures'}) are not modelled "
            "(EAGLE-1 heads of the Llama layout are)",
        )
    if "quantization_config" in draft_config:
        raise InputError(
            "--speculative-config", "quantization_config", "a quantized drafter's weights are not modelled"
        )
    for key in ("attention_bias", "mlp_bias"):
        if draft_config.get(key):
            raise InputError("--speculative-config", key, "this EAGLE-1 head's layout is not modelled")
    ab = W.model_dtype_bytes(target_config, dtype)
    h = W._int(draft_config, "hidden_size")
    heads = _positive(draft_config, "num_attention_heads")
    kv = _opt(draft_config, "num_key_value_heads", heads)
    hd = _head_dim(draft_config)
    inter = W._int(draft_config, "intermediate_size")
    vocab = W._int(draft_config, "vocab_size")
    core = W.RankWeights(source="config")
    for i in range(W._int(draft_config, "num_hidden_layers")):
        _attention_mlp_layer(
            core,
            h=h,
            qkv_in=h,
            heads=heads,
            kv=kv,
            hd=hd,
            inter=inter,
            tp=par.tp,
            ab=ab,
            qk_norm=False,
            norms=1 if i == 0 else 2,
        )
    core.add("fc", h * 2 * h * ab)
    positions = max(_opt(draft_config, "max_position_embeddings", 0), max_model_len)
    target = target_config.get("text_config") or target_config
    if _rope_key(draft_config, positions, hd) != _rope_key(
        target, _opt(target, "max_position_embeddings", 0), _head_dim(target)
    ):
        core.add("rotary", W._rotary_bytes({**draft_config, "max_position_embeddings": positions}, hd, ab), buffer=True)
    return _with_embedding_and_head(
        core, target, par, draft_tensors, h=h, vocab=vocab, draft_vocab=vocab, ab=ab, has_head=False
    )


DRAFTER_WALKS["eagle"] = eagle_weights

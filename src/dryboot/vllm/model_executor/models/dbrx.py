"""DBRX (``dbrx.py``, ``DbrxForCausalLM``): per block two LayerNorms without bias (``norm_1``,
``norm_2``), a fused ``Wqkv`` and ``out_proj``, a MoE block on every layer (router ``[E, H]``,
``moe_num_experts`` experts of ``ffn_hidden_size``), the final norm and an untied head, the
embedding, final norm and head on every pipeline stage. Its config nests the sizes: ``d_model``,
``n_layers``, ``n_heads``, ``attn_config.kv_n_heads``, ``ffn_config``, ``max_seq_len``. On vLLM
0.33.0 where FlashInfer serves its attention (SM 10.x, an fp8 KV cache on SM 8.x / 12.x): FlashInfer's
multi-CTA KV counter, sized by the rank's ``n_heads / TP`` query heads (``weights.flashinfer_counter_layers``)."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from dryboot.errors import InputError
from dryboot.vllm.model_executor.model_loader import weights as W
from dryboot.vllm.model_executor.models.compose import Family, Layout, WalkArgs, decoder


def _prepare(config: Mapping[str, Any]) -> Mapping[str, Any]:
    attn, ffn = config.get("attn_config") or {}, config.get("ffn_config") or {}
    if not isinstance(attn, Mapping) or not isinstance(ffn, Mapping):
        raise InputError("config.json", "attn_config", "attn_config and ffn_config must be objects")
    out = dict(config)
    out.update(
        hidden_size=config.get("d_model"),
        num_hidden_layers=config.get("n_layers"),
        num_attention_heads=config.get("n_heads"),
        num_key_value_heads=attn.get("kv_n_heads", 1),
        max_position_embeddings=config.get("max_seq_len", 2048),
        num_experts=ffn.get("moe_num_experts", 4),
        moe_intermediate_size=ffn.get("ffn_hidden_size", 3584),
        tie_word_embeddings=bool(config.get("tie_word_embeddings", False)),
    )
    return out


def _every_layer(config: Mapping[str, Any], li: int) -> bool:
    return True


_DECODER = decoder(Layout(moe=_every_layer, mlp=None, every_stage=True), _prepare)


def _walk(config: Mapping[str, Any], par: W.Parallel, args: WalkArgs) -> W.RankWeights:
    """The decoder's rank, then the FlashInfer counter of its stage's attention layers (``DbrxAttention``:
    ``n_heads / TP`` query heads of ``d_model / n_heads``)."""
    rank = _DECODER.walk(config, par, args)
    prepared = _prepare(config)
    heads, hidden = W._int(prepared, "num_attention_heads"), W._int(prepared, "hidden_size")
    layers = W.pp_layers(W._int(prepared, "num_hidden_layers"), par)
    W.flashinfer_counter_layers(
        rank, par, args.max_num_batched_tokens, [(heads // par.tp, hidden // heads, False)] * len(layers)
    )
    return rank


FAMILIES: dict[str, Family] = {"DbrxForCausalLM": Family(_walk)}

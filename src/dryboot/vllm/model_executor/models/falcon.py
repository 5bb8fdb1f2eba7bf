"""Falcon (``falcon.py``, ``FalconForCausalLM``, also serving ``RWForCausalLM``): one fused
``query_key_value`` (KV heads: ``num_kv_heads`` under ``new_decoder_architecture``, one under
``multi_query``, else every head) and ``dense``, a non-gated MLP (``dense_h_to_4h`` ``[F / TP, H]``,
``dense_4h_to_h``; ``F = ffn_hidden_size``, ``4 H`` by default), biases on all of them under
``bias``; LayerNorms with biases: ``ln_attn`` and ``ln_mlp`` under ``new_decoder_architecture``,
else ``input_layernorm`` (and ``post_attention_layernorm`` without ``parallel_attn``); ``ln_f``; the
head tied unless the config unties it (embedding, ``ln_f`` and head on every pipeline stage); one
rotary table unless ``alibi`` (refused by name: its slopes are computed on the device). RefinedWeb
configs name the sizes ``n_layer``, ``n_head``, ``n_head_kv`` and hold no
``max_position_embeddings`` (vLLM takes 8192)."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from dryboot.errors import InputError
from dryboot.vllm.model_executor.model_loader import weights as W
from dryboot.vllm.model_executor.models.compose import Family, Layout, WalkArgs, decoder


def _prepare(config: Mapping[str, Any]) -> Mapping[str, Any]:
    out = dict(config)
    for ours, theirs in (("num_hidden_layers", "n_layer"), ("num_attention_heads", "n_head")):
        if ours not in out and theirs in out:
            out[ours] = out[theirs]
    if out.get("alibi"):
        raise InputError("config.json", "alibi", "Falcon's ALiBi layers are not modelled")
    heads = W._int(out, "num_attention_heads")
    if out.get("new_decoder_architecture"):
        kv = out.get("num_kv_heads", out.get("n_head_kv", heads))
    elif out.get("multi_query", True):
        kv = 1
    else:
        kv = heads
    h = W._int(out, "hidden_size")
    out.update(num_key_value_heads=kv, intermediate_size=out.get("ffn_hidden_size") or 4 * h)
    out.setdefault("max_position_embeddings", 2048 if out.get("model_type") == "falcon" else 8192)
    out.setdefault("tie_word_embeddings", True)
    return out


def _layout(norms: int) -> Family:
    return decoder(
        Layout(
            norms=norms,
            norm_bias=True,
            qkv_bias="bias",
            o_bias="bias",
            mlp="plain",
            mlp_bias="bias",
            tied=True,
            every_stage=True,
        ),
        _prepare,
    )


_BY_NORMS = {n: _layout(n) for n in (1, 2)}


def walk(config: Mapping[str, Any], par: W.Parallel, args: WalkArgs) -> W.RankWeights:
    """One rank of one stage (module docstring)."""
    two = bool(config.get("new_decoder_architecture")) or not config.get("parallel_attn", True)
    return _BY_NORMS[2 if two else 1].walk(config, par, args)


FAMILIES: dict[str, Family] = {"FalconForCausalLM": Family(walk), "RWForCausalLM": Family(walk)}

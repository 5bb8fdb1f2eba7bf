"""GPT-2 (``gpt2.py``, ``GPT2LMHeadModel``): the token embedding ``wte`` and a learned position
embedding ``wpe`` ``[n_positions, H]`` (whole on every rank), per layer two LayerNorms with biases,
``c_attn`` (QKV with bias), ``c_proj`` (with bias), a plain MLP ``c_fc`` / ``c_proj`` of ``n_inner``
(``4 H`` when null) with biases, ``ln_f``; the head tied; no rotary table. The config names its
sizes ``n_embd``, ``n_layer``, ``n_head``. The embedding, final norm and head on every pipeline
stage."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from dryboot.vllm.model_executor.model_loader import weights as W
from dryboot.vllm.model_executor.models.compose import Family, Layout, decoder


def gpt_names(config: Mapping[str, Any], positions: str = "n_positions") -> dict[str, Any]:
    """A GPT-style config read into the walk's names: ``n_embd``, ``n_layer``, ``n_head``,
    ``n_inner`` (``4 H`` when null), ``positions`` as ``max_position_embeddings``."""
    out = dict(config)
    for ours, theirs in (
        ("hidden_size", "n_embd"),
        ("num_hidden_layers", "n_layer"),
        ("num_attention_heads", "n_head"),
    ):
        if ours not in out and theirs in out:
            out[ours] = out[theirs]
    out.setdefault("intermediate_size", out.get("n_inner") or 4 * W._int(out, "hidden_size"))
    if out.get("intermediate_size") is None:
        out["intermediate_size"] = 4 * W._int(out, "hidden_size")
    out.setdefault("max_position_embeddings", out.get(positions, 1024))
    return out


def _positions(config: Mapping[str, Any]) -> int:
    return W._int(config, "max_position_embeddings")


FAMILIES: dict[str, Family] = {
    "GPT2LMHeadModel": decoder(
        Layout(
            every_stage=True,
            qkv_bias=True,
            o_bias=True,
            norm_bias=True,
            mlp="plain",
            mlp_bias=True,
            tied=True,
            rope=None,
            learned_positions=_positions,
        ),
        gpt_names,
    ),
}

"""OPT (``opt.py``, ``OPTForCausalLM``): the token embedding and a learned position embedding
``[max_position_embeddings + 2, H]`` (whole), per layer two LayerNorms with biases
(``self_attn_layer_norm``, ``final_layer_norm``), ``qkv_proj`` and ``out_proj`` with biases
(``enable_bias``), a plain MLP ``fc1`` / ``fc2`` of ``ffn_dim`` with biases, the decoder's final
LayerNorm, the head tied. ``word_embed_proj_dim`` other than the hidden size (``project_in`` /
``project_out``) and ``do_layer_norm_before: false`` are refused by name. The embedding, final norm
and head on every pipeline stage."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from dryboot.errors import InputError
from dryboot.vllm.model_executor.model_loader import weights as W
from dryboot.vllm.model_executor.models.compose import Family, Layout, decoder


def _prepare(config: Mapping[str, Any]) -> Mapping[str, Any]:
    out = {"tie_word_embeddings": True, "enable_bias": True, "max_position_embeddings": 2048, **config}
    if out.get("word_embed_proj_dim", out.get("hidden_size")) != out.get("hidden_size"):
        raise InputError("config.json", "word_embed_proj_dim", "OPT's project_in / project_out are not modelled")
    if not out.get("do_layer_norm_before", True):
        raise InputError("config.json", "do_layer_norm_before", "OPT without the final LayerNorm is not modelled")
    out["intermediate_size"] = out.get("ffn_dim", 3072)
    return out


def _positions(config: Mapping[str, Any]) -> int:
    return W._int(config, "max_position_embeddings") + 2  # OPTLearnedPositionalEmbedding's offset


FAMILIES: dict[str, Family] = {
    "OPTForCausalLM": decoder(
        Layout(
            every_stage=True,
            norm_bias=True,
            qkv_bias="enable_bias",
            o_bias="enable_bias",
            mlp="plain",
            mlp_bias="enable_bias",
            tied=True,
            rope=None,
            learned_positions=_positions,
        ),
        _prepare,
    ),
}

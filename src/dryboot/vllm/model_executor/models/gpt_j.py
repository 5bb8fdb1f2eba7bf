"""GPT-J (``gpt_j.py``, ``GPTJForCausalLM``): one LayerNorm with bias per layer (attention and MLP in
parallel), ``qkv_proj`` and ``out_proj`` without biases, a plain MLP ``fc_in`` / ``fc_out`` of
``n_inner`` (``4 H``) with biases, ``ln_f``, an untied LM head with a bias; the rotary table
``[n_positions, rotary_dim]``. The embedding, final norm and head on every pipeline stage."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from dryboot.vllm.model_executor.model_loader import weights as W
from dryboot.vllm.model_executor.models.compose import Family, Layout, decoder
from dryboot.vllm.model_executor.models.gpt2 import gpt_names


def _prepare(config: Mapping[str, Any]) -> Mapping[str, Any]:
    out = {"tie_word_embeddings": False, **gpt_names(config)}
    hd = W._int(out, "hidden_size") // W._int(out, "num_attention_heads")
    out["partial_rotary_factor"] = W._int(out, "rotary_dim", hd) / hd if out.get("rotary_dim") else 1.0
    return out


FAMILIES: dict[str, Family] = {
    "GPTJForCausalLM": decoder(
        Layout(every_stage=True, norms=1, norm_bias=True, mlp="plain", mlp_bias=True, head_bias=True), _prepare
    ),
}

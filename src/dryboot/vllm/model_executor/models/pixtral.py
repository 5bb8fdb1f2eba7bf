"""Pixtral's vision tower in its Hugging Face layout (``pixtral.py``, ``PixtralHFVisionModel``) as
the Mistral3 and LLaVA families build it, on one TP rank, in the model dtype: the Conv2d
``patch_conv`` ``[D, C, P, P]`` (no bias) and the ``ln_pre`` RMSNorm ``[D]``; per encoder layer
built the ``attention_norm`` and ``ffn_norm`` RMSNorms ``[D]``, ``qkv_proj``
(``QKVParallelLinear`` ``[3 D / TP, D]``), ``o_proj`` (``RowParallelLinear`` ``[D, D / TP]``),
the gated ``gate_up_proj`` ``[2 I / TP, D]`` and ``down_proj`` ``[D, I / TP]``, none with a bias;
no post norm (vLLM refuses ``require_post_norm=True``). Its 2-D rotary embedding
(transformers' ``PixtralRotaryEmbedding``) holds no tensor vLLM's recorder sees on the releases
checked (0.27.1, 0.28.0, 0.30.0, 0.33.0)."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from dryboot.vllm.model_executor.model_loader import weights as W
from dryboot.vllm.model_executor.models.towers import tensors, vit_block

#: ``PixtralVisionConfig``'s defaults (transformers 5.x) for what a ``vision_config`` leaves out
DEFAULTS: dict[str, Any] = {
    "hidden_size": 1024,
    "intermediate_size": 4096,
    "num_hidden_layers": 24,
    "num_attention_heads": 16,
    "num_channels": 3,
    "patch_size": 16,
}


def vision_tower(v: Mapping[str, Any], tp: int, ab: int, *, layers: int) -> W.RankWeights:
    """One rank's Pixtral tower of ``layers`` encoder layers (module docstring).

    :raises InputError: heads or the intermediate size TP does not divide (vLLM's parallel
        linears refuse them)."""
    v = {**DEFAULTS, **v}
    d, inter = W._int(v, "hidden_size"), W._int(v, "intermediate_size")
    W._divide(W._int(v, "num_attention_heads"), tp, "the vision tower's num_attention_heads")
    p, c = W._int(v, "patch_size"), W._int(v, "num_channels")
    block = vit_block(d, inter, tp, bias=False, norm_bias=False, gated=True, whose="the vision tower's")
    return tensors("vision", [d * c * p * p, d, *block * layers], ab)

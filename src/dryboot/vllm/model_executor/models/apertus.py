"""Apertus (``apertus.py``, ``ApertusForCausalLM``; vLLM 0.27.1-0.33.0): Llama's fused attention
with per-head q/k RMSNorms (``[head_dim]`` each), two RMSNorms per layer, a non-gated MLP
(``up_proj`` ``[I / TP, H]``, ``down_proj`` ``[H, I / TP]``) whose activation is ``XIELU``.

Each layer's ``XIELU`` holds two parameters (``alpha_p``, ``alpha_n``: ``[1]``) and two buffers
(``beta``, ``eps``: scalars), all bfloat16 whatever the model dtype (``XIELU()`` is built with its
default ``dtype=torch.bfloat16``): 4 bytes of parameters and 4 of buffers per layer, each tensor
its own 512-byte block.

Biases as ``ApertusDecoderLayer`` reads them: ``attention_bias`` (or ``bias``) puts a bias on
``qkv_proj`` and ``o_proj``; a ``qkv_bias`` key, when the config has one, decides ``qkv_proj``'s
alone; ``mlp_bias`` on both MLP projections. Absent keys take ``ApertusConfig``'s defaults.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from dryboot.vllm.model_executor.model_loader import weights as W
from dryboot.vllm.model_executor.models.compose import Family, Layout, WalkArgs, decoder, merged

#: ``ApertusConfig``'s defaults for the keys the walk reads (transformers 5.x)
_DEFAULTS: dict[str, Any] = {
    "vocab_size": 131072,
    "hidden_size": 4096,
    "intermediate_size": 14336,
    "num_hidden_layers": 32,
    "num_attention_heads": 32,
    "max_position_embeddings": 65536,
    "tie_word_embeddings": False,
}
#: XIELU's tensors per layer: (bytes, is a buffer), bfloat16
_XIELU = ((2, False), (2, False), (2, True), (2, True))


def _prepare(config: Mapping[str, Any]) -> Mapping[str, Any]:
    """``config`` with ``ApertusConfig``'s defaults and the biases ``ApertusDecoderLayer``
    resolves: ``attention_bias`` (``o_proj``'s) and ``qkv_bias`` (``qkv_proj``'s)."""
    out = {**_DEFAULTS, **config}
    out_bias = bool(out.get("attention_bias") or out.get("bias"))
    return {**out, "attention_bias": out_bias, "qkv_bias": bool(out.get("qkv_bias", out_bias))}


_TEXT = decoder(
    Layout(qkv_bias="qkv_bias", o_bias="attention_bias", qk_norm="head", mlp="plain", mlp_bias="mlp_bias"),
    prepare=_prepare,
)


def _walk(config: Mapping[str, Any], par: W.Parallel, args: WalkArgs) -> W.RankWeights:
    """The decoder's tensors (:data:`_TEXT`), then each layer's ``XIELU`` tensors on this stage."""
    w = _TEXT.walk(config, par, args)
    xielu = W.RankWeights()
    for _ in W.pp_layers(W._int(_prepare(config), "num_hidden_layers"), par):
        for nbytes, buffer in _XIELU:
            xielu.add("mlp", nbytes, buffer=buffer)
    return merged(w, xielu)


FAMILIES: dict[str, Family] = {"ApertusForCausalLM": Family(_walk)}

"""LFM2 (``lfm2.py``, ``Lfm2ForCausalLM``): per layer two RMSNorms (``operator_norm``, ``ffn_norm``),
then attention on the layers of ``full_attn_idxs`` (``qkv_proj``, ``out_proj``, per-head q/k
norms; one rotary table for the stage's attention layers) or a short convolution elsewhere
(``layers/mamba/short_conv.py``: ``in_proj`` ``[3 C / TP, H]``, ``conv`` ``[C / TP, 1, L]``,
``out_proj`` ``[H, C / TP]``; ``C = conv_dim``, ``L = conv_L_cache``), and a gated MLP ``w13``
``[2 F / TP, H]``, ``w2`` ``[H, F / TP]`` whose width ``F`` is ``block_ff_dim``, under
``block_auto_adjust_ff_dim`` (true by default) two thirds of it times
``block_ffn_dim_multiplier``, rounded up to ``block_multiple_of``; the embedding on every
stage, the final ``embedding_norm`` on the last, the head tied unless the config unties it."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from dryboot.errors import InputError
from dryboot.vllm.model_executor.model_loader import weights as W
from dryboot.vllm.model_executor.models.compose import Family, WalkArgs, unquantized

#: ``Lfm2Config``'s defaults (transformers 5.x) for what a config leaves out
DEFAULTS: dict[str, Any] = {
    "tie_word_embeddings": True,
    "block_auto_adjust_ff_dim": True,
    "block_ffn_dim_multiplier": 1.0,
    "block_multiple_of": 256,
    "conv_L_cache": 3,
    "conv_bias": False,
}


def ff_dim(config: Mapping[str, Any]) -> int:
    """The MLP's width (module docstring)."""
    ff = W._int(config, "block_ff_dim")
    if config.get("block_auto_adjust_ff_dim"):
        ff = int(2 * ff / 3)
        ff = int(float(config.get("block_ffn_dim_multiplier") or 1.0) * ff)
        m = W._int(config, "block_multiple_of")
        ff = m * ((ff + m - 1) // m)
    return ff


def operator(
    w: W._Walk, attention: bool, h: int, nq_r: int, nkv_r: int, hd: int, c_r: int, cache: int, ab: int
) -> None:
    """One LFM2 layer's two norms and operator on the rank: attention (``qkv_proj``, ``out_proj``,
    per-head q/k norms, the attention scale buffers) or the short convolution (``in_proj``
    ``[3 C / TP, H]``, ``conv`` ``[C / TP, 1, L]``, ``out_proj`` ``[H, C / TP]``)."""
    if attention:
        sizes = [h, h, (nq_r + 2 * nkv_r) * hd * h, h * nq_r * hd, hd, hd]
        w.own("attention scales", 16, buffer=True)
        w.ref.allocated_bytes += w.attention_blocks * W.ALLOC_ROUND
    else:
        sizes = [h, h, 3 * c_r * h, c_r * cache, h * c_r]
    for n in sizes:
        w.own("weight", n * ab)


def walk(config: Mapping[str, Any], par: W.Parallel, args: WalkArgs) -> W.RankWeights:
    """One rank of one stage (module docstring).

    :raises InputError: a quantization method, checkpoint headers, sizes TP does not divide."""
    config, ab = unquantized(config, args, DEFAULTS)
    if config.get("conv_bias"):
        raise InputError("config.json", "conv_bias", "LFM2's short-convolution biases are not modelled")
    tp = par.tp
    h = W._int(config, "hidden_size")
    nq = W._int(config, "num_attention_heads")
    nkv = W._int(config, "num_key_value_heads", nq)
    hd = h // nq
    nq_r = W._divide(nq, tp, "num_attention_heads")
    nkv_r = W._divide(nkv, tp, "num_key_value_heads") if nkv >= tp else 1
    c_r = W._divide(W._int(config, "conv_dim", h), tp, "conv_dim")
    f_r = W._divide(ff_dim(config), tp, "the MLP width")
    vocab_r = W.padded_vocab_per_rank(W._int(config, "vocab_size"), tp)
    attention = set(config.get("full_attn_idxs") or [])
    w = W._Walk(None, par.vllm_version)
    w.own("embedding", vocab_r * h * ab)  # on every stage
    if par.pp_rank == par.pp - 1:
        w.own("norm", h * ab)
        if not config.get("tie_word_embeddings"):
            w.own("lm_head", vocab_r * h * ab)
    layers = W.pp_layers(W._int(config, "num_hidden_layers"), par)
    for li in layers:
        for n in [2 * f_r * h, h * f_r]:
            w.own("weight", n * ab)
        operator(w, li in attention, h, nq_r, nkv_r, hd, c_r, W._int(config, "conv_L_cache"), ab)
    if any(li in attention for li in layers):
        w.own("rotary", W._rotary_bytes(config, hd, ab), buffer=True)
    return w.result()


FAMILIES: dict[str, Family] = {"Lfm2ForCausalLM": Family(walk)}

"""Jamba (``jamba.py``, ``JambaForCausalLM``): the embedding, per layer two RMSNorms
(``input_layernorm``, ``pre_ff_layernorm``), then

* attention every ``attn_layer_period`` layers from ``attn_layer_offset`` (``qkv_proj``,
  ``o_proj``, no rotary table: Jamba has no positional encoding), else a Mamba mixer
  (``mamba.mamba_mixer``: ``I = mamba_expand x H``, state ``mamba_d_state``, conv
  ``mamba_d_conv``, ``mamba_dt_rank``) with its ``dt`` / ``B`` / ``C`` RMSNorm weights
  (``[dt_rank]``, ``[N]``, ``[N]``);
* a ``FusedMoE`` block every ``expert_layer_period`` layers from ``expert_layer_offset`` (router
  ``[E, H]``, ``num_experts`` experts of ``intermediate_size``), else a gated MLP;

the final norm and the LM head (``JambaConfig`` unties it by default). The sequence-
classification head is not a generation model.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from dryboot.vllm.model_executor.model_loader import weights as W
from dryboot.vllm.model_executor.models.compose import Family, WalkArgs, unquantized
from dryboot.vllm.model_executor.models.mamba import dt_rank, mamba_mixer

#: ``JambaConfig``'s defaults (transformers 5.x) for what a config leaves out
DEFAULTS: dict[str, Any] = {
    "tie_word_embeddings": False,
    "num_experts": 16,
    "expert_layer_period": 2,
    "expert_layer_offset": 1,
    "attn_layer_period": 8,
    "attn_layer_offset": 4,
    "mamba_d_state": 16,
    "mamba_d_conv": 4,
    "mamba_expand": 2,
    "mamba_dt_rank": "auto",
    "mamba_conv_bias": True,
    "mamba_proj_bias": False,
}


def walk(config: Mapping[str, Any], par: W.Parallel, args: WalkArgs) -> W.RankWeights:
    """One rank of one stage (module docstring): the embedding, the final norm and the head on
    every stage (no ``PPMissingLayer`` in ``jamba.py``).

    :raises InputError: a quantization method, checkpoint headers, sizes TP does not divide."""
    config, ab = unquantized(config, args, DEFAULTS)
    tp = par.tp
    h = W._int(config, "hidden_size")
    nq = W._int(config, "num_attention_heads")
    nkv = W._int(config, "num_key_value_heads", nq)
    hd = h // nq
    vocab_r = W.padded_vocab_per_rank(W._int(config, "vocab_size"), tp)
    w = W._Walk(None, par.vllm_version)
    w.own("embedding", vocab_r * h * ab)  # embedding, final norm and head on every stage
    w.own("norm", h * ab)
    if not config.get("tie_word_embeddings"):
        w.own("lm_head", vocab_r * h * ab)
    e = W._int(config, "num_experts")
    inter = W._int(config, "intermediate_size")
    n, rank = W._int(config, "mamba_d_state"), dt_rank(config, "mamba_dt_rank", h)
    for li in W.pp_layers(W._int(config, "num_hidden_layers"), par):
        w.own("norm", h * ab)
        w.own("norm", h * ab)
        if li % W._int(config, "attn_layer_period") == W._int(config, "attn_layer_offset"):
            nq_r = W._divide(nq, tp, "num_attention_heads")
            nkv_r = W._divide(nkv, tp, "num_key_value_heads") if nkv >= tp else 1
            w.own("attention", (nq_r + 2 * nkv_r) * hd * h * ab)
            w.own("attention", h * nq_r * hd * ab)
            w.own("attention scales", 16, buffer=True)
            w.ref.allocated_bytes += w.attention_blocks * W.ALLOC_ROUND
        else:
            mamba_mixer(
                w,
                h,
                W._int(config, "mamba_expand") * h,
                n,
                W._int(config, "mamba_d_conv"),
                rank,
                tp,
                ab,
                bias=bool(config.get("mamba_proj_bias")),
                conv_bias=bool(config.get("mamba_conv_bias")),
            )
            for count in (rank, n, n):  # dt_layernorm, b_layernorm, c_layernorm
                w.own("norm", count * ab)
        if e > 1 and li % W._int(config, "expert_layer_period") == W._int(config, "expert_layer_offset"):
            w.own("router", e * h * ab)
            w.experts(e, h, inter, par, ab, "the experts' intermediate size")
        else:
            i_r = W._divide(inter, tp, "intermediate_size")
            w.own("mlp", 2 * i_r * h * ab)
            w.own("mlp", h * i_r * ab)
    return w.result()


FAMILIES: dict[str, Family] = {"JambaForCausalLM": Family(walk)}

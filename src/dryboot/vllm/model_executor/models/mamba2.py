"""Mamba-2 (``mamba2.py``, ``Mamba2ForCausalLM``): the embedding, per layer one RMSNorm and a
Mamba2 mixer (``layers/mamba/mamba_mixer2.py``, the walk's :func:`weights._mamba2_mixer`:
``in_proj`` ``[(2 I + 2 G N + Hm) / TP, H]``, ``conv1d`` + bias, ``A`` float32, ``D``,
``dt_bias``, the gated norm, ``out_proj``; a single group replicated per rank), the final norm and
the LM head (untied unless the config ties it, ``Mamba2Config``'s default). ``I = expand x H``.
No pipeline parallelism (the class lacks ``SupportsPP``: vLLM refuses it)."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from dryboot.vllm.model_executor.model_loader import weights as W
from dryboot.vllm.model_executor.models.compose import Family, WalkArgs, unquantized, without_pp

#: ``Mamba2Config``'s defaults (transformers 5.x) for what a config leaves out
DEFAULTS: dict[str, Any] = {
    "expand": 2,
    "n_groups": 8,
    "state_size": 128,
    "conv_kernel": 4,
    "use_bias": False,
    "use_conv_bias": True,
    "tie_word_embeddings": False,
}


def walk(config: Mapping[str, Any], par: W.Parallel, args: WalkArgs) -> W.RankWeights:
    """One rank of one stage (module docstring).

    :raises InputError: a quantization method, checkpoint headers, heads or groups TP does not
        divide."""
    config, ab = unquantized(config, args, DEFAULTS)
    tp = par.tp
    h = W._int(config, "hidden_size")
    vocab_r = W.padded_vocab_per_rank(W._int(config, "vocab_size"), tp)
    w = W._Walk(None, par.vllm_version)
    first, last = par.pp_rank == 0, par.pp_rank == par.pp - 1
    tied = bool(config.get("tie_word_embeddings"))
    if first:
        w.own("embedding", vocab_r * h * ab)
    if last:
        w.own("norm", h * ab)
        if not tied or not first:
            w.own("lm_head", vocab_r * h * ab)
    nh = W._int(config, "num_heads")
    for _ in W.pp_layers(W._int(config, "num_hidden_layers"), par):
        w.own("norm", h * ab)
        W._mamba2_mixer(
            w,
            h,
            nh,
            W._int(config, "expand") * h,
            W._int(config, "n_groups"),
            W._int(config, "state_size"),
            W._int(config, "conv_kernel"),
            tp,
            ab,
            bias=bool(config.get("use_bias")),
            conv_bias=bool(config.get("use_conv_bias")),
        )
    return w.result()


FAMILIES: dict[str, Family] = {"Mamba2ForCausalLM": without_pp(Family(walk))}

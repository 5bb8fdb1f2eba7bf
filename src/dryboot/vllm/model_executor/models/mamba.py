"""Mamba (``mamba.py``, ``MambaForCausalLM``, also serving ``FalconMambaForCausalLM``): the
embedding, then per layer one RMSNorm and a Mamba mixer (``layers/mamba/mamba_mixer.py``
``MambaMixer``), the final norm and the LM head (tied to the embedding unless the config unties
it, ``MambaConfig``'s default). The mixer, ``I = expand x H`` wide, state ``N``, ``dt_rank``
(``ceil(H / 16)`` when ``auto``), sharded by TP:

* ``in_proj`` ``[2 I / TP, H]`` (``use_bias``: + bias), ``conv1d`` ``[I / TP, 1, K]`` (+ bias under
  ``use_conv_bias``, true by default);
* ``x_proj`` ``[dt_rank + 2 N, I / TP]`` (row-parallel), ``dt_proj`` ``[I / TP, dt_rank]`` + bias;
* ``A`` ``[I / TP, N]`` float32, ``D`` ``[I / TP]``, ``out_proj`` ``[H, I / TP]``;
* FalconMamba: the scale-less RMSNorms of ``dt``, ``B`` and ``C`` keep their ones as plain
  tensor attributes (allocated, neither parameter nor buffer: one 512-byte block each).

:func:`mamba_mixer` is Jamba's mixer too (``jamba.py``, with ``dt`` / ``B`` / ``C`` RMSNorm
weights as parameters).
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from typing import Any

from dryboot.vllm.model_executor.model_loader import weights as W
from dryboot.vllm.model_executor.models.compose import Family, WalkArgs, unquantized

#: ``MambaConfig``'s defaults (transformers 5.x) for what a config leaves out
DEFAULTS: dict[str, Any] = {
    "expand": 2,
    "state_size": 16,
    "conv_kernel": 4,
    "use_bias": False,
    "use_conv_bias": True,
    "time_step_rank": "auto",
    "tie_word_embeddings": True,
}


def mamba_mixer(
    w: W._Walk, h: int, inter: int, n: int, k: int, dt_rank: int, tp: int, ab: int, *, bias: bool, conv_bias: bool
) -> None:
    """One ``MambaMixer`` on a rank (module docstring).

    :raises InputError: an intermediate size TP does not divide."""
    i_r = W._divide(inter, tp, "the Mamba intermediate size")
    sizes = [2 * i_r * h, *([2 * i_r] if bias else []), i_r * k, *([i_r] if conv_bias else [])]
    sizes += [(dt_rank + 2 * n) * i_r, i_r * dt_rank, i_r, i_r, h * i_r, *([h] if bias else [])]
    for count in sizes:  # in_proj, conv1d, x_proj, dt_proj (+ bias), D, out_proj
        w.own("mamba", count * ab)
    w.own("mamba", 4 * i_r * n)  # A, float32


def dt_rank(config: Mapping[str, Any], key: str, h: int) -> int:
    """``time_step_rank`` / ``mamba_dt_rank``: ``ceil(H / 16)`` when ``auto``."""
    v = config.get(key, "auto")
    return math.ceil(h / 16) if v == "auto" else W._int(config, key)


def walk(config: Mapping[str, Any], par: W.Parallel, args: WalkArgs) -> W.RankWeights:
    """One rank of one stage (module docstring): the embedding and the final norm on every
    stage, an untied head on the last.

    :raises InputError: a quantization method, checkpoint headers, sizes TP does not divide."""
    arch = str(config["architectures"][0])
    config, ab = unquantized(config, args, DEFAULTS)
    tp = par.tp
    h = W._int(config, "hidden_size")
    vocab_r = W.padded_vocab_per_rank(W._int(config, "vocab_size"), tp)
    w = W._Walk(None, par.vllm_version)
    last = par.pp_rank == par.pp - 1
    tied = bool(config.get("tie_word_embeddings"))
    w.own("embedding", vocab_r * h * ab)  # with the final norm, on every stage
    w.own("norm", h * ab)
    if last and not tied:
        w.own("lm_head", vocab_r * h * ab)
    inter = W._int(config, "expand") * h
    n, rank = W._int(config, "state_size"), dt_rank(config, "time_step_rank", h)
    for _ in W.pp_layers(W._int(config, "num_hidden_layers"), par):
        w.own("norm", h * ab)
        mamba_mixer(
            w,
            h,
            inter,
            n,
            W._int(config, "conv_kernel"),
            rank,
            tp,
            ab,
            bias=bool(config.get("use_bias")),
            conv_bias=bool(config.get("use_conv_bias")),
        )
        if arch == "FalconMambaForCausalLM":  # dt, B, C norms' ones: plain tensor attributes
            for count in (rank, n, n):
                w.ref.allocated_bytes += -(-count * ab // W.ALLOC_ROUND) * W.ALLOC_ROUND
    return w.result()


FAMILIES: dict[str, Family] = {"MambaForCausalLM": Family(walk), "FalconMambaForCausalLM": Family(walk)}

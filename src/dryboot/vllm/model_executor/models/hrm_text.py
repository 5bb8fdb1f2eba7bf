"""HRM-Text (``hrm_text.py``, ``HrmTextForCausalLM``): a hierarchical recurrent decoder: the
embedding, a float ``z_L_init`` ``[H]``, two stacks (``L_module``, ``H_module``) of
``num_layers_per_stack`` layers each, the untied head (tied under ``tie_word_embeddings``). A
layer: ``gqkv_proj`` (gate, q, k, v: ``[4 x heads x head_dim / TP, H]``, multi-head only) and
``o_proj`` (biases under ``attention_bias``), a gated MLP (biases under ``mlp_bias``), norms
without weights; one ``Attention`` per recurrence step the stack runs (``H_cycles x L_cycles``
per L layer, ``H_cycles`` per H layer), each with its scale buffers; one rotary table. No
pipeline parallelism (vLLM refuses it)."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from dryboot.errors import InputError
from dryboot.vllm.model_executor.model_loader import weights as W
from dryboot.vllm.model_executor.models.compose import Family, WalkArgs, unquantized, without_pp

DEFAULTS: dict[str, Any] = {"tie_word_embeddings": False, "num_layers_per_stack": 1}


def walk(config: Mapping[str, Any], par: W.Parallel, args: WalkArgs) -> W.RankWeights:
    """One rank (module docstring).

    :raises InputError: a quantization method, checkpoint headers, sizes TP does not divide."""
    config, ab = unquantized(config, args, DEFAULTS)
    tp = par.tp
    h, nq = W._int(config, "hidden_size"), W._int(config, "num_attention_heads")
    if nq == 0:
        raise InputError("config.json", "num_attention_heads", "must be a positive integer")
    hd = config.get("head_dim") or h // nq
    if type(hd) is not int or hd <= 0:
        raise InputError("config.json", "head_dim", f"not a positive integer ({hd!r})")
    nq_r = W._divide(nq, tp, "num_attention_heads")
    i_r = W._divide(W._int(config, "intermediate_size"), tp, "intermediate_size")
    vocab_r = W.padded_vocab_per_rank(W._int(config, "vocab_size"), tp)
    high, low = W._int(config, "H_cycles"), W._int(config, "L_cycles")
    w = W._Walk(None, par.vllm_version)
    w.own("embedding", vocab_r * h * ab)
    w.own("embedding", h * ab)  # z_L_init
    if not config.get("tie_word_embeddings"):
        w.own("lm_head", vocab_r * h * ab)
    per_stack = W._int(config, "num_layers_per_stack")
    ones = -(-h * ab // W.ALLOC_ROUND) * W.ALLOC_ROUND  # a weightless RMSNorm's tensor of ones
    for steps in (high * low, high):  # L_module, H_module
        w.ref.allocated_bytes += ones  # the stack's final norm
        for _ in range(per_stack):
            w.ref.allocated_bytes += 2 * ones
            sizes = [4 * nq_r * hd * h, h * nq_r * hd, 2 * i_r * h, h * i_r]
            if config.get("attention_bias"):
                sizes += [4 * nq_r * hd, h]
            if config.get("mlp_bias"):
                sizes += [2 * i_r, h]
            for n in sizes:
                w.own("weight", n * ab)
            for _ in range(steps):
                w.own("attention scales", 16, buffer=True)
                w.ref.allocated_bytes += w.attention_blocks * W.ALLOC_ROUND
    w.own("rotary", W._rotary_bytes(config, hd, ab), buffer=True)
    return w.result()


FAMILIES: dict[str, Family] = {"HrmTextForCausalLM": without_pp(Family(walk))}

"""Zamba2 (``zamba2.py``, ``Zamba2ForCausalLM``): the embedding (the head tied to it unless the
config unties it), per layer of ``layers_block_type`` a Mamba2 mixer (:func:`weights._mamba2_mixer`,
``intermediate = mamba_expand x H``, ``n_mamba_heads`` heads, ``mamba_ngroups`` groups) with its
RMSNorm; the ``hybrid`` layers also a replicated ``linear`` ``[H, H]``, one ``Attention`` (scale
buffers) and their adapters in the shared block they use (round robin over ``num_mem_blocks``):
``Zamba2LoRA`` pairs (``A`` ``[rank / TP, in]``, ``B`` ``[out / TP, rank]``) for q, k and v
(``in = out = 2 H``, under ``use_shared_attention_adapter``) and for the MLP's ``gate_up_proj``
(``in = H``, ``out = 2 I``). Each of the ``num_mem_blocks`` shared blocks: ``qkv_proj`` ``[3 x
2 H / TP, 2 H]``, ``o_proj`` ``[H, 2 H / TP]``, ``gate_up_proj`` ``[2 I / TP, H]``, ``down_proj``
``[H, I / TP]`` (biases under ``add_bias_linear``), RMSNorms ``[2 H]`` and ``[H]``; one rotary
table ``[max_position_embeddings, 2 H / heads]`` under ``use_mem_rope``. The final norm. No
pipeline parallelism (vLLM refuses it)."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from dryboot.errors import InputError
from dryboot.vllm.model_executor.model_loader import weights as W
from dryboot.vllm.model_executor.models.compose import Family, WalkArgs, unquantized, without_pp

#: ``Zamba2Config``'s defaults (transformers 5.x) the walk reads
DEFAULTS: dict[str, Any] = {
    "max_position_embeddings": 4096,
    "mamba_d_state": 64,
    "mamba_d_conv": 4,
    "mamba_expand": 2,
    "mamba_ngroups": 1,
    "n_mamba_heads": 8,
    "use_conv_bias": True,
    "add_bias_linear": False,
    "num_attention_heads": 32,
    "num_mem_blocks": 1,
    "use_shared_attention_adapter": False,
    "adapter_rank": 128,
    "use_mem_rope": False,
    "tie_word_embeddings": True,
}


def _lora(w: W._Walk, d_in: int, rank: int, d_out: int, tp: int, ab: int) -> None:
    w.own("adapter", W._divide(rank, tp, "adapter_rank") * d_in * ab)
    w.own("adapter", W._divide(d_out, tp, "the adapter's output") * rank * ab)


def walk(config: Mapping[str, Any], par: W.Parallel, args: WalkArgs) -> W.RankWeights:
    """One rank (module docstring).

    :raises InputError: a quantization method, checkpoint headers, a missing ``layers_block_type``,
        sizes TP does not divide."""
    config, ab = unquantized(config, args, DEFAULTS)
    types = config.get("layers_block_type")
    if not isinstance(types, list):
        raise InputError("config.json", "layers_block_type", "a list of layer kinds is needed")
    tp = par.tp
    h, nq = W._int(config, "hidden_size"), W._int(config, "num_attention_heads")
    # Zamba2Config: intermediate_size None (or left out) means 4 x hidden_size
    inter = W._int(config, "intermediate_size") if config.get("intermediate_size") is not None else 4 * h
    att, hd = 2 * h, 2 * h // nq
    bias = bool(config.get("add_bias_linear"))
    rank = W._int(config, "adapter_rank")
    vocab_r = W.padded_vocab_per_rank(W._int(config, "vocab_size"), tp)
    w = W._Walk(None, par.vllm_version)
    w.own("embedding", vocab_r * h * ab)
    if not config.get("tie_word_embeddings"):
        w.own("lm_head", vocab_r * h * ab)
    w.own("norm", h * ab)
    nq_r = W._divide(nq, tp, "num_attention_heads")
    i_r = W._divide(inter, tp, "intermediate_size")
    for _ in range(W._int(config, "num_mem_blocks")):
        sizes = [3 * nq_r * hd * att, h * nq_r * hd, 2 * i_r * h, h * i_r, att, h]
        sizes += [2 * i_r, h] if bias else []
        for n in sizes:
            w.own("shared block", n * ab)
    for kind in types:
        w.own("norm", h * ab)
        W._mamba2_mixer(
            w,
            h,
            W._int(config, "n_mamba_heads"),
            W._int(config, "mamba_expand") * h,
            W._int(config, "mamba_ngroups"),
            W._int(config, "mamba_d_state"),
            W._int(config, "mamba_d_conv"),
            tp,
            ab,
            bias=bias,
            conv_bias=bool(config.get("use_conv_bias")),
        )
        if kind != "hybrid":
            continue
        w.own("linear", h * h * ab)
        if config.get("use_shared_attention_adapter"):
            for _ in range(3):
                _lora(w, att, rank, att, tp, ab)
        _lora(w, h, rank, 2 * inter, tp, ab)
        w.own("attention scales", 16, buffer=True)
        w.ref.allocated_bytes += w.attention_blocks * W.ALLOC_ROUND
    if config.get("use_mem_rope") and W._int(config, "num_mem_blocks"):
        w.own("rotary", W._rotary_bytes(config, hd, ab), buffer=True)
    return w.result()


FAMILIES: dict[str, Family] = {"Zamba2ForCausalLM": without_pp(Family(walk))}

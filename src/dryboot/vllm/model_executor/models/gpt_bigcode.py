"""GPTBigCode (``gpt_bigcode.py``, ``GPTBigCodeForCausalLM``, StarCoder): the token embedding
``wte`` (``[vocab padded / TP, H]``) and a learned position embedding ``wpe`` ``[n_positions, H]``
(whole on every rank), per layer two LayerNorms with biases, ``c_attn`` (QKV with bias; under
``multi_query`` one key/value head, replicated on every rank), ``c_proj`` (row-parallel, with
bias) and a plain MLP ``c_fc`` / ``c_proj`` of ``n_inner`` (``4 H`` when null) with biases,
replicated (whole on every rank), then ``ln_f``; the head tied. A boolean causal mask buffer
``bias`` ``[n_positions, n_positions]`` (one byte per element) on every stage; no rotary table;
attention scale buffers only where the release's Transformers backend builds vLLM's ``Attention``
per layer (0.30+: ``compose.backend_served``). Under pipeline parallelism the embeddings are on the first and
the last stage (the tied head's copy), ``ln_f`` on the last."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from dryboot.vllm.model_executor.model_loader import weights as W
from dryboot.vllm.model_executor.models.compose import Family, WalkArgs, backend_served, unquantized
from dryboot.vllm.model_executor.models.gpt2 import gpt_names

#: ``GPTBigCodeConfig``'s defaults (transformers 5.x) for what a config leaves out
DEFAULTS: dict[str, Any] = {"multi_query": True, "n_positions": 1024}


def walk(config: Mapping[str, Any], par: W.Parallel, args: WalkArgs) -> W.RankWeights:
    """One rank of one stage (module docstring).

    :raises InputError: a quantization method, checkpoint headers, sizes TP does not divide."""
    merged, ab = unquantized(config, args, DEFAULTS)
    c = gpt_names(merged)
    tp = par.tp
    h, nq = W._int(c, "hidden_size"), W._int(c, "num_attention_heads")
    hd = h // nq
    nq_r = W._divide(nq, tp, "n_head")
    kv = hd if c.get("multi_query") else W._divide(h, tp, "n_embd")
    inter = W._int(c, "intermediate_size")
    positions = W._int(c, "max_position_embeddings")
    vocab_r = W.padded_vocab_per_rank(W._int(c, "vocab_size"), tp)
    w = W._Walk(None, par.vllm_version)
    first, last = par.pp_rank == 0, par.pp_rank == par.pp - 1
    if first or last:
        w.own("embedding", vocab_r * h * ab)
        w.own("embedding", positions * h * ab)
    if last:
        w.own("norm", h * ab)
        w.own("norm", h * ab)
    for _ in W.pp_layers(W._int(c, "num_hidden_layers"), par):
        qkv = nq_r * hd + 2 * kv
        for n in (h, h, qkv * h, qkv, h * nq_r * hd, h, h, h, inter * h, inter, h * inter, h):
            w.own("weight", n * ab)
        if backend_served("GPTBigCodeForCausalLM", par.vllm_version):
            # 0.30+'s Transformers backend: vLLM's Attention per layer, with its scale buffers
            w.own("attention scales", 16, buffer=True)
            w.ref.allocated_bytes += w.attention_blocks * W.ALLOC_ROUND
    w.own("mask", positions * positions, buffer=True)
    return w.result()


FAMILIES: dict[str, Family] = {"GPTBigCodeForCausalLM": Family(walk)}

"""MiniCPM3 (``minicpm3.py``, ``MiniCPM3ForCausalLM``): Llama's MLP and norms, the head tied
(``tie_word_embeddings``, true by default), and latent attention built from plain parallel
linears: ``q_a_proj`` ``[q_lora_rank, H]`` (replicated), ``q_a_layernorm`` ``[q_lora_rank]``,
``q_b_proj`` ``[heads / TP x (nope + rope), q_lora_rank]``, ``kv_a_proj_with_mqa`` ``[kv_lora_rank +
rope, H]`` (replicated), ``kv_a_layernorm`` ``[kv_lora_rank]``, ``kv_b_proj`` ``[heads / TP x (nope
+ v), kv_lora_rank]``, ``o_proj`` ``[H, heads / TP x v]``; vLLM's plain ``Attention`` (its scale
buffers); one rotary table ``[max_position_embeddings, qk_rope_head_dim]``. The embedding, the
final norm and the head on every pipeline stage."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from dryboot.vllm.model_executor.model_loader import weights as W
from dryboot.vllm.model_executor.models.compose import Family, WalkArgs, unquantized


def walk(config: Mapping[str, Any], par: W.Parallel, args: WalkArgs) -> W.RankWeights:
    """One rank of one stage (module docstring).

    :raises InputError: a quantization method, checkpoint headers, heads or sizes TP does not
        divide."""
    config, ab = unquantized(config, args, {"tie_word_embeddings": True})
    tp = par.tp
    h = W._int(config, "hidden_size")
    heads_r = W._divide(W._int(config, "num_attention_heads"), tp, "num_attention_heads")
    q_lora, kv_lora = W._int(config, "q_lora_rank"), W._int(config, "kv_lora_rank")
    nope, rope, v = (W._int(config, k) for k in ("qk_nope_head_dim", "qk_rope_head_dim", "v_head_dim"))
    i_r = W._divide(W._int(config, "intermediate_size"), tp, "intermediate_size")
    vocab_r = W.padded_vocab_per_rank(W._int(config, "vocab_size"), tp)
    w = W._Walk(None, par.vllm_version)
    w.own("embedding", vocab_r * h * ab)  # embedding, final norm and head on every stage
    w.own("norm", h * ab)
    if not config.get("tie_word_embeddings"):
        w.own("lm_head", vocab_r * h * ab)
    layers = W.pp_layers(W._int(config, "num_hidden_layers"), par)
    for _ in layers:
        sizes = [h, h, q_lora * h, q_lora, heads_r * (nope + rope) * q_lora, (kv_lora + rope) * h, kv_lora]
        sizes += [heads_r * (nope + v) * kv_lora, h * heads_r * v, 2 * i_r * h, h * i_r]
        for n in sizes:
            w.own("weight", n * ab)
        w.own("attention scales", 16, buffer=True)
        w.ref.allocated_bytes += w.attention_blocks * W.ALLOC_ROUND
    if layers:
        w.own("rotary", W._int(config, "max_position_embeddings") * rope * ab, buffer=True)
    return w.result()


FAMILIES: dict[str, Family] = {"MiniCPM3ForCausalLM": Family(walk)}

"""MiniMax-M3 (``vllm/models/minimax_m3/nvidia/model.py``, ``MiniMaxM3SparseForCausalLM``; the
language model of ``MiniMaxM3SparseForConditionalGeneration``), unquantized, from ``text_config``
(the config itself when it has none):

* per layer two Gemma RMSNorms ``[H]`` (model dtype); attention: ``qkv_proj`` ``[(q + 2 kv) /
  rank, H]`` (key/value heads below TP replicated), on the sparse layers
  (``sparse_attention_config.sparse_attention_freq`` non-zero) fused with the indexer's
  ``index_q`` (one head of ``sparse_index_dim`` per local KV head) and its replicated ``index_k``
  (``MinimaxM3QKVParallelLinearWithIndexer``), ``o_proj`` ``[H, heads x head_dim / TP]``,
  ``q_norm`` / ``k_norm`` ``[head_dim]`` and on sparse layers ``index_q_norm`` / ``index_k_norm``
  ``[sparse_index_dim]``; the attention's scale buffers (``set_default_quant_scales``, the sparse
  layers' own too);
* a dense MLP (``gate_up_proj`` / ``down_proj`` of ``dense_intermediate_size``), or on the layers
  ``moe_layer_freq`` marks a MoE block: the float32 router ``[E, H]`` (``GateLinear``), float32
  ``e_score_correction_bias`` ``[E]`` under ``use_routing_bias``, a shared expert of
  ``intermediate_size x n_shared_experts`` and ``num_local_experts`` experts of
  ``intermediate_size``;

one rotary table ``[max_position_embeddings, head_dim x partial_rotary_factor]``; the embedding
on the first stage, the final norm and the untied head on the last; with sparse layers, the int32
top-k indices ``[max_num_batched_tokens rounded up to 4, max(1, sparse_num_index_heads / TP),
sparse_topk_blocks]`` (a plain attribute: allocated, neither parameter nor buffer; the scheduler's
``max_num_batched_tokens`` is required).

Refused by name: the vision tower of ``MiniMaxM3SparseForConditionalGeneration``
(``common/vision_tower.py`` is not sized; ``--language-model-only`` or image and video limited to
0 drop it), quantized checkpoints (MiniMax-M3-MXFP8's MXFP8 layout), a tied head, TP above the
experts (vLLM refuses it)."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from dryboot.errors import InputError
from dryboot.vllm.model_executor.model_loader import weights as W
from dryboot.vllm.model_executor.models.compose import Family, WalkArgs, unquantized

TOWER_REFUSAL = "vLLM's vllm.models.minimax_m3.common/vision_tower.py is not sized (--language-model-only drops it)"


def _sparse(config: Mapping[str, Any]) -> tuple[Mapping[str, Any], set[int]]:
    cfg = config.get("sparse_attention_config") or {}
    if not isinstance(cfg, Mapping):
        raise InputError("config.json", "sparse_attention_config", "an object")
    freq = cfg.get("sparse_attention_freq") or []
    if not isinstance(freq, list):
        raise InputError("config.json", "sparse_attention_config.sparse_attention_freq", "a list per layer")
    return cfg, {i for i, f in enumerate(freq) if f != 0}


def _moe_layer(config: Mapping[str, Any], li: int) -> bool:
    freq = config.get("moe_layer_freq")
    if freq is None:
        return True
    if not isinstance(freq, list) or li >= len(freq):
        raise InputError("config.json", "moe_layer_freq", "a list with one entry per layer")
    return bool(freq[li])


def text_walk(config: Mapping[str, Any], par: W.Parallel, args: WalkArgs) -> W.RankWeights:
    """One rank of one stage of the language model (module docstring).

    :raises InputError: what the module docstring refuses, sizes TP does not divide, no
        ``max_num_batched_tokens`` for a model with sparse layers."""
    config, ab = unquantized(config, args, untied="MiniMax-M3")
    tp = par.tp
    h, hd = W._int(config, "hidden_size"), W._int(config, "head_dim")
    nq_r = W._divide(W._int(config, "num_attention_heads"), tp, "num_attention_heads")
    nkv_r = W.kv_heads_per_rank(W._int(config, "num_key_value_heads"), tp)
    sparse_cfg, sparse = _sparse(config)
    idx = W._int(sparse_cfg, "sparse_index_dim") if sparse else 0
    w = W._Walk(None, par.vllm_version)
    w.ends(par, W.padded_vocab_per_rank(W._int(config, "vocab_size"), tp), h, ab)
    layers = W.pp_layers(W._int(config, "num_hidden_layers"), par)
    for li in layers:
        qkv = (nq_r + 2 * nkv_r) * hd + ((nkv_r + 1) * idx if li in sparse else 0)
        sizes = [h, h, qkv * h, h * nq_r * hd, hd, hd, *([idx, idx] if li in sparse else [])]
        if _moe_layer(config, li):
            e, inter = W._int(config, "num_local_experts"), W._int(config, "intermediate_size")
            W.refuse_tp_above_experts(tp, e)
            w.own("router", 4 * e * h)  # GateLinear in float32
            if config.get("use_routing_bias"):
                w.own("router", 4 * e)
            shared = W._int({"n": config.get("n_shared_experts") or 0}, "n")
            if shared:
                sizes += W.dense_mlp_sizes(h, inter * shared, tp, "intermediate_size x n_shared_experts")
            e_r, i_r = W.experts_per_rank(e, inter, tp, par, "intermediate_size")
            for kind, nbytes in W.experts_bytes(W.Quant(), e_r, h, i_r, ab):
                w.own(kind, nbytes)
            if par.expert_parallel:
                w.own("expert map", 4 * e, buffer=True)
        else:
            sizes += W.dense_mlp_sizes(h, W._int(config, "dense_intermediate_size"), tp, "dense_intermediate_size")
        w.attention_layer(sizes, ab)
    if layers:
        w.own("rotary", W._rotary_bytes(config, hd, ab), buffer=True)
    out = w.result()
    if sparse:
        if args.max_num_batched_tokens is None:
            raise InputError("--max-num-batched-tokens", None, "MiniMax-M3's top-k index buffer needs it")
        rows = -(-args.max_num_batched_tokens // 4) * 4
        heads = max(1, W._int(sparse_cfg, "sparse_num_index_heads") // tp)
        nbytes = 4 * rows * heads * W._int(sparse_cfg, "sparse_topk_blocks")
        out.allocated_bytes += -(-nbytes // W.ALLOC_ROUND) * W.ALLOC_ROUND
    return out


def walk(config: Mapping[str, Any], par: W.Parallel, args: WalkArgs) -> W.RankWeights:
    """The architecture's model on one rank of one stage: the language model of ``text_config``;
    the conditional-generation class's tower refused by name unless dropped.

    :raises InputError: the tower kept, what :func:`text_walk` refuses."""
    arch = str((config.get("architectures") or ["?"])[0])
    if arch == "MiniMaxM3SparseForConditionalGeneration" and not args.no_tower:
        raise InputError("config.json", "architectures", f"weights of {arch} are not modelled: {TOWER_REFUSAL}")
    text = config.get("text_config")
    if isinstance(text, Mapping):
        outer = {k: config[k] for k in ("torch_dtype", "quantization_config") if k in config}
        config = {**outer, **text}
    return text_walk(config, par, args)


FAMILIES: dict[str, Family] = {
    "MiniMaxM3SparseForCausalLM": Family(walk),
    "MiniMaxM3SparseForConditionalGeneration": Family(walk, ("image", "video")),
}

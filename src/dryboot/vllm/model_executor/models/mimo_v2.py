"""MiMo-V2-Flash (``mimo_v2.py``, ``MiMoV2FlashForCausalLM``): per layer two RMSNorms, attention
whose heads, key/value heads, head size and value head size are the ``swa_`` ones on the
sliding-window layers (``hybrid_layer_pattern`` 1) and the config's elsewhere: ``qkv_proj``
``[(heads x head_dim + kv_heads x (head_dim + v_head_dim)) / TP, H]`` (a bias under
``attention_bias``; key/value heads below TP replicated), ``o_proj`` ``[H, heads x v_head_dim /
TP]``, on the sliding-window layers under ``add_swa_attention_sink_bias`` a sink ``[heads /
TP]``; then a gated MLP, or on the layers ``moe_layer_freq`` marks a MoE block: the router
``[E, H]`` and ``e_score_correction_bias`` ``[E]`` in ``moe_router_dtype`` (float32 by default)
and ``n_routed_experts`` experts of ``moe_intermediate_size``. One rotary table per distinct rope
(head size, ``partial_rotary_factor``, ``rope_theta`` / ``swa_rope_theta``) of the stage. The
embedding on the first stage, the final norm and the untied head on the last. vLLM refuses TP
above the experts; a tied head is refused by name. FlashInfer's KV counter (vLLM 0.33.0,
``weights.flashinfer_counter_layers``): only a layer whose value head size equals its head size
goes through vLLM's backend selection (sinks on the sliding-window ones); the others pin
FlashAttention / Triton's different-KV backends (``MiMoV2Attention``) and build none."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from dryboot.errors import InputError
from dryboot.vllm.model_executor.model_loader import weights as W
from dryboot.vllm.model_executor.models.compose import Family, WalkArgs, unquantized

DEFAULTS: dict[str, Any] = {
    "rope_theta": 1000000,
    "max_position_embeddings": 32768,
    "partial_rotary_factor": 1.0,
    "attention_bias": False,
    "tie_word_embeddings": False,
}
_DTYPES = {"float32": 4, "bfloat16": 2, "float16": 2}


def _flag(config: Mapping[str, Any], key: str, li: int) -> bool:
    v = config.get(key)
    if isinstance(v, int):
        return False if key == "moe_layer_freq" else bool(v)
    if not isinstance(v, list) or li >= len(v):
        raise InputError("config.json", key, "a list with one entry per layer")
    return bool(v[li])


def walk(config: Mapping[str, Any], par: W.Parallel, args: WalkArgs) -> W.RankWeights:
    """One rank of one stage (module docstring).

    :raises InputError: a quantization method, checkpoint headers, a tied head, sizes TP does
        not divide, TP above the experts."""
    config, ab = unquantized(config, args, DEFAULTS, untied="MiMo-V2")
    tp = par.tp
    h = W._int(config, "hidden_size")
    e, moe_i = W._int(config, "n_routed_experts"), W._int(config, "moe_intermediate_size")
    W.refuse_tp_above_experts(tp, e)
    router = _DTYPES.get(str(config.get("moe_router_dtype", "float32")))
    if router is None:
        raise InputError("config.json", "moe_router_dtype", "float32, bfloat16 or float16")
    vocab_r = W.padded_vocab_per_rank(W._int(config, "vocab_size"), tp)
    w = W._Walk(None, par.vllm_version)
    w.ends(par, vocab_r, h, ab)
    ropes: set[tuple[int, float, float]] = set()
    #: the layers that select their backend (heads per rank, head size, sinks), for the counter
    selected: list[tuple[int, int, bool]] = []
    for li in W.pp_layers(W._int(config, "num_hidden_layers"), par):
        swa = _flag(config, "hybrid_layer_pattern", li)
        p = "swa_" if swa else ""
        nq, nkv, hd = (W._int(config, p + k) for k in ("num_attention_heads", "num_key_value_heads", "head_dim"))
        vhd = config.get(p + "v_head_dim") or hd
        nq_r = W._divide(nq, tp, p + "num_attention_heads")
        if nkv >= tp:
            nkv_r = W._divide(nkv, tp, p + "num_key_value_heads")
        else:
            W._divide(tp, nkv, f"the tensor parallel size over {p}num_key_value_heads")
            nkv_r = 1
        qkv = nq_r * hd + nkv_r * (hd + vhd)
        sizes = [h, h, qkv * h, h * nq_r * vhd]
        if config.get("attention_bias"):
            sizes.append(qkv)
        if swa and config.get("add_swa_attention_sink_bias"):
            sizes.append(nq_r)
        if _flag(config, "moe_layer_freq", li):
            w.own("router", router * e * h)
            w.own("router", router * e)
            e_r, m_r = W.experts_per_rank(e, moe_i, tp, par, "moe_intermediate_size")
            sizes += [e_r * 2 * m_r * h, e_r * h * m_r]
            if par.expert_parallel:
                w.own("expert map", 4 * e, buffer=True)
        else:
            sizes += W.dense_mlp_sizes(h, W._int(config, "intermediate_size"), tp)
        w.attention_layer(sizes, ab)
        if vhd == hd:
            selected.append((nq_r, hd, swa and bool(config.get("add_swa_attention_sink_bias"))))
        theta = float(config.get("swa_rope_theta", config["rope_theta"]) if swa else config["rope_theta"])
        partial = float(config["partial_rotary_factor"])
        if (hd, partial, theta) not in ropes:
            ropes.add((hd, partial, theta))
            rope = {"max_position_embeddings": config["max_position_embeddings"], "partial_rotary_factor": partial}
            w.own("rotary", W._rotary_bytes(rope, hd, ab), buffer=True)
    rank = w.result()
    W.flashinfer_counter_layers(rank, par, args.max_num_batched_tokens, selected)
    return rank


FAMILIES: dict[str, Family] = {"MiMoV2FlashForCausalLM": Family(walk)}

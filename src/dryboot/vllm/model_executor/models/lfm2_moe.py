"""LFM2-MoE (``lfm2_moe.py``, ``Lfm2MoeForCausalLM``): LFM2's layers (:func:`.lfm2.operator`:
attention on the ``full_attention`` layers of ``layer_types``, a short convolution of width
``H`` elsewhere) whose feed-forward is a gated MLP ``w13`` ``[2 I / TP, H]``, ``w2`` on the first
``num_dense_layers`` layers and a MoE block on the others: the router ``[E, H]`` in the model
dtype, under ``use_expert_bias`` a float32 ``e_score_correction_bias`` ``[E]``, ``num_experts``
experts of ``moe_intermediate_size``. The embedding on every stage, the final
``embedding_norm`` on the last, the head tied unless the config unties it; one rotary table for
the stage's attention layers. vLLM refuses TP above the experts and a stage without MoE
layers."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from dryboot.errors import InputError
from dryboot.vllm.model_executor.model_loader import weights as W
from dryboot.vllm.model_executor.models.compose import Family, WalkArgs, unquantized
from dryboot.vllm.model_executor.models.lfm2 import operator

#: ``Lfm2MoeConfig``'s defaults (transformers 5.x) for what a config leaves out
DEFAULTS: dict[str, Any] = {
    "tie_word_embeddings": True,
    "max_position_embeddings": 128_000,
    "num_key_value_heads": 8,
    "conv_bias": False,
    "conv_L_cache": 3,
    "num_dense_layers": 2,
    "num_experts": 32,
    "use_expert_bias": True,
}


def walk(config: Mapping[str, Any], par: W.Parallel, args: WalkArgs) -> W.RankWeights:
    """One rank of one stage (module docstring).

    :raises InputError: a quantization method, checkpoint headers, convolution biases, sizes TP
        does not divide, TP above the experts, a stage without MoE layers."""
    config, ab = unquantized(config, args, DEFAULTS)
    if config.get("conv_bias"):
        raise InputError("config.json", "conv_bias", "LFM2's short-convolution biases are not modelled")
    tp = par.tp
    h, nq, nkv = (W._int(config, k) for k in ("hidden_size", "num_attention_heads", "num_key_value_heads"))
    hd = h // nq
    e = W._int(config, "num_experts")
    W.refuse_tp_above_experts(tp, e)
    nq_r = W._divide(nq, tp, "num_attention_heads")
    nkv_r = W._divide(nkv, tp, "num_key_value_heads") if nkv >= tp else 1
    c_r = W._divide(h, tp, "hidden_size")
    vocab_r = W.padded_vocab_per_rank(W._int(config, "vocab_size"), tp)
    types = config.get("layer_types") or []
    dense = W._int(config, "num_dense_layers")
    layers = W.pp_layers(W._int(config, "num_hidden_layers"), par)
    if all(li < dense for li in layers):
        raise InputError(
            "--pipeline-parallel-size", None, "a stage without MoE layers: vLLM refuses Lfm2MoeForCausalLM"
        )
    w = W._Walk(None, par.vllm_version)
    w.own("embedding", vocab_r * h * ab)  # on every stage
    if par.pp_rank == par.pp - 1:
        w.own("norm", h * ab)
        if not config.get("tie_word_embeddings"):
            w.own("lm_head", vocab_r * h * ab)
    attention = False
    for li in layers:
        full = li < len(types) and types[li] == "full_attention"
        attention = attention or full
        operator(w, full, h, nq_r, nkv_r, hd, c_r, W._int(config, "conv_L_cache"), ab)
        if li < dense:
            i_r = W._divide(W._int(config, "intermediate_size"), tp, "intermediate_size")
            for n in (2 * i_r * h, h * i_r):
                w.own("mlp", n * ab)
            continue
        w.own("router", e * h * ab)
        if config.get("use_expert_bias"):
            w.own("router", 4 * e)
        moe_i = W._int(config, "moe_intermediate_size")
        e_r, m_r = W.experts_per_rank(e, moe_i, tp, par, "moe_intermediate_size")
        for kind, nbytes in W.experts_bytes(W.Quant(), e_r, h, m_r, ab):
            w.own(kind, nbytes)
        if par.expert_parallel:
            w.own("expert map", 4 * e, buffer=True)
    if attention:
        w.own("rotary", W._rotary_bytes(config, hd, ab), buffer=True)
    return w.result()


FAMILIES: dict[str, Family] = {"Lfm2MoeForCausalLM": Family(walk)}

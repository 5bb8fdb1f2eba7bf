"""Laguna (``laguna.py``, ``LagunaForCausalLM``): per layer two RMSNorms, attention with
``num_attention_heads_per_layer`` heads (``num_attention_heads`` when null): ``qkv_proj`` (a bias
under ``qkv_bias``; key/value heads below TP replicated), ``o_proj`` (a bias ``[H]`` under
``attention_bias``), per-head q/k norms, under ``gating`` a column-parallel ``g_proj`` (``[heads /
TP, H]`` per head (``true`` / ``per-head``), ``[heads x head_dim / TP, H]`` per element), on the
sliding layers (``layer_types``) under ``swa_attention_sink_enabled`` a sink ``[heads / TP]``;
then a MLP of separate ``gate_proj`` / ``up_proj`` / ``down_proj`` on ``mlp_only_layers`` (``[0]``
when null), a MoE block elsewhere (every ``decoder_sparse_step``-th layer): the router ``[E, H]``
in the model dtype, a shared expert of ``shared_expert_intermediate_size`` built like the MLP,
the float32 ``e_score_correction_bias`` ``[E]`` and ``num_experts`` experts of
``moe_intermediate_size``. One rotary table ``[max_position_embeddings, head_dim x
partial_rotary_factor]``. The embedding on the first stage, the final norm and the untied head on
the last. vLLM refuses TP above the experts. Rope tables per layer type (nested
``rope_parameters``, ``swa_rope_parameters``) and scaled ropes are refused by name, except the
ones transformers' ``LagunaConfig`` fills in for an absent ``rope_parameters`` on a release that
reads it (switch ``laguna_ropes_by_layer_type``: :data:`LAYER_TYPE_ROPES`)."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from dryboot.errors import InputError
from dryboot.vllm.model_executor.model_loader import weights as W
from dryboot.vllm.model_executor.models.compose import Family, WalkArgs, unquantized
from dryboot.vllm.versions import rules_for

#: ``LagunaConfig``'s defaults (``transformers_utils/configs/laguna.py``) the walk reads
DEFAULTS: dict[str, Any] = {
    "num_key_value_heads": 8,
    "head_dim": 128,
    "gating": True,
    "max_position_embeddings": 131072,
    "tie_word_embeddings": False,
    "partial_rotary_factor": 1.0,
    "num_experts": 256,
    "moe_intermediate_size": 512,
    "shared_expert_intermediate_size": 512,
    "decoder_sparse_step": 1,
}


#: transformers' ``LagunaConfig`` default ``rope_parameters`` by layer type: ``partial_rotary_factor``
LAYER_TYPE_ROPES = {"full_attention": 0.5, "sliding_attention": 1.0}


def _rope_factor(config: Mapping[str, Any]) -> float:
    rope = config.get("rope_parameters") or config.get("rope_scaling") or {}
    if (
        not isinstance(rope, Mapping)
        or config.get("swa_rope_parameters")
        or any(isinstance(v, Mapping) for v in rope.values())
    ):
        raise InputError("config.json", "rope_parameters", "Laguna's rope tables per layer type are not modelled")
    if str(rope.get("rope_type", rope.get("type", "default"))) != "default":
        raise InputError("config.json", "rope_parameters", "Laguna's scaled rope table is not modelled")
    return float(rope.get("partial_rotary_factor", config.get("partial_rotary_factor") or 1.0))


def _mlp(w: W._Walk, h: int, inter: int, tp: int, ab: int) -> None:
    for n in W.dense_mlp_sizes(h, inter, tp, "the MLP width", merged=False):
        w.own("mlp", n * ab)


def walk(config: Mapping[str, Any], par: W.Parallel, args: WalkArgs) -> W.RankWeights:
    """One rank of one stage (module docstring).

    :raises InputError: a quantization method, checkpoint headers, a tied head, rope tables per
        layer type, sizes TP does not divide, TP above the experts."""
    config, ab = unquantized(config, args, DEFAULTS, untied="Laguna")
    partial = _rope_factor(config)
    tp = par.tp
    h, nkv, hd = (W._int(config, k) for k in ("hidden_size", "num_key_value_heads", "head_dim"))
    e = W._int(config, "num_experts")
    vocab_r = W.padded_vocab_per_rank(W._int(config, "vocab_size"), tp)
    per_layer = config.get("num_attention_heads_per_layer")
    types = config.get("layer_types") or []
    dense = config.get("mlp_only_layers")
    dense = [0] if dense is None else dense
    gating = config.get("gating")
    w = W._Walk(None, par.vllm_version)
    w.ends(par, vocab_r, h, ab)
    layers = W.pp_layers(W._int(config, "num_hidden_layers"), par)
    for li in layers:
        nq = W._int({"n": per_layer[li]}, "n") if isinstance(per_layer, list) else W._int(config, "num_attention_heads")
        nq_r = W._divide(nq, tp, "num_attention_heads")
        nkv_r = W.kv_heads_per_rank(nkv, tp)
        qkv = (nq_r + 2 * nkv_r) * hd
        sizes = [h, h, qkv * h, h * nq_r * hd, hd, hd]
        if config.get("qkv_bias"):
            sizes.append(qkv)
        if config.get("attention_bias"):
            sizes.append(h)
        if gating:
            sizes.append(nq_r * h if gating is True or gating == "per-head" else nq_r * hd * h)
        sliding = li < len(types) and types[li] == "sliding_attention"
        if sliding and config.get("swa_attention_sink_enabled"):
            sizes.append(nq_r)
        w.attention_layer(sizes, ab)
        if li not in dense and e > 0 and (li + 1) % W._int(config, "decoder_sparse_step") == 0:
            W.refuse_tp_above_experts(tp, e)
            w.own("router", e * h * ab)
            shared = W._int(config, "shared_expert_intermediate_size")
            if shared > 0:
                _mlp(w, h, shared, tp, ab)
            w.own("router", 4 * e)
            w.experts(e, h, W._int(config, "moe_intermediate_size"), par, ab, "moe_intermediate_size")
        else:
            _mlp(w, h, W._int(config, "intermediate_size"), tp, ab)
    factors = [partial] if layers else []
    unset = not (config.get("rope_parameters") or config.get("rope_scaling"))
    rules = rules_for(par.vllm_version)
    if layers and unset and rules.laguna_ropes_by_layer_type:
        # one get_rope table per distinct (rotary_dim, theta): per layer type of the stage
        kinds = {types[li] if li < len(types) else "full_attention" for li in layers}
        factors = [LAYER_TYPE_ROPES.get(k, 1.0) for k in sorted(kinds)]
    for factor in factors:
        rope = {"max_position_embeddings": config["max_position_embeddings"], "partial_rotary_factor": factor}
        w.own("rotary", W._rotary_bytes(rope, hd, ab), buffer=True)
    return w.result()


FAMILIES: dict[str, Family] = {"LagunaForCausalLM": Family(walk)}

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
reads it (switch ``laguna_ropes_by_layer_type``: :data:`LAYER_TYPE_ROPES`). Where vLLM 0.33.0
builds FlashInfer attention (every layer on SM 10.x; the sink layers on SM 12.x with
``flashinfer-cubin``) its shared multi-CTA KV counter, grown per layer
(``weights.flashinfer_counter_layers``; recorded: ``quant_cases_sinksfam.py``).

Quantized (poolside's published FP8 checkpoints: compressed-tensors W8A8 fp8 ``[128, 128]`` blocks,
an fp8 ``kv_cache_scheme``; on a named GPU the layout after ``process_weights_after_loading``,
``weights._scaled_on_gpu``): each linear layer as the ``ignore`` list leaves it (``qkv_proj``,
``o_proj``, ``g_proj``, the dense MLP's and the shared expert's ``gate_proj`` / ``up_proj`` /
``down_proj``), the experts as ``fused_moe.scaled_experts_bytes``, the router unquantized (one the
config quantizes is refused by name), the attention layers' scale parameters deleted (the
compressed-tensors KV-cache method). A nested ``rope_parameters`` (one entry per layer type, as
these checkpoints ship) gives one table per distinct entry of the stage's layers (vLLM's
``LagunaAttention``: the layer type's entry, else ``full_attention``'s, with the top-level
``partial_rotary_factor`` where the entry has none; ``get_rope`` caches one per parameters). A
``transform_config`` whose transforms are all offline (``weight_input`` / ``weight_output``: folded
into the checkpoint's weights; vLLM builds no transform module) adds nothing; online transforms are
refused by name (``scaled_mm.online_transforms``). Recorded on the releases and GPUs of
:data:`QUANT_RELEASES` / :data:`QUANT_SMS` (refused by name elsewhere)."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import replace
from typing import Any

from dryboot.errors import InputError
from dryboot.vllm.backends import flashinfer_kv_counter_bytes
from dryboot.vllm.model_executor.layers.quantization.fused_moe import scaled_experts_bytes
from dryboot.vllm.model_executor.model_loader import weights as W
from dryboot.vllm.model_executor.models.compose import (
    Family,
    WalkArgs,
    config_only,
    quant_scope_refusal,
    require_gpu,
    unquantized,
)
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
    quant = W.quant_from_config(config, args.hf_quant)
    if quant.method is None:
        config, ab = unquantized(config, args, DEFAULTS, untied="Laguna")
    else:
        config, ab = _quantized_config(config, args)
        quant = _quant_on_gpu(quant, config, par)
    if quant.method is not None:
        if not _nested_ropes(config):
            _rope_factor(config)  # a flat rope: the unquantized walk's refusals
        return _quantized_walk(config, par, quant, ab, args.max_num_batched_tokens)
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
    #: each layer's (query heads per rank, head size, sinks), for FlashInfer's KV counter
    selected: list[tuple[int, int, bool]] = []
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
        sinks = sliding and bool(config.get("swa_attention_sink_enabled"))
        if sinks:
            sizes.append(nq_r)
        selected.append((nq_r, hd, sinks))
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
    rank = w.result()
    # FlashInfer's shared KV counter (vLLM 0.33.0), grown per layer: on SM 10.x every layer's, on
    # SM 12.x with flashinfer-cubin the sink (sliding) layers' (recorded: quant_cases_sinksfam.py)
    W.flashinfer_counter_layers(rank, par, args.max_num_batched_tokens, selected)
    return rank


def _nested_ropes(config: Mapping[str, Any]) -> bool:
    rope = config.get("rope_parameters")
    return isinstance(rope, Mapping) and any(isinstance(v, Mapping) for v in rope.values())


def _layer_rope(config: Mapping[str, Any], layer_type: str) -> dict[str, Any]:
    """The rope parameters vLLM's ``LagunaAttention`` gives ``get_rope`` for a layer of
    ``layer_type`` (module docstring)."""
    top = config.get("rope_parameters") or {}
    if _nested_ropes(config):
        base = dict(top.get(layer_type) or top.get("full_attention") or {})
    else:
        base = dict(top)
    swa = config.get("swa_rope_parameters")
    rope = dict(swa) if layer_type == "sliding_attention" and isinstance(swa, Mapping) else base
    top_partial = config.get("partial_rotary_factor")
    if top_partial is not None and "partial_rotary_factor" not in rope:
        rope["partial_rotary_factor"] = top_partial
    return rope


def _quantized_config(config: Mapping[str, Any], args: WalkArgs) -> tuple[dict[str, Any], int]:
    """The config over :data:`DEFAULTS` and the model dtype's bytes, for a quantized checkpoint.

    :raises InputError: checkpoint headers (not mapped), a tied head."""
    config_only(config, args)
    merged = {**DEFAULTS, **config}
    if merged.get("tie_word_embeddings"):
        raise InputError("config.json", "tie_word_embeddings", "a tied Laguna head is not modelled")
    return merged, W.model_dtype_bytes(merged, args.dtype)


def _quant_on_gpu(quant: W.Quant, config: Mapping[str, Any], par: W.Parallel) -> W.Quant:
    """compressed-tensors W8A8 / NVFP4 after loading on the GPU named (``weights._on_gpu``).

    :raises InputError: another method, no GPU, pipeline or expert parallelism, a release or
        GPU not checked (named)."""
    if quant.method != "compressed-tensors" or quant.scaled is None:
        raise InputError(
            "quantization_config",
            "quant_method",
            "quantized LagunaForCausalLM layouts are modelled for compressed-tensors W8A8 / NVFP4 only",
        )
    require_gpu(par, "compressed-tensors")
    refused = quant_scope_refusal("Laguna", quant.method, par, QUANT_RELEASES, QUANT_SMS)
    if refused:
        raise InputError("quantization_config", "quant_method", refused)
    assert quant.scaled is not None
    return W._on_gpu(replace(quant, scaled=replace(quant.scaled, deep_gemm_recorded=True)), par, "laguna")


#: the releases and GPUs (SM) whose quantized Laguna layouts are recorded (quant_cases_fp8rest.py)
QUANT_RELEASES = ("0.27.1", "0.28.0", "0.30.0", "0.33.0")
QUANT_SMS = (86, 89, 90)


def _quantized_walk(
    config: Mapping[str, Any], par: W.Parallel, quant: W.Quant, ab: int, max_num_batched_tokens: int | None
) -> W.RankWeights:
    """One rank under compressed-tensors after loading (module docstring), with FlashInfer's
    multi-CTA KV counters (:func:`_flashinfer_counters`).

    :raises InputError: a quantized router, sizes TP does not divide, TP above the experts,
        vLLM's fp8 block-shape refusals, no ``max_num_batched_tokens`` where the counters need it."""
    tp = par.tp
    h, nkv, hd = (W._int(config, k) for k in ("hidden_size", "num_key_value_heads", "head_dim"))
    e = W._int(config, "num_experts")
    per_layer = config.get("num_attention_heads_per_layer")
    types = config.get("layer_types") or []
    dense = config.get("mlp_only_layers")
    dense = [0] if dense is None else dense
    gating = config.get("gating")
    w = W._Walk(None, par.vllm_version)
    w.ends(par, W.padded_vocab_per_rank(W._int(config, "vocab_size"), tp), h, ab)
    layers = W.pp_layers(W._int(config, "num_hidden_layers"), par)
    ropes: list[dict[str, Any]] = []
    heads: list[int] = []
    for li in layers:
        nq = W._int({"n": per_layer[li]}, "n") if isinstance(per_layer, list) else W._int(config, "num_attention_heads")
        nq_r = W._divide(nq, tp, "num_attention_heads")
        heads.append(nq_r)
        nkv_r = W.kv_heads_per_rank(nkv, tp)
        att = f"model.layers.{li}.self_attn"
        layer_type = types[li] if li < len(types) else "full_attention"
        entries = [
            ("norm", h * ab),
            ("norm", h * ab),
            *W._linear(
                quant,
                f"{att}.qkv_proj",
                h,
                (nq_r * hd, nkv_r * hd, nkv_r * hd),
                ab,
                tp=tp,
                bias=bool(config.get("qkv_bias")),
            ),
            *W._linear(quant, f"{att}.o_proj", nq_r * hd, (h,), ab, tp=tp, split="row"),
            ("norm", hd * ab),
            ("norm", hd * ab),
        ]
        if config.get("attention_bias"):
            entries.append(("bias", h * ab))
        if gating:
            g = nq_r if gating is True or gating == "per-head" else nq_r * hd
            entries += W._linear(quant, f"{att}.g_proj", h, (g,), ab, tp=tp)
        if layer_type == "sliding_attention" and config.get("swa_attention_sink_enabled"):
            entries.append(("sink", nq_r * ab))
        mlp = f"model.layers.{li}.mlp"
        if li not in dense and e > 0 and (li + 1) % W._int(config, "decoder_sparse_step") == 0:
            W.refuse_tp_above_experts(tp, e)
            assert quant.scaled is not None
            if quant.scaled.layer_scheme(f"{mlp}.gate", (f"{mlp}.gate",)) is not None:
                raise InputError(
                    "quantization_config", "ignore", f"a quantized Laguna router ({mlp}.gate) is not modelled"
                )
            entries.append(("router", e * h * ab))
            shared = W._int(config, "shared_expert_intermediate_size")
            if shared > 0:
                entries += _quantized_mlp(quant, f"{mlp}.shared_expert", h, shared, tp, ab)
            entries.append(("router", 4 * e))
            e_r, m_r = W.experts_per_rank(e, W._int(config, "moe_intermediate_size"), tp, par, "moe_intermediate_size")
            ex = f"{mlp}.experts"
            scheme = quant.scaled.layer_scheme(ex, tuple(f"{ex}.0.{p}" for p in ("gate_proj", "up_proj", "down_proj")))
            if scheme is None:
                entries += W.experts_bytes(W.Quant(), e_r, h, m_r, ab)
            else:
                entries += scaled_experts_bytes(quant.scaled, scheme, e_r, h, m_r, ab)
        else:
            entries += _quantized_mlp(quant, mlp, h, W._int(config, "intermediate_size"), tp, ab)
        for kind, nbytes in entries:
            w.own("attention" if kind == "weight" else kind, nbytes)
        w.own("attention scales", 16, buffer=True)
        w.ref.allocated_bytes += (w.attention_blocks - W._post_load_host_blocks(quant, w.range_blocks)) * W.ALLOC_ROUND
        rope = _layer_rope(config, layer_type)
        if rope not in ropes:
            ropes.append(rope)
    for rope in ropes:
        table = {"max_position_embeddings": config["max_position_embeddings"], "rope_parameters": rope}
        table["partial_rotary_factor"] = float(rope.get("partial_rotary_factor", 1.0))
        w.own("rotary", W._rotary_bytes(table, hd, ab), buffer=True)
    _flashinfer_counters(w, config, par, heads, hd, max_num_batched_tokens)
    return w.result()


def _flashinfer_counters(
    w: W._Walk,
    config: Mapping[str, Any],
    par: W.Parallel,
    heads: list[int],
    hd: int,
    max_num_batched_tokens: int | None,
) -> None:
    """vLLM 0.33.0's FlashInfer attention (on SM 8.x with the checkpoint's fp8 ``kv_cache_scheme``:
    ``weights._flashinfer_attention``) takes a shared multi-CTA KV counter per layer as it is built
    (``flashinfer.py`` ``_get_multi_ctas_kv_counter_buffer``): a layer needing more than the
    process's buffer allocates a larger one, and the earlier layers keep the old; so one buffer
    per new maximum of the layers' query heads (``heads``, in build order: Laguna's 48 then 72
    heads hold two), ``backends.flashinfer_kv_counter_bytes`` each.

    :raises InputError: no ``max_num_batched_tokens`` where the counters are built."""
    w.ref.counter_checked = True
    q = config.get("quantization_config") or {}
    fp8_kv = isinstance(q, Mapping) and bool(q.get("kv_cache_scheme"))
    if not heads or not W._flashinfer_attention(par, hd, fp8_kv):
        return
    if max_num_batched_tokens is None:
        raise InputError(
            "--max-num-batched-tokens",
            None,
            f"vLLM {par.vllm_version}'s FlashInfer attention allocates its multi-CTA KV counter with the weights: "
            "give max_num_batched_tokens",
        )
    largest = 0
    for n in heads:
        if n > largest:
            largest = n
            w.own("attention counter", flashinfer_kv_counter_bytes(max_num_batched_tokens, n, par.sm_count or 0))


def _quantized_mlp(quant: W.Quant, prefix: str, h: int, inter: int, tp: int, ab: int) -> list[tuple[str, int]]:
    """``LagunaMLP``'s separate ``gate_proj`` / ``up_proj`` (column) and ``down_proj`` (row) as the
    config quantizes them.

    :raises InputError: ``inter`` TP does not divide, vLLM's fp8 block-shape refusals."""
    i_r = W._divide(inter, tp, "the MLP width")
    return [
        *W._linear(quant, f"{prefix}.gate_proj", h, (i_r,), ab, tp=tp),
        *W._linear(quant, f"{prefix}.up_proj", h, (i_r,), ab, tp=tp),
        *W._linear(quant, f"{prefix}.down_proj", i_r, (h,), ab, tp=tp, split="row"),
    ]


FAMILIES: dict[str, Family] = {"LagunaForCausalLM": Family(walk)}

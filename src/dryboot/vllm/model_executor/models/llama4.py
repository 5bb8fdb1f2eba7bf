"""Llama 4 text model (``llama4.py``, ``Llama4ForCausalLM``): Llama's attention (its q/k L2 norm, on
the layers with rope, keeps a float32 ``[head_dim]`` of ones as a plain attribute; the layers with
rope share one ``llama3`` table, which a pipeline stage of only layers without rope does not hold),
a MoE block every ``interleave_moe_layer_step`` layers (router ``[E, H]``, a gated shared expert and
``num_local_experts`` experts, both of ``intermediate_size``), a dense gated MLP of
``intermediate_size_mlp`` elsewhere; the head untied unless the config ties it."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from dryboot.errors import InputError
from dryboot.vllm.model_executor.model_loader import weights as W
from dryboot.vllm.model_executor.models.compose import (
    Family,
    Layout,
    WalkArgs,
    config_only,
    decoder,
    quant_scope_refusal,
    routed_experts_bytes,
)


def _moe_layer(config: Mapping[str, Any], li: int) -> bool:
    step = W._int(config, "interleave_moe_layer_step", 1)
    return step > 0 and (li + 1) % step == 0


def _rope(config: Mapping[str, Any], li: int) -> bool:
    """``no_rope_layers``: 1 for a layer with rope; absent or empty, ``Llama4TextConfig``'s default
    (transformers 4.57-5.x): no rope on every ``no_rope_layer_interval``-th layer (4)."""
    flags = config.get("no_rope_layers")
    if not flags:
        interval = W._int(config, "no_rope_layer_interval", 4)
        return (li + 1) % interval != 0
    return bool(flags[li]) if li < len(flags) else True


def _qk_norm(config: Mapping[str, Any], li: int, hd: int) -> tuple[int, ...]:
    """The q/k L2 norm of a layer with rope keeps a float32 ``weight`` ``[head_dim]`` of ones as a
    plain attribute."""
    return (4 * hd,) if _rope(config, li) and config.get("use_qk_norm", True) else ()


def _shared(config: Mapping[str, Any]) -> int:
    return W._int(config, "intermediate_size")


LLAMA4_TEXT = Layout(
    moe=_moe_layer,
    shared=_shared,
    experts_key="num_local_experts",
    moe_inter_key="intermediate_size",
    dense_inter_key="intermediate_size_mlp",
    attributes=_qk_norm,
    uses_rope=_rope,
)

_UNQUANTIZED = decoder(LLAMA4_TEXT, refused=("attention_bias",))

#: releases whose quantized Llama-4 text layouts are recorded against vLLM
#: (``tests/fidelity/quant_cases_llama4.py``)
QUANT_RELEASES = ("0.27.1", "0.28.0", "0.30.0", "0.32.0", "0.33.0")
#: the GPUs (``major * 10 + minor``) those records cover
QUANT_SMS = (86, 89, 90)
#: ModelOpt's (FP8 / NVFP4) records cover Blackwell too (SM 10.0, 12.0: other kernels)
MODELOPT_SMS = (*QUANT_SMS, 100, 120)
#: the ModelOpt methods recorded for Llama-4 (``quant_cases_llama4.py``)
MODELOPT_METHODS = ("modelopt", "modelopt_fp4")


def walk(config: Mapping[str, Any], par: W.Parallel, args: WalkArgs) -> W.RankWeights:
    """One rank of one stage: the unquantized layout (:data:`LLAMA4_TEXT`), or a quantized
    checkpoint after ``process_weights_after_loading`` (:func:`quantized_walk`)."""
    if W.quant_from_config(config, args.hf_quant).method is None:
        return _UNQUANTIZED.walk(config, par, args)
    return quantized_walk(config, par, args)


def _refuse_quantized(quant: W.Quant, par: W.Parallel) -> None:
    """What of a quantized Llama-4 text model is not modelled, named.

    :raises InputError: a method other than the weight-only integer ones (AWQ, GPTQ, AutoRound,
        compressed-tensors W4A16) and compressed-tensors W8A8 / NVFP4 (ModelOpt, fp8, ... not
        recorded for Llama-4), a release or GPU not recorded, pipeline or expert parallelism."""
    modelopt = quant.method in MODELOPT_METHODS
    if quant.wna16 is None and not modelopt and (quant.method != "compressed-tensors" or quant.scaled is None):
        why: str | None = (
            f"{quant.method} layouts of Llama-4 are not modelled (AWQ, GPTQ, AutoRound, compressed-tensors and "
            "ModelOpt FP8 / NVFP4 are)"
        )
    else:
        why = quant_scope_refusal("Llama-4", quant.method, par, QUANT_RELEASES, MODELOPT_SMS if modelopt else QUANT_SMS)
    if why:
        raise InputError("quantization_config", "quant_method", why)


def quantized_walk(config: Mapping[str, Any], par: W.Parallel, args: WalkArgs) -> W.RankWeights:
    """A quantized ``Llama4ForCausalLM`` on one rank after loading: the embedding, the final norm
    and the untied LM head in the model dtype (a ``ParallelLMHead``: never quantized here); per
    layer two RMSNorms, ``qkv_proj`` / ``o_proj`` quantized as the checkpoint says, the q/k L2
    norm's float32 ``[head_dim]`` on the layers with rope, the attention's scales; a dense gated
    MLP of ``intermediate_size_mlp`` or the MoE block (the router ``[E, H]`` unquantized, vLLM
    builds it with ``quant_config=None``; the shared expert quantized as a dense MLP of
    ``intermediate_size``; the experts after loading for the GPU named: AWQ / W4A16
    ``auto_gptq.wna16_experts_bytes``, W8A8 ``fused_moe.scaled_experts_bytes``); one ``llama3``
    rotary table where a layer has rope. Mirrors ``llama4.py``'s ``Llama4Model`` with the
    checkpoint's quant methods' ``process_weights_after_loading``.

    :raises InputError: what :func:`_refuse_quantized` names, no GPU named, checkpoint headers,
        heads or sizes TP does not divide, TP above the experts."""
    config_only(config, args)
    if config.get("attention_bias"):
        raise InputError("config.json", "attention_bias", "Llama4ForCausalLM with attention_bias is not modelled")
    quant = W.quant_from_config(config, args.hf_quant)
    _refuse_quantized(quant, par)
    quant = W._on_gpu(quant, par, "llama4_text")
    tp, ab = par.tp, W.model_dtype_bytes(config, args.dtype)
    h, nq = W._int(config, "hidden_size"), W._int(config, "num_attention_heads")
    nkv = W._int(config, "num_key_value_heads", nq)
    hd = W._int(config, "head_dim", h // nq)
    nq_r, nkv_r = W._divide(nq, tp, "num_attention_heads"), W.kv_heads_per_rank(nkv, tp)
    vocab_r = W.padded_vocab_per_rank(W._int(config, "vocab_size"), tp)
    e = W._int(config, "num_local_experts")
    # the wrapper's language model (mllama4.py) is built under ``language_model.``: the names the
    # checkpoint's ignore list and modules_to_not_convert match
    wrapped = config.get("architectures") == ["Llama4ForConditionalGeneration"]
    root = "language_model.model" if wrapped else "model"
    w = W._Walk(None, par.vllm_version)
    w.own("embedding", vocab_r * h * ab)
    w.own("lm_head", vocab_r * h * ab)
    w.own("norm", h * ab)
    layers = W.pp_layers(W._int(config, "num_hidden_layers"), par)
    for li in layers:
        p = f"{root}.layers.{li}"
        att = f"{p}.self_attn"
        split = "column" if nkv >= tp else ""
        qkv = (nq_r * hd, nkv_r * hd, nkv_r * hd)
        entries = [
            ("norm", h * ab),
            ("norm", h * ab),
            *W._linear(quant, f"{att}.qkv_proj", h, qkv, ab, tp=tp, split=split),
            *W._linear(quant, f"{att}.o_proj", nq_r * hd, (h,), ab, tp=tp, split="row"),
        ]
        if _moe_layer(config, li):
            W.refuse_tp_above_experts(tp, e)
            inter = W._int(config, "intermediate_size")
            i_r = W._divide(inter, tp, "the experts' intermediate size")
            entries += [("router", e * h * ab), *_mlp(quant, f"{p}.feed_forward.shared_expert", h, i_r, ab, tp)]
            # compressed-tensors fp8 experts below SM 8.9: Marlin's MoE backend, ahead of Humming's, on every
            # release (0.27.1 too: quant-recorded-humfp8-0.27.1.json, FusedMoEKernel/MarlinExperts)
            entries += routed_experts_bytes(
                quant, f"{p}.feed_forward.experts", e, h, i_r, ab, plain_swiglu=not par.expert_parallel
            )
        else:
            i_r = W._divide(W._int(config, "intermediate_size_mlp"), tp, "intermediate_size_mlp")
            entries += _mlp(quant, f"{p}.feed_forward", h, i_r, ab, tp)
        for kind, nbytes in entries:
            w.own("attention" if kind == "weight" else kind, nbytes)
        for nbytes in _qk_norm(config, li, hd):
            w.ref.allocated_bytes += -(-nbytes // W.ALLOC_ROUND) * W.ALLOC_ROUND
        w.own("attention scales", 16, buffer=True)
        w.ref.allocated_bytes += (w.attention_blocks - W._post_load_host_blocks(quant, w.range_blocks)) * W.ALLOC_ROUND
    if any(_rope(config, li) for li in layers):
        w.own("rotary", W._rotary_bytes(config, hd, ab), buffer=True)
    # 0.33's FlashInfer attention (e.g. an fp8 KV cache on SM 8.x, a ModelOpt checkpoint's own):
    # its KV counter, allocated while the model is built
    fp8_kv = W.modelopt_fp8_kv_cache(config, args.hf_quant)
    W._flashinfer_counter(w, quant, par, fp8_kv, args.max_num_batched_tokens, nq_r, hd)
    return w.result()


def _mlp(quant: W.Quant, mlp: str, h: int, i_r: int, ab: int, tp: int) -> list[tuple[str, int]]:
    """A gated ``LlamaMLP``: ``gate_up_proj`` ``[2 I / TP, H]`` and ``down_proj`` ``[H, I / TP]``,
    quantized as the checkpoint says."""
    return [
        *W._linear(quant, f"{mlp}.gate_up_proj", h, (i_r, i_r), ab, tp=tp),
        *W._linear(quant, f"{mlp}.down_proj", i_r, (h,), ab, tp=tp, split="row"),
    ]


FAMILIES: dict[str, Family] = {"Llama4ForCausalLM": Family(walk)}

"""Gemma-4 (``gemma4.py``, ``Gemma4ForCausalLM``; ``gemma4_mm.py``,
``Gemma4ForConditionalGeneration``), unquantized and quantized (after loading).

The text model: the tied embedding (scaled by a ``normalizer`` scalar buffer) and the final norm
on every pipeline stage; per layer of ``layer_types``:

* attention of the layer's kind: sliding layers ``num_key_value_heads`` heads of ``head_dim``,
  full-attention layers ``num_global_key_value_heads`` heads of ``global_head_dim`` (query heads
  alike): ``qkv_proj`` (QKVParallelLinear; ``attention_k_eq_v`` still allocates the value part),
  ``o_proj``, ``q_norm`` / ``k_norm`` ``[head_dim]``; the attention layer's scale buffers;
* four RMSNorms (input, post-attention, pre/post feed-forward) and the dense MLP
  (``gate_up_proj`` ``[2 I / TP, H]``, ``down_proj``);
* with ``enable_moe_block``, three more norms, the router (``scale`` ``[H]``, ``proj`` ``[E, H]``,
  a ``root_size`` scalar buffer), ``moe.per_expert_scale`` ``[E]`` and the experts
  (``moe_intermediate_size``; ``weights.experts_bytes``);
* a ``layer_scalar`` buffer ``[1]``; the value norm's and (MoE) the router norm's ones, which
  these scale-less RMSNorms keep as plain tensor attributes (allocated, neither parameter nor
  buffer: in ``allocated_bytes`` only);

and one rotary table per kind of layer on the stage, ``[max_position_embeddings, head size]`` of
that kind (the full-attention ``proportional`` rope keeps the whole ``global_head_dim`` wide).

The vision tower (``Gemma4VisionModel``), replicated on every TP rank (plain linears): the patch
embedder (``position_embedding_table`` ``[2, position_embedding_size, D]``, ``input_proj`` ``[D, 3
P^2]``), per layer ``q/k/v/o_proj`` ``[D, D]``, ``q_norm`` / ``k_norm`` ``[head_dim]``, the gated
MLP (``[I, D]`` x 2, ``[D, I]``) and four norms; ``std_bias`` / ``std_scale`` buffers ``[D]``
(``standardize``), the rotary ``inv_freq`` and ``original_inv_freq`` (float32 ``[head_dim / 4]``);
the projector ``embed_vision.embedding_projection`` ``[H_text, D]`` (and its scale-less
pre-projection norm's ``[D]`` attribute).

Quantized checkpoints (:func:`text_walk`, recorded by ``tests/fidelity/quant_cases_gemma4.py``):
AWQ, GPTQ, AutoRound and compressed-tensors W4A16 (Marlin / Machete / Humming per GPU; the experts
through the fused MoE Marlin backend), plain fp8 and ModelOpt NVFP4 (its exclusions by vLLM's
names: the published ``model.language_model.layers.N.self_attn*`` keep attention in bf16); the
wrapper's tower only where vLLM builds it unquantized (:func:`_refuse_quantized_tower`).

Refused by name: per-layer input embeddings (``hidden_size_per_layer_input``), KV-shared layers
(``num_kv_shared_layers``), ``use_double_wide_mlp``, an audio tower, a quantized tower, quantized
checkpoints outside the recorded releases / GPUs, under pipeline or expert parallelism.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from dryboot.errors import InputError
from dryboot.vllm.model_executor.layers.quantization.modelopt import ModelOptQuant
from dryboot.vllm.model_executor.model_loader import weights as W
from dryboot.vllm.model_executor.models.compose import (
    Family,
    WalkArgs,
    built_text,
    config_only,
    quant_scope_refusal,
    routed_experts_bytes,
    vision_language,
)

#: the multimodal wrapper's architecture (its text model built by :func:`text_walk` too)
MM_ARCHITECTURE = "Gemma4ForConditionalGeneration"

#: fields whose value other than these adds modules this module does not build (refused by name)
UNMODELLED = {"hidden_size_per_layer_input": 0, "num_kv_shared_layers": 0, "use_double_wide_mlp": False}


#: releases whose quantized Gemma-4 text layouts are recorded against vLLM
#: (``tests/fidelity/quant_cases_gemma4.py``)
QUANT_RELEASES = ("0.28.0", "0.30.0", "0.32.0", "0.33.0")
#: the GPUs (``major * 10 + minor``) those records cover (on SM 10.0 vLLM's Marlin MoE backend does
#: not serve symmetric W4A16 experts: ``auto_gptq`` refuses them by name there)
QUANT_SMS = (86, 89, 90, 100)


def _refuse_unmodelled(config: Mapping[str, Any]) -> None:
    for key, plain in UNMODELLED.items():
        if config.get(key, plain) not in (plain, None):
            raise InputError("config.json", key, f"Gemma-4 with {key} {config[key]!r} is not modelled")


def _blocks(nbytes: int) -> int:
    """``nbytes`` as the CUDA caching allocator holds them (its 512-byte blocks)."""
    return -(-nbytes // W.ALLOC_ROUND) * W.ALLOC_ROUND


def _heads(n: int, tp: int, what: str) -> int:
    """Heads on a rank: ``n / TP``, or one replicated head below TP."""
    if n >= tp:
        return W._divide(n, tp, what)
    W._divide(tp, n, f"the tensor parallel size over {what}")
    return 1


def _refuse_quantized(quant: W.Quant, par: W.Parallel) -> None:
    """What of a quantized Gemma-4 text model is not modelled, named.

    :raises InputError: a method other than the weight-only integer ones (AWQ, GPTQ, AutoRound,
        compressed-tensors W4A16), plain fp8 and ModelOpt NVFP4; a release or GPU not recorded
        (:data:`QUANT_RELEASES`, :data:`QUANT_SMS`); pipeline or
        expert parallelism."""
    if quant.wna16 is None and quant.method not in ("modelopt_fp4", "fp8"):
        why: str | None = (
            f"{quant.method} layouts of Gemma-4 are not modelled (AWQ, GPTQ, AutoRound, compressed-tensors "
            "W4A16, fp8 and ModelOpt NVFP4 are)"
        )
    else:
        why = quant_scope_refusal("Gemma-4", quant.method, par, QUANT_RELEASES, QUANT_SMS)
    if why:
        raise InputError("quantization_config", "quant_method", why)


def text_walk(config: Mapping[str, Any], par: W.Parallel, args: WalkArgs) -> W.RankWeights:
    """One rank of one stage of the text model (module docstring), unquantized or, for a quantized
    checkpoint, after ``process_weights_after_loading``: ``qkv_proj`` / ``o_proj`` and the dense
    MLP quantized as the checkpoint says (``weights._linear``: its ignore list by vLLM's module
    names, ``model.layers.N...``; ``language_model.model.layers.N...`` in the wrapper), the
    experts by :func:`_experts`, the router's ``proj`` never (vLLM builds it as a ``GateLinear``
    without a quant config), the embedding (tied head) in the model dtype.

    :raises InputError: what :func:`_refuse_quantized` names, no GPU named for a quantized
        checkpoint, a field in :data:`UNMODELLED`, sizes TP does not divide, a rope type whose
        table is not modelled, checkpoint headers (not mapped)."""
    config_only(config, args)
    quant = W.quant_from_config(config, args.hf_quant)
    if quant.method is not None:
        _refuse_quantized(quant, par)
        quant = W._on_gpu(quant, par, "gemma4")
    _refuse_unmodelled(config)
    # the wrapper's language model by the text model's names too: ModelOpt's exclusions map
    # ``model.language_model.X`` onto them (``modelopt.text_model_name``)
    root = "model"
    ab = W.model_dtype_bytes(config, args.dtype)
    tp = par.tp
    h, inter = W._int(config, "hidden_size"), W._int(config, "intermediate_size")
    nq, nkv = W._int(config, "num_attention_heads"), W._int(config, "num_key_value_heads")
    kinds = {
        "sliding_attention": (W._int(config, "head_dim"), nkv),
        "full_attention": (
            W._int(config, "global_head_dim", config.get("head_dim")),
            W._int(config, "num_global_key_value_heads", nkv),
        ),
    }
    nq_r = W._divide(nq, tp, "num_attention_heads")
    vocab_r = W.padded_vocab_per_rank(W._int(config, "vocab_size"), tp)
    moe = bool(config.get("enable_moe_block"))
    if par.expert_parallel and not moe:
        raise InputError(
            "--enable-expert-parallel", None, "a Gemma-4 without experts: vLLM refuses it (no experts to place)"
        )
    w = W._Walk(None, par.vllm_version)
    w.own("embedding", vocab_r * h * ab)  # tied head; embedding and norm on every stage
    w.own("norm", h * ab)
    w.own("normalizer", ab, buffer=True)
    i_r = W._divide(inter, tp, "intermediate_size")
    types = config.get("layer_types")
    if not isinstance(types, list) or len(types) != W._int(config, "num_hidden_layers"):
        raise InputError("config.json", "layer_types", "missing or not one type per layer")
    seen: set[str] = set()
    for li in W.pp_layers(len(types), par):
        kind = str(types[li])
        if kind not in kinds:
            raise InputError("config.json", "layer_types", f"Gemma-4 layer type {kind!r} is not modelled")
        seen.add(kind)
        hd, kv = kinds[kind]
        kv_r = _heads(kv, tp, f"the {kind} KV heads")
        p = f"{root}.layers.{li}"
        split = "column" if kv >= tp else ""
        entries = [
            *W._linear(quant, f"{p}.self_attn.qkv_proj", h, (nq_r * hd, kv_r * hd, kv_r * hd), ab, tp=tp, split=split),
            *W._linear(quant, f"{p}.self_attn.o_proj", nq_r * hd, (h,), ab, tp=tp, split="row"),
            *W._linear(quant, f"{p}.mlp.gate_up_proj", h, (i_r, i_r), ab, tp=tp),
            *W._linear(quant, f"{p}.mlp.down_proj", i_r, (h,), ab, tp=tp, split="row"),
        ]
        counts = [hd, hd, *[h] * 4]
        if moe:
            e = W._int(config, "num_experts")
            counts += [h, h, h, h, e * h, e]  # three norms, router scale and proj, per-expert scale
        for n in counts:
            w.own("layer", n * ab)
        for k, nbytes in entries:
            w.own("layer" if k == "weight" else k, nbytes)
        if moe:
            e_i = W._int(config, "moe_intermediate_size")
            e_r, ei_r = W.experts_per_rank(e, e_i, tp, par, "moe_intermediate_size")
            # GELU-tanh gated experts, no SwiGLU limit (FlashInfer TRT-LLM takes GELU_TANH; recorded on
            # 0.28.0-0.33.0 without expert parallelism)
            plain = not par.expert_parallel
            for k, nbytes in routed_experts_bytes(quant, f"{p}.experts", e_r, h, ei_r, ab, plain_swiglu=plain):
                w.own(k, nbytes)
            if par.expert_parallel:
                w.own("expert map", 4 * e, buffer=True)
            w.own("router", ab, buffer=True)  # root_size
        w.own("layer scalar", ab, buffer=True)
        # RMSNorms without a learned scale keep their ones as a plain tensor attribute, allocated
        # with the model but neither parameter nor buffer: the value norm, and the router's
        w.ref.allocated_bytes += _blocks(hd * ab) + (_blocks(h * ab) if moe else 0)
        w.own("attention scales", 16, buffer=True)
        held = w.attention_blocks - (W._post_load_host_blocks(quant, w.range_blocks) if quant.method else 0)
        w.ref.allocated_bytes += held * W.ALLOC_ROUND
    positions = W._int(config, "max_position_embeddings")
    for kind in sorted(seen):
        rope = (config.get("rope_parameters") or {}).get(kind) or {"rope_type": "default"}
        rope_type = str(rope.get("rope_type", "default"))
        if rope_type not in ("default", "proportional"):
            raise InputError(
                "config.json", "rope_parameters", f"the rotary table of rope type {rope_type!r} is not modelled"
            )
        w.own("rotary", positions * kinds[kind][0] * ab, buffer=True)
    fp8_kv = W.modelopt_fp8_kv_cache(config, args.hf_quant)
    heterogeneous = kinds["sliding_attention"][0] != kinds["full_attention"][0]
    modelopt_fp8_kv = isinstance(quant.scaled, ModelOptQuant) and fp8_kv
    if (
        quant.method is not None
        and not heterogeneous
        and W._flashinfer_attention(par, kinds["sliding_attention"][0], modelopt_fp8_kv)
    ):
        # heterogeneous head sizes force Triton attention (vLLM's Gemma4Config; no FlashInfer KV
        # counter: recorded); with one head size vLLM 0.33 may build FlashInfer's, not recorded
        raise InputError(
            "quantization_config",
            "kv_cache_scheme",
            f"a quantized Gemma-4 with one head size where vLLM {par.vllm_version} builds FlashInfer attention "
            "(an fp8 KV cache on SM 8.x: its KV counter) is not recorded",
        )
    rank = w.result()
    if heterogeneous and par.attention_backend is None and par.capability is not None:
        layers = [(nq_r, kinds[str(types[li])][0], False) for li in W.pp_layers(len(types), par)]
        _heterogeneous_counter(rank, config, par, args, layers, modelopt_fp8_kv)
    return rank


def _heterogeneous_counter(
    rank: W.RankWeights,
    config: Mapping[str, Any],
    par: W.Parallel,
    args: WalkArgs,
    layers: list[tuple[int, int, bool]],
    fp8_kv: bool,
) -> None:
    """FlashInfer's multi-CTA KV counter (vLLM 0.33.0) of a Gemma-4 whose sliding and global head
    sizes differ, no ``--attention-backend`` named, as vLLM's ``Gemma4Config.verify_and_update_config``
    leaves the choice: where FA4 is not supported (SM 8.x) it forces ``TRITON_ATTN`` (no counter;
    recorded with a ModelOpt fp8 KV cache on RTX 3090 / 4090); on SM 10.x it sets
    ``flash_attn_version`` 4 and leaves the backend to the priorities, which FlashInfer leads (the
    Triton / FlashInfer composite for a multimodal-prefix wrapper, ``use_bidirectional_attention``
    ``vision`` with multimodal input on): ``layers`` (query heads per rank, head size, sinks) of
    the stage through :func:`~weights.flashinfer_counter_layers` (recorded on B200, quantized,
    ``quant_cases_gemma4.py``). SM 9.0 (FlashAttention 4, or per-layer FA3 / FA4 with an fp8 cache)
    is left to the loader's check (:func:`~weights.unmodelled_flashinfer_counter`).

    :raises InputError: FlashInfer's counter and no ``max_num_batched_tokens`` (it sizes it)."""
    assert par.capability is not None
    major = par.capability[0]
    if major == 8:
        rank.counter_checked = True
    elif major == 10:
        wrapper = str((config.get("architectures") or [""])[0]) == MM_ARCHITECTURE
        mm_prefix = wrapper and not args.no_tower and config.get("use_bidirectional_attention") == "vision"
        W.flashinfer_counter_layers(rank, par, args.max_num_batched_tokens, layers, fp8_kv=fp8_kv, mm_prefix=mm_prefix)


@dataclass(frozen=True)
class VisionWidths:
    """The ``gemma4_vision`` widths both the weights and the encoder's profile read: the ViT's
    ``hidden_size``, its MLP's ``intermediate_size``, ``head_dim``, ``patch_size`` (pixels a
    side), ``position_embedding_size`` (positions a axis of the patch embedder's table) and
    ``num_hidden_layers``."""

    hidden_size: int
    intermediate_size: int
    head_dim: int
    patch_size: int
    position_embedding_size: int
    num_hidden_layers: int


def vision_widths(vision: Mapping[str, Any]) -> VisionWidths:
    """The :class:`VisionWidths` of a ``vision_config``.

    :raises InputError: a width missing or not a non-negative integer (named)."""
    return VisionWidths(
        *(
            W._int(vision, k)
            for k in (
                "hidden_size",
                "intermediate_size",
                "head_dim",
                "patch_size",
                "position_embedding_size",
                "num_hidden_layers",
            )
        )
    )


def _refuse_quantized_tower(vision: Mapping[str, Any], text: Mapping[str, Any], v: VisionWidths) -> None:
    """A quantized wrapper's tower is built unquantized where vLLM gives it no quant config
    (``gemma4_mm.py``: compressed-tensors, bitsandbytes and torchao always pass theirs; the other
    methods only to a tower whose ``hidden_size`` and ``intermediate_size`` are multiples of 64,
    which the published 1152 / 4304 tower is not); a tower vLLM quantizes is refused by name.

    :raises InputError: a tower the checkpoint's method quantizes (not modelled)."""
    qc = text.get("quantization_config")
    method = qc.get("quant_method") if isinstance(qc, Mapping) else None
    if method is None:
        return
    passes_always = str(method).lower() in ("compressed-tensors", "bitsandbytes", "torchao")
    if passes_always or (v.hidden_size % 64 == 0 and v.intermediate_size % 64 == 0):
        raise InputError(
            "quantization_config",
            "quant_method",
            f"a {method} Gemma-4 vision tower (vLLM quantizes it: compressed-tensors, or widths {v.hidden_size} / "
            f"{v.intermediate_size} multiples of 64) is not modelled; --language-model-only sizes the text model",
        )


def vision_tower(vision: Mapping[str, Any], text: Mapping[str, Any], tp: int, ab: int) -> W.RankWeights:
    """``Gemma4VisionModel`` and its projector on one rank, replicated (module docstring); under a
    quantized checkpoint only where vLLM builds it unquantized (:func:`_refuse_quantized_tower`)."""
    v = vision_widths(vision)
    _refuse_quantized_tower(vision, text, v)
    d, inter, hd, p = v.hidden_size, v.intermediate_size, v.head_dim, v.patch_size
    layer = [d * d] * 4 + [hd, hd] + [inter * d] * 3 + [d] * 4
    counts = [
        2 * v.position_embedding_size * d,
        d * 3 * p * p,
        *layer * v.num_hidden_layers,
    ]
    counts.append(W._int(text, "hidden_size") * d)
    w = W.RankWeights()
    for n in counts:
        w.add("vision", n * ab)
    w.allocated_bytes += _blocks(d * ab)  # the projector's scale-less pre-projection norm (an attribute)
    if vision.get("standardize"):
        for _ in range(2):
            w.add("vision", d * ab, buffer=True)
    for _ in range(2):  # inv_freq, original_inv_freq
        w.add("rotary", 4 * (hd // 4), buffer=True)
    return w


def _text_of(config: Mapping[str, Any]) -> Mapping[str, Any]:
    if config.get("audio_config"):
        raise InputError("config.json", "audio_config", "Gemma-4's audio tower is not modelled")
    return config


FAMILIES: dict[str, Family] = {
    "Gemma4ForCausalLM": Family(text_walk),
    MM_ARCHITECTURE: vision_language(Family(text_walk), vision_tower, prepare=_text_of, quantized=lambda q: True),
}


#: transformers' ``Gemma4VisionConfig`` defaults the tower reads (the same in the transformers of
#: vLLM 0.27.1, 0.28.0, 0.30.0 and 0.33.0's boot environments), for wrappers whose
#: ``vision_config`` names only its ``model_type``
VISION_DEFAULTS: dict[str, Any] = {
    "hidden_size": 768,
    "intermediate_size": 3072,
    "num_hidden_layers": 16,
    "head_dim": 64,
    "patch_size": 16,
    "position_embedding_size": 10 * 1024,
    "standardize": False,
}


def text_as_built(config: Mapping[str, Any]) -> dict[str, Any]:
    """A Gemma-4-based wrapper's ``text_config`` as its model class builds the text model
    (:func:`.compose.built_text`), with the wrapper's tie and dtype where the text config has none.

    :raises InputError: no ``text_config`` object, a key the wrapper needs missing (named)."""
    arch = str((config.get("architectures") or ["?"])[0])
    text = config.get("text_config")
    if not isinstance(text, Mapping):
        raise InputError("config.json", "text_config", f"{arch} needs a text_config object")
    outer = {k: config[k] for k in ("tie_word_embeddings", "torch_dtype") if k in config}
    return built_text(arch)({**outer, **text})

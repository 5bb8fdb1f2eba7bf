"""Gemma-2, Gemma-3 and Gemma-4: interleaved sliding-window and global attention.

Mirrors ``vllm/model_executor/models/gemma2.py``/``gemma3.py``/``gemma4.py`` fed by the
config classes (transformers ``Gemma2Config``, ``Gemma3TextConfig``; vLLM's Gemma-4 config):
absent ``layer_types`` alternate (Gemma-2: every 2nd layer global) or follow
``sliding_window_pattern`` (Gemma-3: default 6; Gemma-4: 6); Gemma-4's last layer is always
global, its full-attention layers use ``global_head_dim`` (default 512) and, with
``attention_k_eq_v``, ``num_global_key_value_heads`` (``Gemma4TextConfig``,
``gemma4_layer_config``). A Gemma-4 with ``use_bidirectional_attention: "vision"`` is a
multimodal-prefix LM (``Gemma4ModelArchConfigConvertor``); one whose sliding and global heads
differ runs every layer on FlashAttention 4 when FlashAttention serves it (``Gemma4Config`` in
``model_executor/models/config.py``), and on TRITON_ATTN where FlashAttention 4 does not run
and no backend is named (:func:`engine_args`). The multimodal wrapper, serving images or video,
raises a default ``max_num_batched_tokens`` to one video item's tokens (:func:`engine_args`).
"""

from __future__ import annotations

from dataclasses import dataclass, replace
from typing import Any

from dryboot.errors import InputError
from dryboot.vllm.backends import fa4_available
from dryboot.vllm.config.hf import AttentionGeometry, ConfigFields, FamilyExtra, LayerKind, ModelGeometry, extra_of
from dryboot.vllm.engine_args import EngineArgs
from dryboot.vllm.models.common import LAYER_TYPE_NAMES, attention_heads, geometry, layer_types, num_layers, window
from dryboot.vllm.versions import VersionRules

_GEMMA_BASE = {"num_attention_heads": 8, "num_key_value_heads": 4, "head_dim": 256, "sliding_window": 4096}
#: Gemma4TextConfig's own defaults (transformers 5.10-5.24, every release's): its heads, head size and
#: positions too, not the generic ones (KV heads = heads, head size = hidden / heads, 2048 positions)
_GEMMA4 = {
    "num_attention_heads": 8,
    "num_key_value_heads": 4,
    "head_dim": 256,
    "max_position_embeddings": 131072,
    "sliding_window": 512,
    "global_head_dim": 512,
    "attention_k_eq_v": False,
}
_DEFAULTS: dict[str, dict[str, Any]] = {
    "gemma4_text": _GEMMA4,
    "gemma4": _GEMMA4,
    "gemma2": {**_GEMMA_BASE, "max_position_embeddings": 8192, "attn_logit_softcapping": 50.0},
    "gemma3_text": {**_GEMMA_BASE, "max_position_embeddings": 131072, "sliding_window_pattern": 6},
    "gemma3": {**_GEMMA_BASE, "max_position_embeddings": 131072, "sliding_window_pattern": 6},
}


@dataclass(frozen=True)
class Gemma4Extra(FamilyExtra):
    """Gemma-4's own traits. ``global_kv_heads_unset``: ``attention_k_eq_v`` and full-attention
    layers but no ``num_global_key_value_heads`` (switch ``gemma4_global_kv_heads_required``).
    ``fa4_all_layers``: the model's config hook runs every layer on FlashAttention 4 when
    FlashAttention serves it (``model_executor/models/config.py`` ``Gemma4Config``: heterogeneous
    head sizes). ``mm_modalities``: the modalities the multimodal wrapper serves (image and video,
    audio with an ``audio_config``; empty for the text-only model)."""

    global_kv_heads_unset: bool = False
    fa4_all_layers: bool = False
    mm_modalities: tuple[str, ...] = ()


#: the multimodal Gemma-4 wrapper (``gemma4_mm.py``: ``is_multimodal_model``)
MM_ARCHITECTURE = "Gemma4ForConditionalGeneration"
#: the block-diffusion wrapper whose language model is Gemma-4's (``diffusion_gemma.py``)
DIFFUSION_ARCHITECTURE = "DiffusionGemmaForBlockDiffusion"
#: one video item's tokens at most, the largest item of any modality (``gemma4_mm.py``
#: ``get_mm_max_tokens_per_item``: ``_VIDEO_MAX_FRAMES`` 32 frames of ``_VIDEO_MAX_SOFT_TOKENS``
#: 70 soft tokens plus boi, eoi and 6 timestamp tokens; an image is at most 1120 soft tokens,
#: an audio clip the processor's ``audio_seq_length``), 0.27.1-0.33.0
VIDEO_ITEM_TOKENS = 32 * (70 + 2 + 6)


def defaults(f: ConfigFields) -> dict[str, Any]:
    return _DEFAULTS.get(str(f.get("model_type") or ""), {})


def read(f: ConfigFields, architecture: str) -> ModelGeometry:
    n = num_layers(f)
    heads = attention_heads(f)
    types = layer_types(f, n)
    gemma4 = architecture.startswith("Gemma4")
    if types is None:
        if architecture.startswith("Gemma2"):
            period = 2
        elif architecture.startswith("Gemma3"):
            period = f.integer("sliding_window_pattern")
        else:
            period = 6  # Gemma4TextConfig
        types = ["sliding_attention" if (i + 1) % period else "full_attention" for i in range(n)]
    if gemma4:
        types[-1] = "full_attention"  # Gemma4TextConfig forces the last layer global
    kinds = tuple(LAYER_TYPE_NAMES[t] for t in types)
    if not set(kinds) <= {LayerKind.FULL, LayerKind.SLIDING}:
        raise InputError(f.source, f.where("layer_types"), "Gemma layers are sliding_attention or full_attention")
    full: AttentionGeometry | None = None
    sharing: tuple[tuple[int, int], ...] = ()
    extra: dict[str, Any] = {}
    if gemma4:
        _require_expert_width(f)
        shared = f.integer("num_kv_shared_layers", default=0, minimum=0) if f.has("num_kv_shared_layers") else 0
        kinds, sharing, extra["unbuildable"] = _share_kv(f, kinds, types, shared)
        kv = heads[1]
        global_dim = f.integer("global_head_dim")
        global_kv = kv
        if f.boolean("attention_k_eq_v") and f.has("num_global_key_value_heads"):
            global_kv = f.integer("num_global_key_value_heads")
        full = AttentionGeometry(global_kv, global_dim, global_dim)
        unset = f.boolean("attention_k_eq_v") and not f.has("num_global_key_value_heads")
        # Gemma4ModelArchConfigConvertor.is_mm_prefix_lm
        extra["mm_prefix_lm"] = f.get("use_bidirectional_attention") == "vision"
        # Gemma4Config.verify_and_update_config: one head size per layer type; when they differ,
        # FlashAttention 4 serves every layer
        extra["family_extra"] = Gemma4Extra(
            global_kv_heads_unset=unset and LayerKind.FULL in kinds,
            fa4_all_layers=len({global_dim if t == "full_attention" else heads[2] for t in types}) > 1,
            mm_modalities=_modalities(f) if architecture == MM_ARCHITECTURE else (),
        )
    sw = window(f)
    if gemma4 and sw is not None and f.get("use_bidirectional_attention") == "all":
        sw = sw // 2 + 1  # Gemma4TextConfig: exclusive bounds for bidirectional attention
    softcap = f.get("attn_logit_softcapping")
    return geometry(
        f,
        architecture,
        "gemma",
        kinds,
        heads=heads,
        sliding_window=sw,
        full_attention=full,
        logits_soft_cap=bool(softcap),
        kv_sharing=sharing,
        **extra,
    )


def _require_expert_width(f: ConfigFields) -> None:
    """A Gemma-4 MoE block (``enable_moe_block`` or ``use_second_mlp_block``, with ``num_experts``: every
    release builds it) needs its experts' width: ``moe_intermediate_size`` (``Gemma4TextConfig``'s
    default is None) or ``expert_intermediate_size``. Without either, ``Gemma4DecoderLayer`` fails:
    0.27.1-0.28.0 hand None to ``FusedMoE`` (its TP split: a ``TypeError``), 0.29.0-0.33.0 refuse it by name.

    :raises InputError: a MoE block without an expert width (vLLM's words of both)."""
    moe = f.boolean("enable_moe_block") or f.boolean("use_second_mlp_block")
    if not moe or f.get("num_experts") is None:
        return
    if f.get("moe_intermediate_size") is not None or f.get("expert_intermediate_size") is not None:
        return
    raise InputError(
        f.source,
        f.where("moe_intermediate_size"),
        "missing with a MoE block (enable_moe_block, num_experts): Gemma4MoE's experts have no width "
        "(vLLM 0.29.0+: Gemma4 MoE requires an expert intermediate size; 0.27.1-0.28.0 fail building them: "
        "TypeError: unsupported operand type(s) for %: 'NoneType' and 'int')",
    )


def _modalities(f: ConfigFields) -> tuple[str, ...]:
    """The modalities ``Gemma4ProcessingInfo.get_supported_mm_limits`` names: image and video,
    audio when the root config has an ``audio_config``."""
    audio = isinstance(f.root.get("audio_config"), dict)
    return ("image", "video", "audio") if audio else ("image", "video")


def engine_args(model: ModelGeometry, args: EngineArgs) -> EngineArgs:
    """Gemma-4's own engine arguments: DiffusionGemma with a speculative config refused
    (:data:`DIFFUSION_ARCHITECTURE`), then :func:`triton_when_no_fa4`, then :func:`batch_floor`."""
    if model.architecture == DIFFUSION_ARCHITECTURE and args.speculative_method is not None:
        # its model class names a model state of its own (get_model_state_cls), which only the V2
        # model runner runs; 0.28.0 refuses ngram and extract_hidden_states there ("Model Runner V2
        # does not yet support ..."); a drafter for a block-diffusion model is not modelled
        raise InputError(
            "--speculative-config",
            str(args.speculative_method),
            f"Model Runner V2 does not yet support {args.speculative_method} speculative decoding (vLLM 0.28.0's "
            f"words; {DIFFUSION_ARCHITECTURE}'s own model state runs only on the V2 model runner): speculative "
            "decoding of a block-diffusion model is not modelled",
        )
    return batch_floor(model, triton_when_no_fa4(model, args))


def triton_when_no_fa4(model: ModelGeometry, args: EngineArgs) -> EngineArgs:
    """``Gemma4Config.verify_and_update_config`` (0.27.1-0.33.0): a Gemma-4 whose sliding and
    global heads differ, on a GPU where FlashAttention 4 does not run (SM 8.x, 12.x:
    ``is_fa_version_supported(4)`` false), with no ``--attention-backend``, gets
    ``attention_config.backend = TRITON_ATTN`` for every layer ("FA4 not available, forcing
    TRITON_ATTN backend"), so the selection that would pick FlashInfer for a model without a
    multimodal prefix never runs, and an fp8 cache below SM 8.9 meets Triton's refusal.

    :returns: ``args`` with ``attention_backend`` ``TRITON_ATTN`` and vLLM's log line as a note,
        or ``args`` unchanged.
    """
    extra = extra_of(model, Gemma4Extra)
    if extra is None or not extra.fa4_all_layers or args.attention_backend is not None:
        return args
    if fa4_available(args.device.capability):
        return args
    note = (
        f"{model.source}: Gemma4 model has heterogeneous head dimensions. FA4 not available, forcing TRITON_ATTN "
        "backend (vLLM's Gemma4Config, for every layer)"
    )
    return args.evolve(attention_backend="TRITON_ATTN", input_notes=(*args.input_notes, note))


def batch_floor(model: ModelGeometry, args: EngineArgs) -> EngineArgs:
    """The multimodal Gemma-4's batch floor (``EngineArgs._set_default_max_num_seqs_and_batched_tokens_args``,
    0.27.1-0.33.0): a multimodal prefix-LM disables chunked multimodal input, so with no
    ``--max-num-batched-tokens`` vLLM raises the default (2048 below 70 GiB and on an A100) to
    the largest item's tokens, :data:`VIDEO_ITEM_TOKENS` (2496), then caps it at
    ``max_num_seqs * max_model_len``. Not when multimodal inputs are off
    (``--language-model-only``, or ``--limit-mm-per-prompt`` 0 for every modality:
    ``supports_multimodal_inputs`` false). The raised figure widens every sliding-window
    layer's blocks per request (``window - 1 + in-flight tokens``). Returns ``args`` with
    ``max_num_batched_tokens`` set and vLLM's log line as a note, or ``args`` unchanged.
    """
    extra = extra_of(model, Gemma4Extra)
    if extra is None or not extra.mm_modalities or not model.attn.mm_prefix_lm:
        return args
    if args.max_num_batched_tokens is not None or args.language_model_only:
        return args
    limits = args.mm_limits or {}
    if all(limits.get(m, 999) == 0 for m in extra.mm_modalities):
        return args
    default = args.resolved_max_num_batched_tokens()
    if default >= VIDEO_ITEM_TOKENS:
        return args
    tokens = VIDEO_ITEM_TOKENS
    if args.max_model_len is not None and args.max_model_len > 0:
        tokens = min(tokens, args.resolved_max_num_seqs() * args.max_model_len)
    note = (
        f"Raising max_num_batched_tokens from {default} to {VIDEO_ITEM_TOKENS} to accommodate 'video' input for "
        f"prefix-LM model {model.source} (vLLM's default, as it raises it for a multimodal Gemma-4; "
        "--language-model-only keeps the default)"
    )
    return args.evolve(max_num_batched_tokens=tokens, input_notes=(*args.input_notes, note))


def _share_kv(
    f: ConfigFields, kinds: tuple[LayerKind, ...], types: list[str], shared: int
) -> tuple[tuple[LayerKind, ...], tuple[tuple[int, int], ...], tuple[int, str, str] | None]:
    """Gemma-4's cross-layer KV sharing (``Gemma4Attention``): each of the last
    ``num_kv_shared_layers`` layers reads the KV cache of the last earlier layer of its type, so
    it keeps no cache of its own (``GPUModelRunner.get_kv_cache_spec`` skips it).

    :returns: (the layer kinds, shared ones ``NONE``; (layer, target) pairs; the first shared layer
        whose type no earlier layer has, with the config field and vLLM's failure building it
        (``ValueError: '<type>' is not in list``), or ``None``: ``LayerNaming.unbuildable``, raised
        where vLLM builds that layer, not here).

    :raises InputError: more shared layers than layers.
    """
    if not shared:
        return kinds, (), None
    n = len(kinds)
    first = n - shared
    if first < 0:
        raise InputError(f.source, f.where("num_kv_shared_layers"), f"{shared} shared layers of {n}")
    out = list(kinds)
    pairs = []
    unbuildable = None
    for i in range(first, n):
        out[i] = LayerKind.NONE
        if types[i] in types[:first]:
            pairs.append((i, first - 1 - types[:first][::-1].index(types[i])))
        elif unbuildable is None:
            why = (
                f"layer {i} ({types[i]}) shares the KV cache of an earlier {types[i]} layer, and there is none "
                f"(vLLM: ValueError: '{types[i]}' is not in list)"
            )
            unbuildable = (i, f.where("num_kv_shared_layers"), why)
    return tuple(out), tuple(pairs), unbuildable


#: ``model_type`` of a Gemma-4 assistant checkpoint (transformers' ``Gemma4AssistantConfig``)
ASSISTANT = "gemma4_assistant"
#: the architecture vLLM builds a Gemma-4 assistant as (``gemma4_mtp.py`` ``Gemma4MTP``)
MTP_ARCHITECTURE = "Gemma4MTPModel"


def assistant_overrides(data: dict[str, Any], method: str, source: str) -> dict[str, Any] | None:
    """The rewrite vLLM's ``SpeculativeConfig.hf_config_override`` makes of a Gemma-4 assistant
    drafter's config: architecture ``Gemma4MTPModel`` and ``num_kv_shared_layers`` 0 (its layers
    share the target's caches instead, wired by the proposer); ``None`` for other drafters.

    :raises InputError: a Gemma-4 assistant under a method other than ``mtp``, or the unified
        assistant (not verified).
    """
    model_type = data.get("model_type")
    if model_type == "gemma4_unified_assistant":
        raise InputError(source, "model_type", "the Gemma-4 unified assistant drafter is not verified: not modelled")
    if model_type != ASSISTANT:
        return None
    if method != "mtp":
        raise InputError(
            source,
            "model_type",
            f'a Gemma-4 assistant drafts with "method": "mtp" (vLLM builds it as {MTP_ARCHITECTURE}); method '
            f"{method!r} is not modelled",
        )
    out: dict[str, Any] = {"architectures": [MTP_ARCHITECTURE]}
    if isinstance(data.get("text_config"), dict):
        out["text_config"] = {"num_kv_shared_layers": 0}
    else:
        out["num_kv_shared_layers"] = 0
    return out


def share_with_target(drafter: ModelGeometry, target: ModelGeometry) -> ModelGeometry:
    """A Gemma-4 assistant's layers after ``Gemma4Proposer._setup_gemma4_kv_sharing``
    (``v1/spec_decode/gemma4.py``): each draft layer reads the KV cache of the last target layer
    of its type that keeps its own (not KV-shared), so it keeps none
    (``GPUModelRunner.get_kv_cache_spec`` skips it).

    :raises InputError: a target that is not Gemma-4 (the proposer reads its ``layer_types``
        and shares its embeddings: not verified), or a draft layer type the target's own layers
        lack (the draft layer would keep its own cache: not verified).
    """
    if not target.architecture.startswith("Gemma4") or target.family != "gemma":
        raise InputError(
            drafter.source,
            "architectures",
            f"a Gemma-4 assistant drafting for {target.architecture} is not verified (the proposer maps its layers "
            "onto a Gemma-4 target's layer_types): not modelled",
        )
    own = {k for k in target.layer_kinds if k in (LayerKind.FULL, LayerKind.SLIDING)}
    missing = sorted({k.value for k in drafter.layer_kinds if k.is_attention and k not in own})
    if missing:
        raise InputError(
            drafter.source,
            "layer_types",
            f"draft layers of kind {', '.join(missing)} have no target layer of their type to share a KV cache "
            "with, so vLLM gives them their own: not verified, not modelled",
        )
    return replace(drafter, layer_kinds=(LayerKind.NONE,) * len(drafter.layer_kinds))


def verify_release(model: ModelGeometry, rules: VersionRules) -> None:
    """Gemma-4 with ``attention_k_eq_v`` full-attention layers but no
    ``num_global_key_value_heads``: releases with switch ``gemma4_global_kv_heads_required``
    fail building it.

    :raises InputError: naming ``num_global_key_value_heads``.
    """
    extra = extra_of(model, Gemma4Extra)
    if rules.gemma4_global_kv_heads_required and extra is not None and extra.global_kv_heads_unset:
        raise InputError(
            model.source,
            "num_global_key_value_heads",
            "attention_k_eq_v full-attention layers need num_global_key_value_heads: this vLLM release fails "
            "to build the model without it (TypeError: '>=' not supported between instances of 'NoneType' and 'int')",
        )


def fa4_all_layers(model: ModelGeometry, requested: str | None) -> bool:
    """Whether every attention layer runs on FlashAttention 4 (``Gemma4Config`` with
    heterogeneous head sizes, when FlashAttention serves the model: ``--attention-backend``
    unset or ``FLASH_ATTN``)."""
    extra = extra_of(model, Gemma4Extra)
    return extra is not None and extra.fa4_all_layers and requested in (None, "FLASH_ATTN")


def head_size_is_widest(model: ModelGeometry) -> bool:
    """Gemma-4: vLLM converts its config layer by layer (``gemma4_layer_config``: a full-attention layer
    takes ``global_head_dim``), so ``ModelConfig.get_head_size`` is the widest layer's head
    (``ModelArchitectureConfig.from_layers`` collapses differing fields with ``max``)."""
    return extra_of(model, Gemma4Extra) is not None

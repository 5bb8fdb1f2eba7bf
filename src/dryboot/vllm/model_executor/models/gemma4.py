"""Gemma-4 (``gemma4.py``, ``Gemma4ForCausalLM``; ``gemma4_mm.py``,
``Gemma4ForConditionalGeneration``), unquantized.

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

Refused by name: per-layer input embeddings (``hidden_size_per_layer_input``), KV-shared layers
(``num_kv_shared_layers``), ``use_double_wide_mlp``, an audio tower, quantized checkpoints.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from dryboot.errors import InputError
from dryboot.vllm.model_executor.model_loader import weights as W
from dryboot.vllm.model_executor.models.compose import Family, WalkArgs, built_text, config_only, vision_language

#: fields whose value other than these adds modules this module does not build (refused by name)
UNMODELLED = {"hidden_size_per_layer_input": 0, "num_kv_shared_layers": 0, "use_double_wide_mlp": False}


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


def text_walk(config: Mapping[str, Any], par: W.Parallel, args: WalkArgs) -> W.RankWeights:
    """One rank of one stage of the text model (module docstring).

    :raises InputError: a quantized checkpoint, a field in :data:`UNMODELLED`, sizes TP does not
        divide, a rope type whose table is not modelled, checkpoint headers (not mapped)."""
    config_only(config, args)
    if W.quant_from_config(config, args.hf_quant).method is not None:
        raise InputError("quantization_config", "quant_method", "quantized Gemma-4 layouts are not modelled")
    _refuse_unmodelled(config)
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
        counts = [(nq_r + 2 * kv_r) * hd * h, h * nq_r * hd, hd, hd, *[h] * 4, 2 * i_r * h, h * i_r]
        if moe:
            e = W._int(config, "num_experts")
            counts += [h, h, h, h, e * h, e]  # three norms, router scale and proj, per-expert scale
        for n in counts:
            w.own("layer", n * ab)
        if moe:
            e_i = W._int(config, "moe_intermediate_size")
            e_r, ei_r = W.experts_per_rank(e, e_i, tp, par, "moe_intermediate_size")
            for k, nbytes in W.experts_bytes(W.Quant(), e_r, h, ei_r, ab):
                w.own(k, nbytes)
            if par.expert_parallel:
                w.own("expert map", 4 * e, buffer=True)
            w.own("router", ab, buffer=True)  # root_size
        w.own("layer scalar", ab, buffer=True)
        # RMSNorms without a learned scale keep their ones as a plain tensor attribute, allocated
        # with the model but neither parameter nor buffer: the value norm, and the router's
        w.ref.allocated_bytes += _blocks(hd * ab) + (_blocks(h * ab) if moe else 0)
        w.own("attention scales", 16, buffer=True)
        w.ref.allocated_bytes += w.attention_blocks * W.ALLOC_ROUND
    positions = W._int(config, "max_position_embeddings")
    for kind in sorted(seen):
        rope = (config.get("rope_parameters") or {}).get(kind) or {"rope_type": "default"}
        rope_type = str(rope.get("rope_type", "default"))
        if rope_type not in ("default", "proportional"):
            raise InputError(
                "config.json", "rope_parameters", f"the rotary table of rope type {rope_type!r} is not modelled"
            )
        w.own("rotary", positions * kinds[kind][0] * ab, buffer=True)
    return w.result()


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


def vision_tower(vision: Mapping[str, Any], text: Mapping[str, Any], tp: int, ab: int) -> W.RankWeights:
    """``Gemma4VisionModel`` and its projector on one rank, replicated (module docstring)."""
    v = vision_widths(vision)
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
    "Gemma4ForConditionalGeneration": vision_language("Gemma4ForCausalLM", vision_tower, prepare=_text_of),
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

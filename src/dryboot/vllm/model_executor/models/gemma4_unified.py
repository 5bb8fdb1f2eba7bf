"""Gemma-4 Unified (``gemma4_unified.py``, ``Gemma4UnifiedForConditionalGeneration``), unquantized:
the Gemma-4 text model of ``text_config`` (:func:`.gemma4.text_walk`, built as
``Gemma4ForCausalLM`` over the ``Gemma4UnifiedTextConfig`` defaults of ``models.wrappers``) and,
instead of a vision tower, an encoder-free patch embedder built on every rank and every pipeline
stage whatever the limits (vLLM builds it outside ``_mark_tower_model``: ``--language-model-only``
keeps it):

* ``vision_embedder``: ``patch_ln1`` (LayerNorm ``[P]``, weight and bias, ``P = (patch_size x
  pooling_kernel_size)^2 x 3``), ``patch_dense`` (``ColumnParallelLinear`` ``[D / TP, P]`` and
  bias ``[D / TP]``, ``D = mm_embed_dim``), ``patch_ln2`` and ``pos_norm`` (LayerNorm ``[D]``),
  ``pos_embedding`` ``[mm_posemb_size, 2, D]``;
* ``embed_vision`` (``gemma4_mm.py`` ``Gemma4MultimodalEmbedder``): ``embedding_projection``
  ``[H_text, E]`` replicated, ``E = output_proj_dims`` (else the vision ``hidden_size``), and its
  scale-less pre-projection norm's ones ``[E]`` (a plain attribute: allocated only).

``vision_config`` takes transformers' ``Gemma4UnifiedVisionConfig`` defaults (the same in the
transformers of vLLM 0.27.1, 0.28.0, 0.30.0 and 0.33.0's boot environments). Refused by name: an
audio embedder (``audio_config``), a missing ``vision_config``, quantized checkpoints."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from dryboot.errors import InputError
from dryboot.vllm.model_executor.model_loader import weights as W
from dryboot.vllm.model_executor.models.compose import Family, WalkArgs, merged, unquantized
from dryboot.vllm.model_executor.models.gemma4 import text_as_built, text_walk

#: transformers' ``Gemma4UnifiedVisionConfig`` defaults the embedder reads
VISION_DEFAULTS: dict[str, Any] = {
    "patch_size": 16,
    "pooling_kernel_size": 3,
    "mm_embed_dim": 3840,
    "mm_posemb_size": 1120,
    "output_proj_dims": 3840,
}


def vision_embedder(vision: Mapping[str, Any], text_hidden: int, tp: int, ab: int) -> W.RankWeights:
    """The patch embedder and its projector on one rank (module docstring).

    :raises InputError: a width missing or bad, ``mm_embed_dim`` TP does not divide."""
    v = {**VISION_DEFAULTS, **vision}
    side = W._int(v, "patch_size") * W._int(v, "pooling_kernel_size")
    p, d = side * side * 3, W._int(v, "mm_embed_dim")
    d_r = W._divide(d, tp, "vision_config.mm_embed_dim")
    e = W._int(v, "output_proj_dims") if v.get("output_proj_dims") else W._int(v, "hidden_size")
    w = W.RankWeights()
    for n in (p, p, d_r * p, d_r, d, d, W._int(v, "mm_posemb_size") * 2 * d, d, d, text_hidden * e):
        w.add("vision", n * ab)
    w.allocated_bytes += -(-e * ab // W.ALLOC_ROUND) * W.ALLOC_ROUND  # the norm's ones (an attribute)
    return w


def walk(config: Mapping[str, Any], par: W.Parallel, args: WalkArgs) -> W.RankWeights:
    """One rank of one stage (module docstring).

    :raises InputError: a quantization method, checkpoint headers, an audio embedder, a missing
        ``vision_config``, what :func:`.gemma4.text_walk` refuses."""
    config, _ = unquantized(config, args)
    if config.get("audio_config"):
        raise InputError("config.json", "audio_config", "Gemma-4 Unified's audio embedder is not modelled")
    vision = config.get("vision_config")
    if not isinstance(vision, Mapping):
        raise InputError("config.json", "vision_config", "Gemma-4 Unified needs a vision_config object")
    text = text_as_built(config)
    weights = text_walk(text, par, args)
    return merged(
        weights, vision_embedder(vision, W._int(text, "hidden_size"), par.tp, W.model_dtype_bytes(text, args.dtype))
    )


FAMILIES: dict[str, Family] = {"Gemma4UnifiedForConditionalGeneration": Family(walk)}

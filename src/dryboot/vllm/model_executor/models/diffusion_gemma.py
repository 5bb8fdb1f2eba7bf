"""DiffusionGemma (``diffusion_gemma.py``, ``DiffusionGemmaForBlockDiffusion``), unquantized: the
Gemma-4 text model of ``text_config`` (``Gemma4Model``, :func:`.gemma4.text_walk`, with
``attention_k_eq_v`` forced as the class forces it) under its tied head, the self-conditioning
MLP (``DiffusionGemmaSelfConditioning``: plain ``nn.Linear`` layers, whole on every rank:
``pre_norm`` ``[H]``, ``gate_proj`` / ``up_proj`` ``[S, H]``, ``down_proj`` ``[H, S]``, ``S =
self_conditioning_size`` or the text ``intermediate_size``, and the scale-less ``post_norm``'s
ones ``[H]``, a plain attribute: allocated only), and, unless the tower is off
(``--language-model-only`` or image and video limited to 0: ``_mark_tower_model``), the Gemma-4
vision tower and its projector (:func:`.gemma4.vision_tower`; a ``vision_config`` of only its
``model_type`` takes transformers' ``Gemma4VisionConfig`` defaults). The class has no
``SupportsPP``: pipeline parallelism is refused, as vLLM refuses it. Refused by name: a missing
``vision_config``, an untied head, quantized checkpoints, and what the Gemma-4 text model
refuses."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from dryboot.errors import InputError
from dryboot.vllm.model_executor.model_loader import weights as W
from dryboot.vllm.model_executor.models.compose import Family, WalkArgs, merged, unquantized, without_pp
from dryboot.vllm.model_executor.models.gemma4 import VISION_DEFAULTS, text_as_built, text_walk, vision_tower


def self_conditioning(text: Mapping[str, Any], size: int, ab: int) -> W.RankWeights:
    """``DiffusionGemmaSelfConditioning`` on one rank (module docstring)."""
    h = W._int(text, "hidden_size")
    w = W.RankWeights()
    for n in (h, size * h, size * h, h * size):
        w.add("self conditioning", n * ab)
    w.allocated_bytes += -(-h * ab // W.ALLOC_ROUND) * W.ALLOC_ROUND  # post_norm's ones (an attribute)
    return w


def walk(config: Mapping[str, Any], par: W.Parallel, args: WalkArgs) -> W.RankWeights:
    """One rank (module docstring).

    :raises InputError: a quantization method, checkpoint headers, an untied head, what
        :func:`.gemma4.text_walk` refuses."""
    config, _ = unquantized(config, args)
    text = text_as_built(config)
    if not text.get("tie_word_embeddings", True):
        raise InputError("config.json", "tie_word_embeddings", "an untied DiffusionGemma head is not modelled")
    ab = W.model_dtype_bytes(text, args.dtype)
    size = config.get("self_conditioning_size") or W._int(text, "intermediate_size")
    weights = merged(text_walk(text, par, args), self_conditioning(text, W._int({"s": size}, "s"), ab))
    vision = config.get("vision_config")
    if not isinstance(vision, Mapping):
        # vLLM 0.28.0's own config class builds no tower without one; transformers' (0.33.0)
        # reads its sub-configs by its own rules: not verified
        raise InputError(
            "config.json", "vision_config", "a DiffusionGemma without a vision_config object is not modelled"
        )
    if args.no_tower:
        return weights
    return merged(weights, vision_tower({**VISION_DEFAULTS, **vision}, text, par.tp, ab))


FAMILIES: dict[str, Family] = {"DiffusionGemmaForBlockDiffusion": without_pp(Family(walk, ("image", "video")))}

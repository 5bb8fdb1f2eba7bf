"""LLaVA-OneVision (``llava_onevision.py``, ``LlavaOnevisionForConditionalGeneration``): the
language model of ``text_config`` built as the architecture it names
(``init_vllm_registered_model``; LlavaOnevisionConfig's default text model is Qwen2), then on every
TP rank and pipeline stage the vision tower (:func:`.llava.init_vision_tower`: SigLIP by default,
up to ``vision_feature_layer``, -1 by default, no post norm) and the projector
(:func:`.llava.whole_projector`, biases under ``multimodal_projector_bias``, true by default). One
tower for images and videos: ``--language-model-only`` or ``--limit-mm-per-prompt`` with image and
video 0 drops it and the projector; ``image_newline`` ``[H_text]``, a plain parameter of the
wrapper, stays either way (as LLaVA-NeXT's).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from dryboot.vllm.model_executor.model_loader import weights as W
from dryboot.vllm.model_executor.models import llava
from dryboot.vllm.model_executor.models.compose import (
    Family,
    WalkArgs,
    text_config,
    vision_language,
    wrapped_text_architecture,
)
from dryboot.vllm.model_executor.models.towers import tensors

#: ``LlavaOnevisionConfig``'s defaults (transformers 5.x) for the wrapper's own fields
DEFAULTS: dict[str, Any] = {"vision_feature_layer": -1, "multimodal_projector_bias": True}
MODALITIES = ("image", "video")


def _walk(config: Mapping[str, Any], par: W.Parallel, args: WalkArgs) -> W.RankWeights:
    config = {**DEFAULTS, **config}

    def tower(v: Mapping[str, Any], text: Mapping[str, Any], tp: int, ab: int) -> W.RankWeights:
        w = llava.init_vision_tower(config, v, tp, ab, "siglip_vision_model", par.vllm_version)
        bias = bool(config["multimodal_projector_bias"])
        return tensors("vision", llava.whole_projector(v, text, bias, "siglip_vision_model"), ab, into=w)

    text_arch = wrapped_text_architecture(config, str(config["architectures"][0]))
    weights = vision_language(text_arch, tower, modalities=MODALITIES, text_of=text_config).walk(config, par, args)
    # image_newline: a plain parameter of the wrapper (no module for vLLM's tower marking to
    # drop), kept without the tower too
    text = {**config, **(config.get("text_config") or {})}
    weights.add("vision", W._int(text, "hidden_size") * W.model_dtype_bytes(text, args.dtype))
    return weights


FAMILIES: dict[str, Family] = {"LlavaOnevisionForConditionalGeneration": Family(_walk, MODALITIES)}

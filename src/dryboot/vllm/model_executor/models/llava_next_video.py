"""LLaVA-NeXT-Video (``llava_next_video.py``, ``LlavaNextVideoForConditionalGeneration``): the
language model of ``text_config`` built as the architecture it names
(``init_vllm_registered_model``; LlavaNextVideoConfig's default text model is Llama), then on every
TP rank and pipeline stage the vision tower (:func:`.llava.init_vision_tower`: CLIP by default, up
to ``vision_feature_layer``, -2 by default, no post norm), the pooler (an ``AvgPool2d`` or
``MaxPool2d``: no tensors; another ``spatial_pool_mode`` is refused, as vLLM refuses it) and the
projector (:func:`.llava.whole_projector`, biases under ``multimodal_projector_bias``, true by
default). The tower is marked for videos alone: ``--language-model-only`` or
``--limit-mm-per-prompt`` video 0 drops it and the projector.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from dryboot.errors import InputError
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

#: ``LlavaNextVideoConfig``'s defaults (transformers 5.x) for the wrapper's own fields
DEFAULTS: dict[str, Any] = {
    "vision_feature_layer": -2,
    "multimodal_projector_bias": True,
    "spatial_pool_mode": "average",
}
MODALITIES = ("video",)


def _walk(config: Mapping[str, Any], par: W.Parallel, args: WalkArgs) -> W.RankWeights:
    config = {**DEFAULTS, **config}
    if config["spatial_pool_mode"] not in ("average", "max"):
        raise InputError(
            "config.json",
            "spatial_pool_mode",
            f"{config['spatial_pool_mode']!r}: vLLM's pooler takes average or max only (it refuses this one)",
        )

    def tower(v: Mapping[str, Any], text: Mapping[str, Any], tp: int, ab: int) -> W.RankWeights:
        w = llava.init_vision_tower(config, v, tp, ab, "clip_vision_model", par.vllm_version)
        bias = bool(config["multimodal_projector_bias"])
        return tensors("vision", llava.whole_projector(v, text, bias, "clip_vision_model"), ab, into=w)

    text_arch = wrapped_text_architecture(config, str(config["architectures"][0]))
    return vision_language(text_arch, tower, modalities=MODALITIES, text_of=text_config).walk(config, par, args)


FAMILIES: dict[str, Family] = {"LlavaNextVideoForConditionalGeneration": Family(_walk, MODALITIES)}

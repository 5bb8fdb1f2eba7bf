"""Qwen3-Omni (``qwen3_omni_moe_thinker.py``, ``Qwen3OmniMoeForConditionalGeneration``, the thinker
vLLM serves): the Qwen3-MoE language model of ``thinker_config.text_config``, then on every TP rank
and pipeline stage the audio encoder (:func:`.qwen3_asr.audio_tower`) and the Qwen3-VL vision
transformer (:func:`.qwen3_vl.vision_tower`, its deepstack mergers included).
``--language-model-only``, or ``--limit-mm-per-prompt`` 0 for audio, image and video, drops both
(vLLM keeps the towers of any modality left)."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from dryboot.vllm.model_executor.model_loader import weights as W
from dryboot.vllm.model_executor.models.compose import Family, merged, vision_language
from dryboot.vllm.model_executor.models.qwen3_asr import audio_tower, thinker
from dryboot.vllm.model_executor.models.qwen3_vl import vision_tower


def _towers(t: Mapping[str, Any], text: Mapping[str, Any], tp: int, ab: int) -> W.RankWeights:
    return merged(audio_tower(t["audio_config"], text, tp, ab), vision_tower(t["vision_config"], text, tp, ab))


FAMILIES: dict[str, Family] = {
    "Qwen3OmniMoeForConditionalGeneration": vision_language(
        "Qwen3MoeForCausalLM",
        _towers,
        ("audio", "image", "video"),
        text_of=lambda c: thinker(c, "text_config"),
        tower_of=lambda c: c.get("thinker_config"),
    ),
}

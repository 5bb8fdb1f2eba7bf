"""Qwen3-Omni (``qwen3_omni_moe_thinker.py``, ``Qwen3OmniMoeForConditionalGeneration``, the thinker
vLLM serves): the Qwen3-MoE language model of ``thinker_config.text_config``, then on every TP rank
and pipeline stage the audio encoder (:func:`.qwen3_asr.audio_tower`) and the Qwen3-VL vision
transformer (:func:`.qwen3_vl.vision_tower`, its deepstack mergers included).
``--language-model-only`` drops both; ``--limit-mm-per-prompt`` audio 0 the audio encoder, image 0
and video 0 the vision transformer (vLLM marks each tower for its modalities). The thinker keeps
Qwen3-VL's deepstack feature buffers where it builds the vision transformer
(:func:`.qwen3_vl.deepstack_buffers`)."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from dryboot.vllm.model_executor.model_loader import weights as W
from dryboot.vllm.model_executor.models.compose import Family, vision_language
from dryboot.vllm.model_executor.models.qwen3_asr import audio_tower, thinker
from dryboot.vllm.model_executor.models.qwen3_vl import vision_tower, with_deepstack


def _audio(t: Mapping[str, Any], text: Mapping[str, Any], tp: int, ab: int) -> W.RankWeights:
    return audio_tower(t.get("audio_config") or {}, text, tp, ab)


def _visual(t: Mapping[str, Any], text: Mapping[str, Any], tp: int, ab: int) -> W.RankWeights:
    return vision_tower(t.get("vision_config") or {}, text, tp, ab)


def _thinker(c: Mapping[str, Any]) -> Mapping[str, Any]:
    t = c.get("thinker_config")
    return t if isinstance(t, Mapping) else {}


FAMILIES: dict[str, Family] = {
    "Qwen3OmniMoeForConditionalGeneration": with_deepstack(
        vision_language(
            "Qwen3MoeForCausalLM",
            ((("audio",), _audio), (("image", "video"), _visual)),
            text_of=lambda c: thinker(c, "text_config"),
            tower_of=lambda c: c.get("thinker_config"),
        ),
        lambda c: thinker(c, "text_config"),
        lambda c: _thinker(c).get("vision_config"),
        ("image", "video"),
    ),
}

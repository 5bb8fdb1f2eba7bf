"""Qwen3-ASR (``qwen3_asr.py``, ``Qwen3ASRForConditionalGeneration``; ``qwen3_asr_realtime.py``,
``Qwen3ASRRealtimeGeneration``): the Qwen3 language model of ``thinker_config.text_config``, then
on every TP rank and pipeline stage Qwen3-Omni's audio encoder
(:func:`.towers.qwen3_audio_encoder`, sharded) with its float32 sinusoidal positions
``[max_source_positions, d_model]``. ``--language-model-only`` or ``--limit-mm-per-prompt`` audio 0
drops it."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from dryboot.vllm.model_executor.model_loader import weights as W
from dryboot.vllm.model_executor.models.compose import Family, vision_language
from dryboot.vllm.model_executor.models.towers import qwen3_audio_encoder, sinusoids, tensors


def thinker(config: Mapping[str, Any], key: str) -> Any:
    """``thinker_config[key]`` (the Omni and ASR wrappers keep their sub-configs there)."""
    t = config.get("thinker_config")
    return t.get(key) if isinstance(t, Mapping) else None


def audio_tower(a: Mapping[str, Any], text: Mapping[str, Any], tp: int, ab: int) -> W.RankWeights:
    """Qwen3-Omni's audio encoder on one rank, its position buffer included."""
    return tensors("audio", qwen3_audio_encoder(a, tp), ab, buffers=[sinusoids(a)])


_FAMILY = vision_language(
    "Qwen3ForCausalLM",
    audio_tower,
    ("audio",),
    text_of=lambda c: thinker(c, "text_config"),
    tower_of=lambda c: thinker(c, "audio_config"),
)
FAMILIES: dict[str, Family] = {
    "Qwen3ASRForConditionalGeneration": _FAMILY,
    "Qwen3ASRRealtimeGeneration": _FAMILY,
}

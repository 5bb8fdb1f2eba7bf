"""Qwen2.5-Omni (``qwen2_5_omni_thinker.py``: ``Qwen2_5OmniForConditionalGeneration`` and
``Qwen2_5OmniModel``, the thinker vLLM serves): the Qwen2 language model of
``thinker_config.text_config`` (multimodal RoPE, :func:`.qwen2_vl.mrope_text`; its head tied unless
the config says otherwise), then on every TP rank and pipeline stage:

* the audio encoder (transformers' Whisper-style layers, not sharded:
  :func:`.towers.whisper_encoder` without learned positions), ``ln_post``, ``proj``
  ``[output_dim, D]`` + bias, ``audio_bos_eos_token`` ``[2, output_dim]``, the float32
  sinusoidal positions ``[max_source_positions, D]``;
* the Qwen2.5-VL vision transformer (:func:`.qwen2_vl.qwen2_5_vl_tower`, without the device-side
  input normalization's buffers).

``--language-model-only`` drops both; ``--limit-mm-per-prompt`` audio 0 the audio encoder, image 0
and video 0 the vision transformer (vLLM marks each tower for its modalities)."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from dryboot.vllm.model_executor.model_loader import weights as W
from dryboot.vllm.model_executor.models.compose import Family, vision_language
from dryboot.vllm.model_executor.models.moss_transcribe_diarize import tied
from dryboot.vllm.model_executor.models.qwen2_vl import mrope_text, qwen2_5_vl_tower
from dryboot.vllm.model_executor.models.qwen3_asr import thinker
from dryboot.vllm.model_executor.models.towers import linear, sinusoids, tensors, whisper_encoder


def _audio(t: Mapping[str, Any], text: Mapping[str, Any], tp: int, ab: int) -> W.RankWeights:
    a = t.get("audio_config") or {}
    out = W._int(a, "output_dim")
    counts = whisper_encoder(a, tp, shard=False, positions=False) + linear(out, W._int(a, "d_model")) + [2 * out]
    return tensors("audio", counts, ab, buffers=[sinusoids(a)])


def _visual(t: Mapping[str, Any], text: Mapping[str, Any], tp: int, ab: int) -> W.RankWeights:
    return qwen2_5_vl_tower(t.get("vision_config") or {}, text, tp, ab, input_norm=False)


_FAMILY = vision_language(
    "Qwen2ForCausalLM",
    ((("audio",), _audio), (("image", "video"), _visual)),
    prepare=lambda t: tied(mrope_text(t)),
    text_of=lambda c: thinker(c, "text_config"),
    tower_of=lambda c: c.get("thinker_config"),
)
FAMILIES: dict[str, Family] = {
    "Qwen2_5OmniForConditionalGeneration": _FAMILY,
    "Qwen2_5OmniModel": _FAMILY,
}

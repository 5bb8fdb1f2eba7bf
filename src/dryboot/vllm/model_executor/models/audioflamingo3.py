"""Audio Flamingo 3 (``audioflamingo3.py``, ``AudioFlamingo3ForConditionalGeneration``): the Qwen2
language model of ``text_config``, then on every TP rank and pipeline stage transformers' Whisper-
style audio encoder (:func:`.qwen2_audio.audio_wrapper`, not sharded; its config names the sizes
``hidden_size``, ``num_hidden_layers``, ``intermediate_size``) and the projector ``linear_1``
``[H_text, D]`` + bias, ``linear_2`` ``[H_text, H_text]`` + bias. ``--language-model-only`` or
``--limit-mm-per-prompt`` audio 0 drops them."""

from __future__ import annotations

from typing import Any

from dryboot.vllm.model_executor.models.compose import Family
from dryboot.vllm.model_executor.models.qwen2_audio import audio_wrapper
from dryboot.vllm.model_executor.models.towers import linear

#: ``AudioFlamingo3EncoderConfig``'s defaults (transformers 5.x) for what an ``audio_config``
#: leaves out
DEFAULTS: dict[str, Any] = {
    "num_mel_bins": 128,
    "num_hidden_layers": 32,
    "intermediate_size": 5120,
    "hidden_size": 1280,
    "max_source_positions": 1500,
}
KEYS = {"d_model": "hidden_size", "encoder_ffn_dim": "intermediate_size", "encoder_layers": "num_hidden_layers"}

FAMILIES: dict[str, Family] = {
    "AudioFlamingo3ForConditionalGeneration": audio_wrapper(DEFAULTS, lambda d, h: linear(h, d) + linear(h, h), KEYS),
}

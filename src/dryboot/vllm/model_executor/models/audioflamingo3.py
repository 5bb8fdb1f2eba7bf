"""Audio Flamingo 3 (``audioflamingo3.py``, ``AudioFlamingo3ForConditionalGeneration``): the Qwen2
language model of ``text_config``, then on every TP rank and pipeline stage transformers' Whisper-
style audio encoder (:func:`.qwen2_audio.audio_encoder`, not sharded; its config names the sizes
``hidden_size``, ``num_hidden_layers``, ``intermediate_size``) and the projector ``linear_1``
``[H_text, D]`` + bias, ``linear_2`` ``[H_text, H_text]`` + bias. ``--language-model-only`` or
``--limit-mm-per-prompt`` audio 0 drops them."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from dryboot.vllm.model_executor.model_loader import weights as W
from dryboot.vllm.model_executor.models.compose import Family, WalkArgs, vision_language
from dryboot.vllm.model_executor.models.qwen2_audio import audio_encoder

#: ``AudioFlamingo3EncoderConfig``'s defaults (transformers 5.x) for what an ``audio_config``
#: leaves out
DEFAULTS: dict[str, Any] = {
    "num_mel_bins": 128,
    "num_hidden_layers": 32,
    "intermediate_size": 5120,
    "hidden_size": 1280,
    "max_source_positions": 1500,
}


def _tower(a: Mapping[str, Any], text: Mapping[str, Any], tp: int, ab: int) -> W.RankWeights:
    a = {**DEFAULTS, **a}
    d = W._int(a, "hidden_size")
    w = audio_encoder(
        d,
        W._int(a, "intermediate_size"),
        W._int(a, "num_hidden_layers"),
        W._int(a, "num_mel_bins"),
        W._int(a, "max_source_positions"),
        ab,
    )
    h = W._int(text, "hidden_size")
    for n in (h * d, h, h * h, h):
        w.add("audio", n * ab)
    return w


def walk(config: Mapping[str, Any], par: W.Parallel, args: WalkArgs) -> W.RankWeights:
    """One rank of one stage (module docstring): the audio tower read from ``audio_config``."""
    wrapped = {k: v for k, v in config.items() if k != "audio_config"}
    wrapped["vision_config"] = dict(config.get("audio_config") or {})
    return vision_language("Qwen2ForCausalLM", _tower, modalities=("audio",)).walk(wrapped, par, args)


FAMILIES: dict[str, Family] = {"AudioFlamingo3ForConditionalGeneration": Family(walk, ("audio",))}

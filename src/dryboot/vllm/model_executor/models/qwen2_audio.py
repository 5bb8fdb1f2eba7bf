"""Qwen2-Audio (``qwen2_audio.py``, ``Qwen2AudioForConditionalGeneration``): the Qwen2 language
model of ``text_config``, then on every TP rank and pipeline stage transformers' own Whisper-style
audio encoder (``Qwen2AudioEncoder``, not sharded: :func:`.towers.whisper_encoder`) and the
projector, in the model dtype: ``conv1`` ``[D, num_mel_bins, 3]`` + bias, ``conv2`` ``[D, D, 3]`` +
bias, ``embed_positions`` ``[max_source_positions, D]``; per layer ``q_proj`` + bias, ``k_proj``
(no bias), ``v_proj`` + bias, ``out_proj`` + bias (``[D, D]`` each), two LayerNorms (weight,
bias), ``fc1`` ``[F, D]`` + bias, ``fc2`` ``[D, F]`` + bias; the final LayerNorm;
``multi_modal_projector.linear`` ``[H_text, D]`` + bias. ``--language-model-only`` or
``--limit-mm-per-prompt`` audio 0 drops them. :func:`audio_wrapper` builds the wrappers of this
encoder (Audio Flamingo 3 too)."""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any

from dryboot.vllm.model_executor.model_loader import weights as W
from dryboot.vllm.model_executor.models.compose import Family, vision_language
from dryboot.vllm.model_executor.models.towers import linear, tensors, whisper_encoder

#: ``Qwen2AudioEncoderConfig``'s defaults (transformers 5.x) for what an ``audio_config`` leaves out
DEFAULTS: dict[str, Any] = {
    "num_mel_bins": 128,
    "encoder_layers": 32,
    "encoder_ffn_dim": 5120,
    "d_model": 1280,
    "max_source_positions": 1500,
}


def audio_wrapper(
    defaults: Mapping[str, Any],
    projector: Callable[[int, int], list[int]],
    keys: Mapping[str, str] | None = None,
) -> Family:
    """A Qwen2 language model and transformers' Whisper-style encoder of ``audio_config`` (over
    ``defaults``; ``keys``: the config's names of ``d_model``, ``encoder_ffn_dim``,
    ``encoder_layers``), then ``projector(D, H_text)``'s tensors."""
    width = (keys or {}).get("d_model", "d_model")

    def tower(a: Mapping[str, Any], text: Mapping[str, Any], tp: int, ab: int) -> W.RankWeights:
        a = {**defaults, **a}
        counts = whisper_encoder(a, tp, shard=False, keys=keys)
        return tensors("audio", counts + projector(W._int(a, width), W._int(text, "hidden_size")), ab)

    return vision_language("Qwen2ForCausalLM", tower, ("audio",), tower_of=lambda c: dict(c.get("audio_config") or {}))


FAMILIES: dict[str, Family] = {
    "Qwen2AudioForConditionalGeneration": audio_wrapper(DEFAULTS, lambda d, h: linear(h, d)),
}

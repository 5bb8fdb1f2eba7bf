"""Qwen2-Audio (``qwen2_audio.py``, ``Qwen2AudioForConditionalGeneration``): the Qwen2 language
model of ``text_config``, then on every TP rank and pipeline stage transformers' own Whisper-style
audio encoder (``Qwen2AudioEncoder``, not sharded) and the projector, in the model dtype:
``conv1`` ``[D, num_mel_bins, 3]`` + bias, ``conv2`` ``[D, D, 3]`` + bias, ``embed_positions``
``[max_source_positions, D]``; per layer ``q_proj`` + bias, ``k_proj`` (no bias), ``v_proj`` +
bias, ``out_proj`` + bias (``[D, D]`` each), two LayerNorms (weight, bias), ``fc1`` ``[F, D]`` +
bias, ``fc2`` ``[D, F]`` + bias; the final LayerNorm; ``multi_modal_projector.linear`` ``[H_text,
D]`` + bias. ``--language-model-only`` or ``--limit-mm-per-prompt`` audio 0 drops them."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from dryboot.vllm.model_executor.model_loader import weights as W
from dryboot.vllm.model_executor.models.compose import Family, WalkArgs, vision_language

#: ``Qwen2AudioEncoderConfig``'s defaults (transformers 5.x) for what an ``audio_config`` leaves out
DEFAULTS: dict[str, Any] = {
    "num_mel_bins": 128,
    "encoder_layers": 32,
    "encoder_ffn_dim": 5120,
    "d_model": 1280,
    "max_source_positions": 1500,
}


def audio_encoder(d: int, f: int, layers: int, mels: int, positions: int, ab: int) -> W.RankWeights:
    """transformers' Whisper-style encoder (whole on every rank, module docstring), ``d`` wide
    with ``layers`` layers of FFN width ``f`` over ``mels`` mel bins, ``positions`` positions;
    without the projector."""
    sizes = [d * mels * 3, d, d * d * 3, d, positions * d]
    # k_proj (no bias), v_proj, q_proj, out_proj (with biases), two LayerNorms, fc1, fc2
    block = [d * d, d * d, d, d * d, d, d * d, d, d, d, f * d, f, d * f, d, d, d]
    sizes += block * layers + [d, d]
    w = W.RankWeights()
    for n in sizes:
        w.add("audio", n * ab)
    return w


def _tower(a: Mapping[str, Any], text: Mapping[str, Any], tp: int, ab: int) -> W.RankWeights:
    a = {**DEFAULTS, **a}
    d = W._int(a, "d_model")
    w = audio_encoder(
        d,
        W._int(a, "encoder_ffn_dim"),
        W._int(a, "encoder_layers"),
        W._int(a, "num_mel_bins"),
        W._int(a, "max_source_positions"),
        ab,
    )
    h = W._int(text, "hidden_size")
    w.add("audio", h * d * ab)
    w.add("audio", h * ab)
    return w


def walk(config: Mapping[str, Any], par: W.Parallel, args: WalkArgs) -> W.RankWeights:
    """One rank of one stage (module docstring): the audio tower read from ``audio_config``."""
    wrapped = {k: v for k, v in config.items() if k != "audio_config"}
    wrapped["vision_config"] = dict(config.get("audio_config") or {})
    return vision_language("Qwen2ForCausalLM", _tower, modalities=("audio",)).walk(wrapped, par, args)


FAMILIES: dict[str, Family] = {"Qwen2AudioForConditionalGeneration": Family(walk, ("audio",))}

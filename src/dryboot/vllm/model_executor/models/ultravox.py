"""Ultravox (``ultravox.py``, ``UltravoxModel``): the language model of ``text_config`` (Llama by
default; Qwen2 / Qwen3 / Mistral / Gemma by ``model_type``), then on every TP rank and pipeline
stage vLLM's own Whisper encoder (:func:`.towers.whisper_encoder`, sharded) and the projector
(``UltravoxProjector``, plain linears without biases): ``ln_pre`` RMSNorm ``[D x stack_factor]``,
``linear_1`` ``[hidden_size, D x stack_factor]``, ``linear_2`` ``[H_text, hidden_size / 2]`` (a
SwiGLU projector halves it; other activations keep it), then ``ln_post`` ``[H_text]``, or, under
``projector_ln_mid``, ``ln_mid`` ``[hidden_size / 2]`` instead. ``--language-model-only`` or
``--limit-mm-per-prompt`` audio 0 drops them. Other audio encoders (a non-Whisper
``audio_config``) are refused by name. With ``text_model_id`` / ``audio_model_id`` vLLM reads those
repositories' own configs; the embedded ``text_config`` / ``audio_config`` (which the published
configs carry) stand for them, and the report says so; without them the wrapper is refused."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from dryboot.errors import InputError
from dryboot.vllm.model_executor.model_loader import weights as W
from dryboot.vllm.model_executor.models.compose import Family, WalkArgs, text_config, vision_language
from dryboot.vllm.model_executor.models.towers import tensors, whisper_encoder

TEXT_ARCHITECTURES = {
    "llama": "LlamaForCausalLM",
    "mistral": "MistralForCausalLM",
    "qwen2": "Qwen2ForCausalLM",
    "qwen3": "Qwen3ForCausalLM",
    "gemma": "GemmaForCausalLM",
}


def _tower(config: Mapping[str, Any], text: Mapping[str, Any], tp: int, ab: int) -> W.RankWeights:
    a = config.get("audio_config") or {}
    if a.get("model_type", "whisper") != "whisper":
        raise InputError("config.json", "audio_config.model_type", f"a {a.get('model_type')} encoder is not modelled")
    d = W._int(a, "d_model")
    stacked = d * W._int(config, "stack_factor", 8)
    hid = W._int(config, "hidden_size", 4096)
    mid = hid // 2 if config.get("projector_act", "swiglu") == "swiglu" else hid
    h = W._int(text, "hidden_size")
    counts = [*whisper_encoder(a, tp), stacked, hid * stacked, h * mid]
    counts.append(mid if config.get("projector_ln_mid") else h)
    return tensors("audio", counts, ab)


def walk(config: Mapping[str, Any], par: W.Parallel, args: WalkArgs) -> W.RankWeights:
    """One rank of one stage (module docstring).

    :raises InputError: a language model or audio encoder not modelled, what the walk refuses."""
    text = config.get("text_config") or {}
    kind = str(text.get("model_type", "llama")) if isinstance(text, Mapping) else "llama"
    if kind not in TEXT_ARCHITECTURES:
        raise InputError("config.json", "text_config.model_type", f"a {kind} language model is not modelled")
    w = vision_language(TEXT_ARCHITECTURES[kind], _tower, ("audio",), tower_of=lambda c: c, text_of=text_config).walk(
        config, par, args
    )
    for key, part in (("text_model_id", "text_config"), ("audio_model_id", "audio_config")):
        if config.get(key):
            w.notes.append(
                f"{key} {config[key]!r}: vLLM reads that repository's own config (UltravoxConfig); the figure "
                f"takes the embedded {part} for it"
            )
    return w


FAMILIES: dict[str, Family] = {"UltravoxModel": Family(walk, ("audio",))}

"""MOSS Transcribe-Diarize (``moss_transcribe_diarize.py``,
``MossTranscribeDiarizeForConditionalGeneration``): the Qwen3 language model of ``text_config``
(its head tied to the embedding unless the wrapper says otherwise: the wrapper config's default),
then on every TP rank vLLM's Whisper encoder (:func:`.towers.whisper_encoder`, sharded) and the
VQ adaptor (replicated): ``[H, D x audio_merge_size]`` + bias, ``[H, H]`` + bias, a LayerNorm
``[H]``. No pipeline parallelism (vLLM refuses it). ``--language-model-only`` or
``--limit-mm-per-prompt`` audio 0 drops them."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from dryboot.vllm.model_executor.model_loader import weights as W
from dryboot.vllm.model_executor.models.compose import Family, text_config, vision_language, without_pp
from dryboot.vllm.model_executor.models.towers import linear, tensors, whisper_encoder


def tied(text: Mapping[str, Any]) -> Mapping[str, Any]:
    """A wrapper's text config whose head is tied unless it says otherwise (the wrapper config
    class's ``tie_word_embeddings`` default, true)."""
    return {"tie_word_embeddings": True, **text}


def _tower(config: Mapping[str, Any], text: Mapping[str, Any], tp: int, ab: int) -> W.RankWeights:
    a = config.get("audio_config") or {}
    h, d = W._int(text, "hidden_size"), W._int(a, "d_model")
    counts = whisper_encoder(a, tp) + linear(h, d * W._int(config, "audio_merge_size", 4)) + linear(h, h) + [h, h]
    return tensors("audio", counts, ab)


FAMILIES: dict[str, Family] = {
    "MossTranscribeDiarizeForConditionalGeneration": without_pp(
        vision_language("Qwen3ForCausalLM", _tower, ("audio",), prepare=tied, tower_of=lambda c: c, text_of=text_config)
    ),
}

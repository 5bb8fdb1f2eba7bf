"""Fun-Audio-Chat (``funaudiochat.py``, ``FunAudioChatForConditionalGeneration``): the Qwen3
language model of ``text_config``, then on every TP rank and pipeline stage its two audio towers,
in the model dtype:

* the continuous encoder (:func:`.towers.qwen3_audio_encoder` with a Whisper front: ``conv1``
  ``[D, mels, 3]`` + bias, ``conv2`` ``[D, D, 3]`` + bias; attention sharded, the MLP plain
  ``nn.Linear``; ``ln_post``; ``proj`` ``[output_dim, D]`` + bias), ``audio_bos_eos_token``
  ``[2, output_dim]``, the float32 sinusoidal positions ``[max_source_positions, D]``;
* the discrete encoder: ``embed_tokens`` ``[codebook_size, output_dim]``, ``output_matching`` and
  ``continual_output_matching`` ``[output_dim, output_dim]`` (no biases).

``--language-model-only`` or ``--limit-mm-per-prompt`` audio 0 drops them."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from dryboot.vllm.model_executor.model_loader import weights as W
from dryboot.vllm.model_executor.models.compose import Family, WalkArgs, text_config, vision_language
from dryboot.vllm.model_executor.models.towers import qwen3_audio_encoder, sinusoids, tensors


def _tower(a: Mapping[str, Any], text: Mapping[str, Any], tp: int, ab: int) -> W.RankWeights:
    out = W._int(a, "output_dim")
    counts = qwen3_audio_encoder(a, tp, convs=False, proj2=False, shard_mlp=False)
    counts += [2 * out, W._int(a, "codebook_size") * out, out * out, out * out]
    return tensors("audio", counts, ab, buffers=[sinusoids(a)])


_FAMILY = vision_language(
    "Qwen3ForCausalLM", _tower, ("audio",), tower_of=lambda c: c.get("audio_config"), text_of=text_config
)
#: the audio config's integers vLLM reads when it builds the towers (``int(config.x)``), also
#: under ``--language-model-only`` (a marked tower is still constructed, then set aside)
AUDIO_INTEGERS = (
    "codebook_size",
    "d_model",
    "encoder_attention_heads",
    "encoder_ffn_dim",
    "encoder_layers",
    "group_size",
    "max_source_positions",
    "n_window",
    "num_mel_bins",
    "output_dim",
)


def walk(config: Mapping[str, Any], par: W.Parallel, args: WalkArgs) -> W.RankWeights:
    """One rank of one stage (module docstring).

    :raises InputError: an audio config integer missing (vLLM fails on it, towers dropped or not)."""
    a = config.get("audio_config")
    for key in AUDIO_INTEGERS:
        W._int(a if isinstance(a, Mapping) else {}, key)
    return _FAMILY.walk(config, par, args)


FAMILIES: dict[str, Family] = {"FunAudioChatForConditionalGeneration": Family(walk, ("audio",))}

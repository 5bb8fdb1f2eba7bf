"""MiDashengLM (``midashenglm.py``, ``MiDashengLMModel``): the Qwen2 language model of
``text_config`` (``Qwen2_5OmniTextConfig``: its defaults, the head tied by default), then on every
TP rank the Dasheng audio encoder of ``audio_encoder_config`` (``DashengAudioTransformer``, over
``DashengConfig``'s defaults) and the projector, in the model dtype:

* the front end's buffers: a Hann window ``[win_length]`` and the mel filter bank
  ``[n_fft / 2 + 1, n_mels]``;
* ``init_bn`` (``BatchNorm2d(n_mels)``): weight and bias, ``running_mean`` / ``running_var``
  buffers and the int64 ``num_batches_tracked``;
* ``patch_embed.proj`` ``[D, input_channels, p0, p1]`` + bias (``patch_size``), the position
  embeddings ``time_pos_embed`` ``[D, target_length // stride1]`` and ``freq_pos_embed``
  ``[D, n_mels // stride0]``;
* ``depth`` blocks (:func:`.towers.vit_block`: QKV split over TP by heads, ``qkv_bias``, MLP
  ``int(D x mlp_ratio)``, LayerScale ``gamma`` ``[D]`` twice with ``init_values``), the final
  LayerNorm;
* ``audio_projector``: ``net.0`` ``[H_text / TP, D x subsample_factor]`` + bias, ``net.2``
  ``[H_text, H_text / TP]`` + bias.

``--language-model-only`` or ``--limit-mm-per-prompt`` audio 0 drops them (``_mark_tower_model``).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from dryboot.vllm.model_executor.model_loader import weights as W
from dryboot.vllm.model_executor.models.compose import Family, vision_language
from dryboot.vllm.model_executor.models.towers import heads, linear, tensors, vit_block

#: ``DashengConfig``'s defaults (``vllm/transformers_utils/configs/midashenglm.py``)
DASHENG_DEFAULTS: dict[str, Any] = {
    "embed_dim": 768,
    "patch_size": 16,
    "patch_stride": 16,
    "input_channels": 1,
    "target_length": 1012,
    "depth": 12,
    "num_heads": 12,
    "mlp_ratio": 4.0,
    "qkv_bias": True,
    "init_values": None,
    "win_length": 512,
    "n_fft": 512,
    "n_mels": 64,
}
#: ``Qwen2_5OmniTextConfig``'s defaults (transformers 5.x) of the fields the walk reads
TEXT_DEFAULTS: dict[str, Any] = {
    "vocab_size": 152064,
    "hidden_size": 3584,
    "intermediate_size": 18944,
    "num_hidden_layers": 28,
    "num_attention_heads": 28,
    "num_key_value_heads": 4,
    "max_position_embeddings": 32768,
    "tie_word_embeddings": True,
}


def _pair(v: Any) -> tuple[int, int]:
    """``patch_size`` / ``patch_stride``: one integer for both axes, or two."""
    return (int(v), int(v)) if isinstance(v, int) else (int(v[0]), int(v[1]))


def dasheng_tower(a: Mapping[str, Any], text: Mapping[str, Any], tp: int, ab: int, subsample: int) -> W.RankWeights:
    """The encoder and projector on one rank (module docstring).

    :raises InputError: heads, MLP or text widths TP does not divide (vLLM asserts them)."""
    a = {**DASHENG_DEFAULTS, **{k: v for k, v in a.items() if v is not None}}
    d = W._int(a, "embed_dim")
    heads(a, tp, "num_heads")
    mels, chans = W._int(a, "n_mels"), W._int(a, "input_channels")
    (p0, p1), (s0, s1) = _pair(a["patch_size"]), _pair(a["patch_stride"])
    counts = [mels, mels, *linear(d, chans * p0 * p1), d * (W._int(a, "target_length") // s1), d * (mels // s0)]
    for _ in range(W._int(a, "depth")):
        counts += vit_block(
            d, int(d * float(a["mlp_ratio"])), tp, qkv_bias=bool(a["qkv_bias"]), layer_scale=bool(a["init_values"])
        )
    counts += [d, d]
    h = W._int(text, "hidden_size")
    h_r = W._divide(h, tp, "the audio projector's width (text hidden_size)")
    counts += linear(h_r, d * subsample) + linear(h, h_r)
    window, banks = W._int(a, "win_length") * ab, (W._int(a, "n_fft") // 2 + 1) * mels * ab
    return tensors("audio", counts, ab, buffers=[window, banks, mels * ab, mels * ab, 8])


def _tower(config: Mapping[str, Any], text: Mapping[str, Any], tp: int, ab: int) -> W.RankWeights:
    """:func:`dasheng_tower` of the wrapper ``config``'s ``audio_encoder_config`` and
    ``subsample_factor`` (``MiDashengLMConfig``'s default 5)."""
    subsample = W._int({"subsample_factor": 5, **config}, "subsample_factor")
    return dasheng_tower(config.get("audio_encoder_config") or {}, text, tp, ab, subsample)


def _text(config: Mapping[str, Any]) -> dict[str, Any]:
    return {**TEXT_DEFAULTS, **(config.get("text_config") or {})}


FAMILIES: dict[str, Family] = {
    "MiDashengLMModel": vision_language("Qwen2ForCausalLM", _tower, ("audio",), text_of=_text, tower_of=lambda c: c),
}

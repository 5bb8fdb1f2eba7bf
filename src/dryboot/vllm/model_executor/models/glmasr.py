"""GLM-ASR (``glmasr.py``, ``GlmAsrForConditionalGeneration``): the Llama language model of
``text_config`` (tied unless the wrapper says otherwise), then on every TP rank and pipeline stage
its audio encoder and projector, in the model dtype:

* ``conv1`` ``[D, mels, 3]`` + bias, ``conv2`` ``[D, D, 3]`` + bias; per layer
  (:func:`.towers.vit_block`, sharded) two LayerNorms, ``qkv_proj`` ``[3 D / TP, D]`` + bias,
  ``o_proj`` + bias, ``fc1`` / ``fc2`` + biases; the final LayerNorm; the float32 rotary
  ``inv_freq`` ``[head_dim x partial_rotary_factor / 2]`` (the factor 0.5 by default);
* the projector: ``linear_1`` ColumnParallel ``[2 H / TP, I_audio]`` + bias, ``linear_2``
  RowParallel ``[H, 2 H / TP]`` + bias.

``--language-model-only`` or ``--limit-mm-per-prompt`` audio 0 drops them. Grouped key/value heads
in the encoder are refused by name."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from dryboot.errors import InputError
from dryboot.vllm.model_executor.model_loader import weights as W
from dryboot.vllm.model_executor.models.compose import Family, text_config, vision_language
from dryboot.vllm.model_executor.models.moss_transcribe_diarize import tied
from dryboot.vllm.model_executor.models.towers import heads, linear, tensors, vit_block

#: ``GlmAsrEncoderConfig``'s defaults (transformers 5.x; ``num_key_value_heads``: the heads)
DEFAULTS: dict[str, Any] = {
    "hidden_size": 1280,
    "intermediate_size": 5120,
    "num_hidden_layers": 32,
    "num_attention_heads": 20,
    "num_mel_bins": 128,
}


def _tower(a: Mapping[str, Any], text: Mapping[str, Any], tp: int, ab: int) -> W.RankWeights:
    a = {**DEFAULTS, **{k: v for k, v in a.items() if v is not None}}
    d, inter, nh = W._int(a, "hidden_size"), W._int(a, "intermediate_size"), W._int(a, "num_attention_heads")
    if W._int(a, "num_key_value_heads", nh) != nh:
        raise InputError(
            "config.json", "audio_config.num_key_value_heads", "grouped KV heads in the encoder are not modelled"
        )
    heads(a, tp, "num_attention_heads")
    counts = [
        d * W._int(a, "num_mel_bins") * 3,
        d,
        d * d * 3,
        d,
        *vit_block(d, inter, tp) * W._int(a, "num_hidden_layers"),
    ]
    h = W._int(text, "hidden_size")
    h2_r = W._divide(2 * h, tp, "the projector's width")
    counts += [d, d, *linear(h2_r, inter), h * h2_r, h]
    rope = a.get("rope_parameters")
    rope = rope if isinstance(rope, Mapping) else {}
    factor = float(rope.get("partial_rotary_factor", a.get("partial_rotary_factor", 0.5)))
    rotary = int(W._int(a, "head_dim", d // nh) * factor) // 2
    return tensors("audio", counts, ab, buffers=[4 * rotary])


FAMILIES: dict[str, Family] = {
    "GlmAsrForConditionalGeneration": vision_language(
        "LlamaForCausalLM",
        _tower,
        ("audio",),
        prepare=tied,
        tower_of=lambda c: c.get("audio_config"),
        text_of=text_config,
    ),
}

"""Granite Speech (``granite_speech.py``, ``GraniteSpeechForConditionalGeneration``; and
``granite_speech_plus.py``, ``GraniteSpeechPlusForConditionalGeneration``, the same tensors): the
Granite language model of ``text_config`` (tied unless it says otherwise), then on every TP rank
and pipeline stage the Conformer CTC encoder and the Q-Former projector, in the model dtype:

* ``input_linear`` ``[D, input_dim]`` + bias; per Conformer block two feed-forward modules (a
  LayerNorm, ``up_proj`` ColumnParallel ``[F / TP, D]`` + bias, ``down_proj`` RowParallel
  ``[D, F / TP]`` + bias, ``F = D x feedforward_mult``), the attention (replicated: a LayerNorm,
  ``to_q`` ``[A, D]``, ``to_kv`` ``[2 A, D]`` (no biases), ``to_out`` ``[D, A]`` + bias,
  ``rel_pos_emb`` ``[2 max_pos_emb + 1, dim_head]``, ``A = num_heads x dim_head``), the
  convolution module (a LayerNorm, ``up_conv`` ``[4 D, D, 1]`` + bias, the depthwise ``[2 D, 1,
  conv_kernel_size]``, a BatchNorm ``[2 D]`` with its running mean and variance buffers in the
  model dtype and an int64 batch counter, ``down_conv`` ``[D, 2 D, 1]`` + bias; expansion
  ``conv_expansion_factor``), the post LayerNorm; ``out`` ColumnParallel ``[output_dim / TP, D]``
  + bias and ``out_mid`` RowParallel ``[D, output_dim / TP]`` + bias; the int64 relative
  distances ``[context_size, context_size]``, a plain attribute allocated with the model;
* the projector: ``query`` ``[1, window_size / downsample_rate, Q]``, the Q-Former
  (:func:`.towers.qformer`), ``linear`` ``[H_text, Q]`` + bias.

``--language-model-only`` or ``--limit-mm-per-prompt`` audio 0 drops them."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from dryboot.vllm.model_executor.model_loader import weights as W
from dryboot.vllm.model_executor.models.compose import Family, text_config, vision_language
from dryboot.vllm.model_executor.models.moss_transcribe_diarize import tied
from dryboot.vllm.model_executor.models.towers import QFORMER_DEFAULTS, linear, qformer, tensors

#: ``GraniteSpeechEncoderConfig``'s defaults (transformers 5.x)
DEFAULTS: dict[str, Any] = {
    "input_dim": 160,
    "num_layers": 10,
    "hidden_dim": 1024,
    "feedforward_mult": 4,
    "num_heads": 8,
    "output_dim": 42,
    "context_size": 200,
    "max_pos_emb": 512,
    "conv_kernel_size": 15,
    "conv_expansion_factor": 2,
}


def _tower(config: Mapping[str, Any], text: Mapping[str, Any], tp: int, ab: int) -> W.RankWeights:
    e = {**DEFAULTS, **(config.get("encoder_config") or {})}
    d, heads = W._int(e, "hidden_dim"), W._int(e, "num_heads")
    dim_head = W._int(e, "dim_head", d // heads)
    a = heads * dim_head
    f_r = W._divide(d * W._int(e, "feedforward_mult"), tp, "the encoder's feed-forward width")
    inner = d * W._int(e, "conv_expansion_factor")
    out_r = W._divide(W._int(e, "output_dim"), tp, "the encoder's output_dim")
    ff = [d, d, *linear(f_r, d), *linear(d, f_r)]
    attention = [d, d, a * d, 2 * a * d, *linear(d, a), (2 * W._int(e, "max_pos_emb") + 1) * dim_head]
    conv = [d, d, *linear(2 * inner, d), inner * W._int(e, "conv_kernel_size"), inner, inner, *linear(d, inner)]
    layers = W._int(e, "num_layers")
    counts = [*linear(d, W._int(e, "input_dim")), *(ff + attention + conv + ff + [d, d]) * layers]
    counts += [*linear(out_r, d), out_r * d, d]
    p = {**QFORMER_DEFAULTS, **(config.get("projector_config") or {})}
    qd = W._int(p, "hidden_size")
    n_query = W._int(config, "window_size", 15) // W._int(config, "downsample_rate", 5)
    counts += [n_query * qd, *qformer(p), *linear(W._int(text, "hidden_size"), qd)]
    # the BatchNorm's running mean and variance (model dtype) and its int64 counter, per block
    buffers = [inner * ab, inner * ab, 8] * layers
    w = tensors("audio", counts, ab, buffers=buffers)
    # the encoder's relative distances [context_size, context_size] int64: a plain attribute,
    # allocated with the model (neither parameter nor buffer)
    dists = 8 * W._int(e, "context_size") ** 2
    w.allocated_bytes += -(-dists // W.ALLOC_ROUND) * W.ALLOC_ROUND
    return w


_FAMILY = vision_language(
    "GraniteForCausalLM", _tower, ("audio",), prepare=tied, tower_of=lambda c: c, text_of=text_config
)
FAMILIES: dict[str, Family] = {
    "GraniteSpeechForConditionalGeneration": _FAMILY,
    "GraniteSpeechPlusForConditionalGeneration": _FAMILY,
}

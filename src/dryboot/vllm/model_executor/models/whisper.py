"""Whisper (``whisper.py``, ``WhisperForConditionalGeneration``, vLLM 0.27.1-0.33.0: the same
modules in each release): an encoder-decoder, both stacks on every TP rank, in the model dtype.
No pipeline parallelism (no ``SupportsPP``). With D = ``d_model``, ``D_r = D / TP``:

* the encoder (``WhisperEncoder``, the audio tower): ``conv1`` ``[D, num_mel_bins, 3]`` + bias
  and ``conv2`` ``[D, D, 3]`` + bias (``nn.Conv1d``, whole); ``embed_positions`` a learned-shape
  ``nn.Embedding`` ``[max_source_positions, D]`` (a parameter, filled with sinusoids, in the model
  dtype); per ``encoder_layers`` layer two LayerNorms, ``qkv_proj`` ``[3 D_r, D]`` + bias
  (``QKVParallelLinear``: the key's bias is built too, loaded as zeros), ``out_proj`` ``[D, D_r]``
  + whole bias, ``fc1`` ``[F_e / TP, D]`` + bias, ``fc2`` ``[D, F_e / TP]`` + whole bias; the
  final LayerNorm (:func:`.towers.whisper_encoder`). Its ``MMEncoderAttention`` keeps no scales;
* the decoder (``WhisperDecoder``): ``embed_tokens`` a plain ``nn.Embedding`` ``[vocab_size, D]``
  (whole on every rank, unpadded), ``embed_positions`` ``[max_target_positions, D]``; per
  ``decoder_layers`` layer the self-attention as the encoder's (an ``Attention``: its scale
  buffers), the cross-attention (``encoder_attn``: ``q_proj`` ``[D_r, D]`` + bias, ``kv_proj``
  ``[2 D_r, D]`` + bias over the encoder's states, ``out_proj`` ``[D, D_r]`` + whole bias, a
  ``CrossAttention``: its scale buffers), three LayerNorms, ``fc1`` / ``fc2`` over
  ``decoder_ffn_dim``; the final LayerNorm;
* ``proj_out`` (``ParallelLMHead``) is tied to ``embed_tokens`` whatever the config says
  (``tie_weights``): no tensor of its own.

Refused by name: a quantization method, checkpoint headers (the figure is the config's), the
encoder dropped (``--language-model-only`` / an audio limit 0: not recorded), pipeline
parallelism (vLLM refuses it), heads or widths TP does not divide (vLLM's asserts).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from dryboot.errors import InputError
from dryboot.vllm.model_executor.model_loader import weights as W
from dryboot.vllm.model_executor.models.compose import Family, unquantized, without_pp
from dryboot.vllm.model_executor.models.towers import linear, tensors, whisper_encoder

#: ``WhisperConfig``'s defaults (transformers) for the keys sized here
DEFAULTS: dict[str, Any] = {
    "vocab_size": 51865,
    "num_mel_bins": 80,
    "encoder_layers": 4,
    "encoder_attention_heads": 6,
    "decoder_layers": 4,
    "decoder_attention_heads": 6,
    "decoder_ffn_dim": 1536,
    "encoder_ffn_dim": 1536,
    "d_model": 384,
    "max_source_positions": 1500,
    "max_target_positions": 448,
}


def decoder_layer(d: int, ffn: int, tp: int) -> list[int]:
    """One ``WhisperDecoderLayer``'s parameters on a rank (elements): self-attention
    (``qkv_proj``, ``out_proj``), cross-attention (``q_proj``, ``kv_proj``, ``out_proj``), three
    LayerNorms (weight, bias), ``fc1`` / ``fc2``.

    :raises InputError: ``d_model`` or ``decoder_ffn_dim`` TP does not divide."""
    d_r = W._divide(d, tp, "the decoder's d_model")
    f_r = W._divide(ffn, tp, "decoder_ffn_dim")
    self_attn = linear(3 * d_r, d) + linear(d, d_r)
    cross = linear(d_r, d) + linear(2 * d_r, d) + linear(d, d_r)
    return self_attn + cross + [d, d] * 3 + linear(f_r, d) + linear(d, f_r)


def _walk(config: Mapping[str, Any], par: W.Parallel, args: W.WalkArgs) -> W.RankWeights:
    """One rank's bytes (module docstring); mirrors ``WhisperForConditionalGeneration.__init__``.

    :raises InputError: what the module docstring refuses."""
    c, ab = unquantized(config, args, DEFAULTS)
    if args.no_tower:
        raise InputError(
            "--language-model-only",
            None,
            "Whisper without its encoder (--language-model-only, or an audio limit of 0) is not modelled",
        )
    tp = par.tp
    enc = whisper_encoder(c, tp, shard=True)  # checks the encoder's heads first, as ModelConfig does
    W._divide(W._int(c, "decoder_attention_heads"), tp, "the decoder's decoder_attention_heads")
    d = W._int(c, "d_model")
    w = W._Walk(None, par.vllm_version)
    tensors("audio", enc, ab, into=w.ref)
    w.own("embedding", W._int(c, "vocab_size") * d * ab)
    w.own("embedding", W._int(c, "max_target_positions") * d * ab)
    layer = decoder_layer(d, W._int(c, "decoder_ffn_dim"), tp)
    for _ in range(W._int(c, "decoder_layers")):
        for n in layer:
            w.own("weight", n * ab)
        for _attention in ("self_attn", "encoder_attn"):  # Attention / CrossAttention scales
            w.own("attention scales", 16, buffer=True)
            w.ref.allocated_bytes += w.attention_blocks * W.ALLOC_ROUND
    w.own("norm", d * ab)
    w.own("norm", d * ab)
    return w.result()


FAMILIES: dict[str, Family] = {
    "WhisperForConditionalGeneration": without_pp(Family(_walk, ("audio",))),
}

"""Cheers (``cheers.py``: ``Cheers`` and ``CheersForConditionalGeneration``, one class): the Qwen2
language model of ``text_config``, then on every TP rank and pipeline stage its image path, in the
model dtype (replicated but the SigLIP blocks):

* the VAE encoder (``vae_encoder_config`` over vLLM's defaults: ``ch`` 128, ``ch_mult`` [1, 2, 4,
  4], ``num_res_blocks`` 2, ``z_channels`` 32): ``quant_conv`` ``[2 z, 2 z, 1, 1]`` + bias,
  ``conv_in`` ``[ch, C, 3, 3]`` + bias, per level ``num_res_blocks`` ResNet blocks
  (:func:`.towers.resnet_block`) and a 3x3 downsample but on the last level, the middle (ResNet,
  :func:`.towers.conv_attention`, ResNet), ``norm_out``, ``conv_out`` ``[2 z, W, 3, 3]`` + bias;
* the VAE decoder (``vae_decoder_config``, the same defaults, ``out_ch`` 3): ``post_quant_conv``
  ``[z, z, 1, 1]`` + bias, ``conv_in``, the middle, per level (deepest first)
  ``num_res_blocks + 1`` ResNet blocks and a 3x3 upsample but on the first level, ``norm_out``,
  ``conv_out`` ``[out_ch, ch x ch_mult[0], 3, 3]`` + bias;
* two BatchNorms without affine parameters (the VAE's and the decoder projector's): running mean
  and variance ``[4 z]`` (buffers in the model dtype) and an int64 batch counter each;
* the SigLIP tower of ``vision_representation_config`` (:mod:`.siglip`) and the understanding
  projector: a LayerNorm ``[D]``, ``[4 D, 4 D]`` + bias, ``[H_text, 4 D]`` + bias.

``--language-model-only`` or ``--limit-mm-per-prompt`` image 0 drops them."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from dryboot.vllm.model_executor.model_loader import weights as W
from dryboot.vllm.model_executor.models import siglip
from dryboot.vllm.model_executor.models.compose import Family, text_config, vision_language
from dryboot.vllm.model_executor.models.towers import conv_attention, linear, resnet_block, tensors

#: vLLM's ``_VAE_ENCODER_DEFAULTS`` / ``_VAE_DECODER_DEFAULTS`` (``cheers.py``)
VAE_DEFAULTS: dict[str, Any] = {
    "in_channels": 3,
    "out_ch": 3,
    "ch": 128,
    "ch_mult": [1, 2, 4, 4],
    "num_res_blocks": 2,
    "z_channels": 32,
}


def _vae(e: Mapping[str, Any], dec: Mapping[str, Any]) -> list[int]:
    e, dec = {**VAE_DEFAULTS, **e}, {**VAE_DEFAULTS, **dec}
    ch, mult, blocks, z = (
        W._int(e, "ch"),
        [int(m) for m in e["ch_mult"]],
        W._int(e, "num_res_blocks"),
        W._int(e, "z_channels"),
    )
    counts = [*linear(2 * z, 2 * z), *linear(ch, W._int(e, "in_channels") * 9)]
    ins = [1, *mult]
    c = ch
    for level, m in enumerate(mult):
        c = ch * ins[level]
        for _ in range(blocks):
            counts += resnet_block(c, ch * m)
            c = ch * m
        if level != len(mult) - 1:
            counts += linear(c, c * 9)
    counts += [*resnet_block(c, c), *conv_attention(c), *resnet_block(c, c), c, c, *linear(2 * z, c * 9)]
    ch, mult, blocks, z = (
        W._int(dec, "ch"),
        [int(m) for m in dec["ch_mult"]],
        W._int(dec, "num_res_blocks"),
        W._int(dec, "z_channels"),
    )
    c = ch * mult[-1]
    counts += [*linear(z, z), *linear(c, z * 9), *resnet_block(c, c), *conv_attention(c), *resnet_block(c, c)]
    for level in reversed(range(len(mult))):
        for _ in range(blocks + 1):
            counts += resnet_block(c, ch * mult[level])
            c = ch * mult[level]
        if level != 0:
            counts += linear(c, c * 9)
    return [*counts, c, c, *linear(W._int(dec, "out_ch"), c * 9)]


def _tower(config: Mapping[str, Any], text: Mapping[str, Any], tp: int, ab: int) -> W.RankWeights:
    e = config.get("vae_encoder_config") or {}
    counts = _vae(e, config.get("vae_decoder_config") or {})
    v = config.get("vision_representation_config") or {}
    w = siglip.vision_tower(v, tp, ab)
    d = W._int({**siglip.DEFAULTS, **v}, "hidden_size")
    counts += [d, d, *linear(4 * d, 4 * d), *linear(W._int(text, "hidden_size"), 4 * d)]
    z4 = 4 * W._int({**VAE_DEFAULTS, **e}, "z_channels")
    return tensors("vision", counts, ab, buffers=[z4 * ab, z4 * ab, 8] * 2, into=w)


_FAMILY = vision_language("Qwen2ForCausalLM", _tower, ("image",), tower_of=lambda c: c, text_of=text_config)
FAMILIES: dict[str, Family] = {"Cheers": _FAMILY, "CheersForConditionalGeneration": _FAMILY}

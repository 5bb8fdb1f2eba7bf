"""Emu3 (``Emu3ForConditionalGeneration``): served through vLLM's Transformers modeling backend
(``TransformersMultiModalForCausalLM``, ``transformers/multimodal.py``) over transformers'
``Emu3ForConditionalGeneration``, recorded on the meta device on 0.27.1-0.33.0
(``tests/fidelity/data/weights/recorded-<release>-emu3.json``, ``tests/fidelity/test_weights_emu3.py``).

One rank holds:

* the language model (``text_config``, an ``Emu3TextConfig``: its defaults where the file leaves a
  field out): Llama's decoder as the release's backend builds it (below), transformers' float32
  ``inv_freq`` / ``original_inv_freq``, the fused ``gate_up_proj``, the untied head; split over the
  pipeline stages as the text model's layers;
* the whole ``Emu3VQVAE`` (``vqmodel``, over ``vq_config``: an ``Emu3VQVAEConfig``, its defaults
  where absent) on every rank and every pipeline stage, under ``--language-model-only`` and
  ``--limit-mm-per-prompt`` image 0 too (the backend builds it with the model; recorded): every
  convolution, GroupNorm and the codebook whole in the model dtype; each ``BatchNorm3d`` of the
  temporal residual blocks with its ``running_mean`` / ``running_var`` buffers ``[C]`` in the model
  dtype and an int64 ``num_batches_tracked``; each attention block (``hidden_size`` D) a
  ``QKVParallelLinear`` ``[3 D / TP, D]`` + bias and a row-split ``out_proj`` ``[D, D / TP]`` + bias
  ``[D]``: of ``num_attention_heads`` heads on 0.28+ (TP must divide them,
  ``backend_splits_encoder_qkv``), of ``D / head size`` heads on 0.27.1, whose q/k/v fuser cuts every
  attention into the text model's head size (``model_config.get_head_size()``).

The text attention by release (:func:`text_layout`): one ``QKVParallelLinear`` and a row-split
``o_proj`` on 0.27.1 and 0.31+; ``q_proj`` / ``k_proj`` / ``v_proj`` / ``o_proj`` whole on every
rank on 0.28.0-0.30.0 (``backend_text_attention_whole``); vLLM's ``Attention`` scale buffers on
0.30+. 0.29.0 builds 0.28.0's layout (recorded: ``recorded-0.29.0-emu3.json``).

Refused by name: a quantized checkpoint, checkpoint headers (not mapped), ``attention_bias`` /
``mlp_bias``, GroupNorm widths that 32 does not divide (torch's ``GroupNorm`` refuses them), a
``temporal_downsample_factor`` that is no power of two, and on 0.27.1 a VQ width the text head size
does not divide (that attention stays unfused).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from dryboot.errors import InputError
from dryboot.vllm.model_executor.model_loader import weights as W
from dryboot.vllm.model_executor.models.compose import (
    Family,
    Layout,
    WalkArgs,
    _decoder_rank,
    merged,
    unquantized_text_config,
)
from dryboot.vllm.model_executor.models.towers import linear, tensors
from dryboot.vllm.versions import rules_for

ARCH = "Emu3ForConditionalGeneration"

#: ``Emu3TextConfig``'s defaults (transformers 5.10.4-5.24.0) for the fields the walk reads
TEXT_DEFAULTS: dict[str, Any] = {
    "vocab_size": 184622,
    "hidden_size": 4096,
    "intermediate_size": 14336,
    "num_hidden_layers": 32,
    "num_attention_heads": 32,
    "num_key_value_heads": 8,
    "max_position_embeddings": 9216,
    "tie_word_embeddings": False,
}
#: ``Emu3VQVAEConfig``'s defaults (transformers 5.10.4-5.24.0)
VQ_DEFAULTS: dict[str, Any] = {
    "codebook_size": 32768,
    "embed_dim": 4,
    "latent_channels": 4,
    "double_latent": False,
    "in_channels": 3,
    "out_channels": 3,
    "temporal_downsample_factor": 4,
    "base_channels": 256,
    "channel_multiplier": [1, 2, 2, 4],
    "num_res_blocks": 2,
    "attn_resolutions": [3],
    "hidden_size": 1024,
    "num_attention_heads": 1,
}
#: GroupNorm's groups in every Emu3 VQ-VAE norm
_GROUPS = 32
#: bytes of a BatchNorm's ``num_batches_tracked`` (int64)
_INT64 = 8

#: text-config fields that add what the walk's layout lacks (refused by name)
_REFUSED_TEXT = ("attention_bias", "mlp_bias")


def _conv(out: int, inp: int, *kernel: int) -> list[int]:
    """A convolution's tensors: weight ``[out, inp, *kernel]`` and bias ``[out]``."""
    n = out * inp
    for k in kernel:
        n *= k
    return [n, out]


def _group_norm(c: int) -> list[int]:
    """``nn.GroupNorm(32, c)``'s weight and bias ``[c]``.

    :raises InputError: 32 does not divide ``c`` (torch refuses the module)."""
    if c % _GROUPS:
        raise InputError("config.json", "vq_config", f"{ARCH}: a VQ-VAE GroupNorm of {c} channels (32 groups)")
    return [c, c]


def _spatial_norm(q: int, c: int) -> list[int]:
    """``Emu3VQVAESpatialNorm(q, c)``: GroupNorm ``[c]`` x2 and the 1x1 ``conv_y`` / ``conv_b``."""
    return [*_group_norm(c), *_conv(c, q, 1, 1), *_conv(c, q, 1, 1)]


def _resnet(inp: int, out: int, q: int | None) -> list[int]:
    """``Emu3VQVAEResnetBlock``: two norms (spatial over ``q`` quant channels when given), two 3x3
    convolutions, a 1x1 ``nin_shortcut`` where the widths differ."""
    norm1 = _group_norm(inp) if q is None else _spatial_norm(q, inp)
    norm2 = _group_norm(out) if q is None else _spatial_norm(q, out)
    short = _conv(out, inp, 1, 1) if inp != out else []
    return [*norm1, *norm2, *_conv(out, inp, 3, 3), *_conv(out, out, 3, 3), *short]


def _attention(d: int, heads: int, tp: int) -> list[int]:
    """``Emu3VQVAEAttentionBlock`` as the backend builds it: a ``QKVParallelLinear`` of ``heads``
    (``[3 D / TP, D]`` + bias) and a row-split ``out_proj`` (``[D, D / TP]`` + bias ``[D]``).

    :raises InputError: TP does not divide ``heads`` (vLLM's AssertionError)."""
    W._divide(heads, tp, f"{ARCH}'s VQ-VAE attention heads")
    return [*linear(3 * d // tp, d), d * (d // tp), d]


def _temporal(c: int, ab: int) -> tuple[list[int], list[int]]:
    """``Emu3VQVAETemporalResnetBlock(c, c)``: parameters (elements) and buffers (bytes)."""
    params = [c, c, *_conv(c, c, 3, 3, 3), c, c, *_conv(c, c, 3, 3, 3)]
    return params, [c * ab, c * ab, _INT64] * 2


def _levels(v: Mapping[str, Any]) -> list[int]:
    mult = v.get("channel_multiplier")
    if not isinstance(mult, Sequence) or not mult or any(type(m) is not int or m <= 0 for m in mult):
        raise InputError("config.json", "vq_config.channel_multiplier", f"{ARCH}: a list of positive integers")
    return list(mult)


def vq_model(vq: Mapping[str, Any], tp: int, ab: int, text_head_size: int | None) -> W.RankWeights:
    """One rank's ``Emu3VQVAE`` (encoder, decoder, codebook, quant convolutions), whole but for its
    attention blocks (see the module docstring). ``text_head_size``: 0.27.1's fuser cuts the VQ
    attention into heads of the text model's head size (``None``: of ``num_attention_heads``, 0.28+).

    :raises InputError: see the module docstring."""
    v = {**VQ_DEFAULTS, **vq}
    base, nrb = W._int(v, "base_channels"), W._int(v, "num_res_blocks")
    latent, embed, d = W._int(v, "latent_channels"), W._int(v, "embed_dim"), W._int(v, "hidden_size")
    heads = W._int(v, "num_attention_heads")
    if text_head_size is not None:  # 0.27.1: model_config.get_head_size(), the text model's
        if d % text_head_size:
            raise InputError(
                "config.json",
                "vq_config.hidden_size",
                f"{ARCH} on vLLM 0.27.1: a VQ-VAE width ({d}) the text head size ({text_head_size}) does not "
                "divide (the backend leaves that attention unfused: not modelled)",
            )
        heads = d // text_head_size
    factor = W._int(v, "temporal_downsample_factor")
    if factor <= 0 or factor & (factor - 1):
        raise InputError("config.json", "vq_config.temporal_downsample_factor", f"{ARCH}: not a power of two")
    temporal_blocks = factor.bit_length() - 1
    mult = _levels(v)
    attn_res = v.get("attn_resolutions") or []
    attention = _attention(d, heads, tp)
    params: list[int] = []
    buffers: list[int] = []
    # encoder
    enc_out = 2 * latent if v.get("double_latent") else latent
    params += _conv(base, W._int(v, "in_channels"), 3, 3)
    block_in = base
    for i, m in enumerate(mult):
        block_in = base * ([1, *mult][i])
        for _ in range(nrb):
            params += _resnet(block_in, base * m, None)
            block_in = base * m
            if i in attn_res:
                params += [*attention, *_group_norm(block_in)]
        if i != len(mult) - 1:
            params += _conv(block_in, block_in, 3, 3)
    top = base * mult[-1]
    params += [*_resnet(top, top, None), *attention, *_group_norm(top), *_resnet(top, top, None)]
    params += [*_group_norm(top), *_conv(enc_out, top, 3, 3)]
    params += _conv(enc_out, enc_out, 4, 3, 3) * temporal_blocks
    for _ in range(nrb):
        p, b = _temporal(enc_out, ab)
        params, buffers = params + p, buffers + b
    # decoder
    for _ in range(nrb):
        p, b = _temporal(latent, ab)
        params, buffers = params + p, buffers + b
    params += _conv(latent, latent, 3, 3, 3) * temporal_blocks
    params += _conv(top, latent, 3, 3)
    params += [*_resnet(top, top, embed), *attention, *_spatial_norm(embed, top), *_resnet(top, top, embed)]
    block_in = top
    for i in reversed(range(len(mult))):
        for _ in range(nrb + 1):
            params += _resnet(block_in, base * mult[i], embed)
            block_in = base * mult[i]
            if i in attn_res:
                params += [*attention, *_spatial_norm(embed, block_in)]
        if i != 0:
            params += _conv(block_in, block_in, 3, 3)
    params += [*_spatial_norm(embed, base * mult[0]), *_conv(W._int(v, "out_channels"), base * mult[0], 3, 3)]
    # codebook, quant_conv, post_quant_conv
    params += [W._int(v, "codebook_size") * embed, *_conv(embed, latent, 3, 1, 1), *_conv(latent, embed, 3, 1, 1)]
    return tensors("vision", params, ab, buffers=buffers)


def text_layout(version: str) -> Layout:
    """The release's backend layout of Emu3's language model: Llama's decoder layer with
    transformers' rotary buffers; q/k/v / o whole on every rank (``q_proj`` / ``k_proj`` /
    ``v_proj`` / ``o_proj``) where the backend's fusers leave the text attention alone
    (``backend_text_attention_whole``), else one ``QKVParallelLinear`` and a row-split ``o_proj``;
    vLLM's ``Attention`` scale buffers on 0.30+ (``transformers_backend_vllm_attention``)."""
    rules = rules_for(version)
    whole = rules.backend_text_attention_whole
    return Layout(
        qkv="separate" if whole else "fused",
        attention_replicated=whole,
        rope="hf",
        attention_scales=rules.transformers_backend_vllm_attention,
    )


def _walk(config: Mapping[str, Any], par: W.Parallel, args: WalkArgs) -> W.RankWeights:
    text = unquantized_text_config(config, args, ARCH)
    vq = config.get("vq_config", {})
    if not isinstance(vq, Mapping):
        raise InputError("config.json", "vq_config", f"{ARCH} needs a vq_config object")
    outer = {k: config[k] for k in ("torch_dtype", "quantization_config") if k in config}
    text = {**TEXT_DEFAULTS, **outer, **text}
    for key in _REFUSED_TEXT:
        if text.get(key):
            raise InputError("config.json", f"text_config.{key}", f"{ARCH} with {key} is not modelled")
    ab = W.model_dtype_bytes(text, args.dtype)
    weights = _decoder_rank(text_layout(par.vllm_version), text, par, ab)
    hs = None
    if not rules_for(par.vllm_version).backend_splits_encoder_qkv:
        h, nh = W._int(text, "hidden_size"), W._int(text, "num_attention_heads")
        hs = W._int(text, "head_dim") if text.get("head_dim") is not None else h // max(nh, 1)
    return merged(weights, vq_model(vq, par.tp, ab, hs))


FAMILIES: dict[str, Family] = {ARCH: Family(_walk, ("image",))}

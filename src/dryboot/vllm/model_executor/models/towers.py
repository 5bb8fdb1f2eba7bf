"""The encoder towers the multimodal wrappers share, as element counts per tensor (each tensor its
own allocation, so the caller's :func:`tensors` rounds each to the allocator's blocks):

* :func:`vit_block`: one pre-norm transformer block of a ViT- or Whisper-style encoder as vLLM
  builds it, sharded by TP (``QKVParallelLinear`` ``[3 D / TP, D]``, ``RowParallelLinear``
  ``[D, D / TP]`` with its bias whole, ``fc1`` ``[I / TP, D]`` / a gated ``[2 I / TP, D]``,
  ``fc2`` ``[D, I / TP]``) or whole (``shard=False``: plain ``nn.Linear`` layers), biases and
  LayerNorm biases by flag; with ``layer_scale`` InternViT's ``ls1`` / ``ls2`` ``[D]``;
* :func:`whisper_encoder`: vLLM's own Whisper encoder (``whisper.py`` ``WhisperEncoder``:
  ``conv1`` ``[D, mels, 3]`` + bias, ``conv2`` ``[D, D, 3]`` + bias, the learned positions
  ``[max_source_positions, D]``, the blocks sharded, the final LayerNorm) and transformers' own
  (``shard=False``: Qwen2-Audio, Audio Flamingo 3: ``q_proj`` / ``k_proj`` (no bias) / ``v_proj``
  separate and whole);
* :func:`qwen3_audio_encoder`: Qwen3-Omni's audio encoder (also Qwen3-ASR's and Fun-Audio-Chat's
  without the 2-D convolutions);
* :func:`qformer`: BLIP-2's Q-Former (BLIP-2, Granite Speech);
* :func:`resnet_block` / :func:`conv_attention`: the VQ-GAN / VAE convolution blocks (Chameleon's
  tokenizer, Cheers' VAE).
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import Any

from dryboot.vllm.model_executor.model_loader import weights as W


def tensors(
    kind: str, counts: Iterable[int], ab: int, *, buffers: Iterable[int] = (), into: W.RankWeights | None = None
) -> W.RankWeights:
    """A :class:`~W.RankWeights` of parameters of ``counts`` elements each in the model dtype
    (``ab`` bytes per element) and buffers of ``buffers`` bytes each (added to ``into`` when
    given)."""
    w = W.RankWeights() if into is None else into
    for n in counts:
        w.add(kind, n * ab)
    for nbytes in buffers:
        w.add(kind, nbytes, buffer=True)
    return w


def linear(out: int, inp: int, bias: bool = True) -> list[int]:
    """A linear layer's tensors: ``[out, inp]`` and its bias ``[out]``."""
    return [out * inp, *([out] if bias else [])]


def vit_block(
    d: int,
    inter: int,
    tp: int,
    *,
    shard: bool = True,
    bias: bool = True,
    qkv_bias: bool | None = None,
    norm_bias: bool = True,
    gated: bool = False,
    separate_qkv: bool = False,
    k_bias: bool = True,
    layer_scale: bool = False,
    shard_mlp: bool | None = None,
    whose: str = "the encoder's",
) -> list[int]:
    """One encoder block (module docstring): two norms, attention, MLP; ``bias`` for the
    projections (``qkv_bias`` for the QKV alone when it differs), ``separate_qkv``: three
    ``[D, D]`` projections (``k_bias``: the key's bias); ``shard_mlp``: the MLP's own sharding
    where it differs from the attention's (Fun-Audio-Chat: plain ``nn.Linear``); ``whose`` starts
    the refusals' names of the sizes (``"the vision tower's"``).

    :raises InputError: widths TP does not divide (vLLM's parallel linears refuse them)."""
    t = tp if shard else 1
    d_r = W._divide(d, t, f"{whose} hidden size")
    t_mlp = t if shard_mlp is None else (tp if shard_mlp else 1)
    i_r = W._divide(inter, t_mlp, f"{whose} intermediate_size")
    qb = bias if qkv_bias is None else qkv_bias
    norm = [d, d] if norm_bias else [d]
    out = 2 * norm
    if separate_qkv:
        out += linear(d, d, qb) + linear(d, d, qb and k_bias) + linear(d, d, qb)
    else:
        out += linear(3 * d_r, d, qb)
    out += linear(d, d_r, bias)
    out += linear((2 if gated else 1) * i_r, d, bias) + linear(d, i_r, bias)
    if layer_scale:
        out += [d, d]
    return out


def whisper_encoder(
    a: Mapping[str, Any],
    tp: int,
    *,
    shard: bool = True,
    keys: Mapping[str, str] | None = None,
    positions: bool = True,
) -> list[int]:
    """A Whisper-style audio encoder's tensors (module docstring) from ``a`` (``d_model``,
    ``encoder_ffn_dim``, ``encoder_layers``, ``num_mel_bins``, ``max_source_positions``, or the
    names ``keys`` maps them to); ``positions``: the learned positions (Qwen2.5-Omni's encoder
    holds sinusoids in a buffer instead, the caller's)."""
    k = {"d_model": "d_model", "encoder_ffn_dim": "encoder_ffn_dim", "encoder_layers": "encoder_layers", **(keys or {})}
    d, f = W._int(a, k["d_model"]), W._int(a, k["encoder_ffn_dim"])
    if shard:
        heads(a, tp)
    block = vit_block(d, f, tp, shard=shard, separate_qkv=not shard, k_bias=False)
    counts = [d * W._int(a, "num_mel_bins") * 3, d, d * d * 3, d]
    if positions:
        counts.append(W._int(a, "max_source_positions") * d)
    return counts + block * W._int(a, k["encoder_layers"]) + [d, d]


def heads(a: Mapping[str, Any], tp: int, key: str = "encoder_attention_heads") -> None:
    """The encoder's attention heads must divide over TP (vLLM's ``QKVParallelLinear`` asserts it).

    :raises InputError: they do not."""
    W._divide(W._int(a, key), tp, f"the encoder's {key}")


def conv_out(n: int) -> int:
    """A stride-2, padding-1, kernel-3 convolution's output length over ``n``."""
    return (n - 1) // 2 + 1


def qwen3_audio_encoder(
    a: Mapping[str, Any], tp: int, *, convs: bool = True, proj2: bool = True, shard_mlp: bool = True
) -> list[int]:
    """Qwen3-Omni's audio encoder (``qwen3_omni_moe_thinker.py`` ``Qwen3OmniMoeAudioEncoder``) on
    one rank: three Conv2d ``conv2d1`` ``[C, 1, 3, 3]``, ``conv2d2`` / ``conv2d3`` ``[C, C, 3, 3]``
    (with biases, ``C = downsample_hidden_size``) and ``conv_out`` ``[D, C x mels / 8]`` (no
    bias); blocks as :func:`vit_block`; ``ln_post``; ``proj1`` ``[D, D]`` + bias and ``proj2``
    ``[output_dim, D]`` + bias (whole). Without ``convs`` (Fun-Audio-Chat's, a Whisper-style
    front): ``conv1`` ``[D, mels, 3]`` + bias, ``conv2`` ``[D, D, 3]`` + bias, one ``proj``. The
    float32 sinusoidal positions ``[max_source_positions, D]`` are a buffer (the caller's)."""
    d, f = W._int(a, "d_model"), W._int(a, "encoder_ffn_dim")
    heads(a, tp)
    mels, out = W._int(a, "num_mel_bins"), W._int(a, "output_dim")
    if convs:
        c = W._int(a, "downsample_hidden_size")
        counts = [c * 9, c, c * c * 9, c, c * c * 9, c, d * c * conv_out(conv_out(conv_out(mels)))]
    else:
        counts = [d * mels * 3, d, d * d * 3, d]
    counts += vit_block(d, f, tp, shard_mlp=shard_mlp) * W._int(a, "encoder_layers") + [d, d]
    counts += linear(d, d) + linear(out, d) if proj2 else linear(out, d)
    return counts


def sinusoids(a: Mapping[str, Any]) -> int:
    """The float32 sinusoidal position buffer's bytes ``[max_source_positions, d_model]``."""
    return 4 * W._int(a, "max_source_positions") * W._int(a, "d_model")


#: ``Blip2QFormerConfig``'s defaults (transformers 5.x)
QFORMER_DEFAULTS: dict[str, Any] = {
    "hidden_size": 768,
    "num_hidden_layers": 12,
    "intermediate_size": 3072,
    "cross_attention_frequency": 2,
    "encoder_hidden_size": 1408,
}


def qformer(q: Mapping[str, Any], encoder_hidden: int | None = None) -> list[int]:
    """BLIP-2's Q-Former (``blip2.py`` ``Blip2QFormerModel``, replicated) of ``q`` over
    :data:`QFORMER_DEFAULTS`: its LayerNorm ``[Q]`` (weight, bias); per layer the self attention
    (``query`` / ``key`` / ``value`` ``[Q, Q]`` + bias, ``output.dense`` + bias, a LayerNorm), every
    ``cross_attention_frequency`` layers (from the first) a cross attention (``key`` / ``value``
    ``[Q, encoder_hidden_size]`` + bias), ``intermediate_query`` ``[I, Q]`` + bias and
    ``output_query`` ``[Q, I]`` + bias with its LayerNorm. ``encoder_hidden``: the width the
    wrapper feeds it, where it sets it."""
    q = {**QFORMER_DEFAULTS, **q}
    d, i = W._int(q, "hidden_size"), W._int(q, "intermediate_size")
    enc = encoder_hidden if encoder_hidden is not None else W._int(q, "encoder_hidden_size")
    every = W._int(q, "cross_attention_frequency")
    attention = [*linear(d, d), *linear(d, d), *linear(d, d), *linear(d, d), d, d]
    counts = [d, d]
    for li in range(W._int(q, "num_hidden_layers")):
        counts += attention
        if every and li % every == 0:
            counts += [*linear(d, d), *linear(d, enc), *linear(d, enc), *linear(d, d), d, d]
        counts += [*linear(i, d), *linear(d, i), d, d]
    return counts


def resnet_block(c_in: int, c_out: int) -> list[int]:
    """A VQ-GAN / VAE ResNet block: two GroupNorms (weight, bias) over its input and output widths,
    two 3x3 convolutions with biases, and a 1x1 ``nin_shortcut`` with bias where the width
    changes."""
    shortcut = linear(c_out, c_in) if c_in != c_out else []
    return [c_in, c_in, *linear(c_out, c_in * 9), c_out, c_out, *linear(c_out, c_out * 9), *shortcut]


def conv_attention(c: int) -> list[int]:
    """A VQ-GAN / VAE attention block: a GroupNorm and ``q`` / ``k`` / ``v`` / ``proj_out`` 1x1
    convolutions with biases."""
    return [c, c, *linear(c, c), *linear(c, c), *linear(c, c), *linear(c, c)]


#: transformers 5.x ``Siglip2VisionConfig``'s defaults of what :func:`siglip2_naflex` reads
SIGLIP2_DEFAULTS: dict[str, Any] = {
    "hidden_size": 768,
    "intermediate_size": 3072,
    "num_hidden_layers": 12,
    "num_attention_heads": 12,
    "num_channels": 3,
    "num_patches": 256,
    "patch_size": 16,
}


def siglip2_naflex(v: Mapping[str, Any], tp: int) -> list[int]:
    """vLLM's SigLIP2 NaFlex vision transformer (``lfm2_siglip2.py`` ``Siglip2VisionTransformer``,
    LFM2-VL's and Cosmos3-Edge's): a linear patch embedding ``[D, C x P x P]`` + bias, the
    ``position_embedding`` ``[num_patches, D]`` (no ``position_ids`` buffer), the SigLIP blocks
    sharded (:func:`vit_block`), the post LayerNorm. ``v``: the vision config with every width
    given (``hidden_size``, ``intermediate_size``, ``num_hidden_layers``, ``num_attention_heads``,
    ``num_channels``, ``num_patches``, ``patch_size``).

    :raises InputError: a width missing or bad, heads or widths TP does not divide."""
    d, p, c = W._int(v, "hidden_size"), W._int(v, "patch_size"), W._int(v, "num_channels")
    W._divide(W._int(v, "num_attention_heads"), tp, "the vision tower's num_attention_heads")
    counts = [*linear(d, c * p * p), W._int(v, "num_patches") * d]
    return counts + vit_block(d, W._int(v, "intermediate_size"), tp) * W._int(v, "num_hidden_layers") + [d, d]

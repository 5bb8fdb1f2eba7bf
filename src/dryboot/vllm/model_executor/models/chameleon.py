"""Chameleon (``chameleon.py``, ``ChameleonForConditionalGeneration``): a Llama-layout decoder
(:class:`.compose.Layout`; embedding, final norm and head on every pipeline stage, as
``ChameleonModel`` builds them) whose attention adds LayerNorm q/k norms with biases over the
rank's heads (``q_norm`` ``[heads / TP, head_dim]``, ``k_norm`` ``[KV heads / TP, head_dim]``, one
KV head where replicated), and the VQ-GAN image tokenizer ``vqmodel`` (``ChameleonVQVAE``),
replicated and built on every stage, in the model dtype:

* the encoder: ``conv_in`` ``[B, C, 3, 3]`` + bias; per resolution level ``num_res_blocks`` ResNet
  blocks (two GroupNorms, two 3x3 convolutions with biases, a 1x1 ``nin_shortcut`` where the width
  changes) with an attention block (GroupNorm, ``q`` / ``k`` / ``v`` / ``proj_out`` 1x1 with biases)
  where the level's resolution is in ``attn_resolutions``, and a 3x3 downsample but on the last
  level; the middle (two ResNet blocks around an attention block), ``norm_out``, ``conv_out``
  ``[L (x2 under double_latent), W, 3, 3]`` + bias;
* ``quant_conv`` ``[E, L, 1, 1]`` + bias, the codebook ``[num_embeddings, E]``, ``post_quant_conv``
  ``[L, E, 1, 1]`` + bias.

The tokenizer is the image tower (``_mark_composite_model``, ``tower_targets`` image):
``--language-model-only`` or ``--limit-mm-per-prompt`` image 0 drops it."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from dryboot.vllm.model_executor.model_loader import weights as W
from dryboot.vllm.model_executor.models.compose import Family, Layout, WalkArgs, decoder
from dryboot.vllm.model_executor.models.towers import conv_attention, linear, resnet_block, tensors

#: ``ChameleonVQVAEConfig``'s defaults (transformers 5.x)
VQ_DEFAULTS: dict[str, Any] = {
    "embed_dim": 256,
    "num_embeddings": 8192,
    "double_latent": False,
    "latent_channels": 256,
    "resolution": 512,
    "in_channels": 3,
    "base_channels": 128,
    "channel_multiplier": [1, 1, 2, 2, 4],
    "num_res_blocks": 2,
    "attn_resolutions": None,
    "attn_type": "vanilla",
}

TEXT = decoder(Layout(every_stage=True))


def vq_tokenizer(vq: Mapping[str, Any]) -> list[int]:
    """The VQ-GAN's tensors (module docstring) of ``vq`` over :data:`VQ_DEFAULTS`."""
    vq = {**VQ_DEFAULTS, **vq}
    base, mult = W._int(vq, "base_channels"), [int(m) for m in vq["channel_multiplier"]]
    vanilla = vq.get("attn_type") == "vanilla"
    attn_at = set(vq.get("attn_resolutions") or [])
    res, blocks = W._int(vq, "resolution"), W._int(vq, "num_res_blocks")
    counts = linear(base, W._int(vq, "in_channels") * 9)
    ins = [1, *mult]
    c = base
    for level, m in enumerate(mult):
        c, c_out = base * ins[level], base * m
        for _ in range(blocks):
            counts += resnet_block(c, c_out)
            c = c_out
            if vanilla and res in attn_at:
                counts += conv_attention(c)
        if level != len(mult) - 1:
            counts += linear(c, c * 9)
            res //= 2
    counts += resnet_block(c, c) + (conv_attention(c) if vanilla else []) + resnet_block(c, c) + [c, c]
    latent, emb = W._int(vq, "latent_channels"), W._int(vq, "embed_dim")
    counts += linear(latent * (2 if vq.get("double_latent") else 1), c * 9)
    counts += [*linear(emb, latent), W._int(vq, "num_embeddings") * emb, *linear(latent, emb)]
    return counts


def walk(config: Mapping[str, Any], par: W.Parallel, args: WalkArgs) -> W.RankWeights:
    """One rank of one stage (module docstring)."""
    w = TEXT.walk(config, par, args)
    ab = W.model_dtype_bytes(config, args.dtype)
    nq, hd = (
        W._int(config, "num_attention_heads"),
        W._int(config, "hidden_size") // W._int(config, "num_attention_heads"),
    )
    nkv = W._int(config, "num_key_value_heads", nq)
    q_r, kv_r = nq // par.tp, max(nkv // par.tp, 1)
    norms = [q_r * hd, q_r * hd, kv_r * hd, kv_r * hd] * len(W.pp_layers(W._int(config, "num_hidden_layers"), par))
    tensors("norm", norms, ab, into=w)
    if args.no_tower:
        return w
    return tensors("vision", vq_tokenizer(config.get("vq_config") or {}), ab, into=w)


FAMILIES: dict[str, Family] = {"ChameleonForConditionalGeneration": Family(walk, ("image",))}

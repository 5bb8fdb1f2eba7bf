"""SigLIP's vision tower (``siglip.py``, ``SiglipVisionModel``, no pooling head) as PaliGemma
builds it, on one TP rank, in the model dtype: the Conv2d ``patch_embedding`` ``[D, C, P, P]`` +
bias, ``position_embedding`` ``[N, D]`` (``N = (image_size / patch_size)^2``, no class token) and
its int64 ``position_ids`` buffer ``[1, N]``; per encoder layer CLIP's block (two LayerNorms,
``qkv_proj`` ``[3 D / TP, D]`` + bias, ``out_proj`` + bias, ``fc1`` / ``fc2`` + biases); the
``post_layernorm`` (weight, bias)."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from dryboot.vllm.model_executor.model_loader import weights as W
from dryboot.vllm.model_executor.models.towers import tensors, vit_block

#: ``SiglipVisionConfig``'s defaults (transformers 5.x) for what a ``vision_config`` leaves out
DEFAULTS: dict[str, Any] = {
    "hidden_size": 768,
    "intermediate_size": 3072,
    "num_hidden_layers": 12,
    "num_attention_heads": 12,
    "num_channels": 3,
    "image_size": 224,
    "patch_size": 16,
}


def vision_tower(
    v: Mapping[str, Any],
    tp: int,
    ab: int,
    *,
    position_ids: bool = True,
    post_norm: bool = True,
    layers: int | None = None,
) -> W.RankWeights:
    """One rank's SigLIP tower (module docstring); ``position_ids``: the buffer (Idefics3's
    embeddings compute positions per image and hold none); ``post_norm``: the post LayerNorm
    (Aria's tower has none); ``layers``: the encoder layers built (``num_hidden_layers_override``,
    all of ``num_hidden_layers`` unless given).

    :raises InputError: heads or sizes TP does not divide."""
    v = {**DEFAULTS, **v}
    d, inter = W._int(v, "hidden_size"), W._int(v, "intermediate_size")
    W._divide(W._int(v, "num_attention_heads"), tp, "the vision tower's num_attention_heads")
    p, c = W._int(v, "patch_size"), W._int(v, "num_channels")
    positions = (W._int(v, "image_size") // p) ** 2
    w = W.RankWeights()
    for n in (d * c * p * p, d, positions * d):
        w.add("vision", n * ab)
    if position_ids:
        w.add("vision", 8 * positions, buffer=True)  # int64
    block = vit_block(d, inter, tp, whose="the vision tower's")
    tensors("vision", block * (W._int(v, "num_hidden_layers") if layers is None else layers), ab, into=w)
    for _ in range(2 if post_norm else 0):  # post_layernorm (weight, bias)
        w.add("vision", d * ab)
    return w

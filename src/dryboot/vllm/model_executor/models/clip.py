"""CLIP's vision tower (``clip.py``, ``CLIPVisionModel``) as the LLaVA family builds it, on one TP
rank, in the model dtype:

* embeddings: ``class_embedding`` ``[D]``, the Conv2d ``patch_embedding`` ``[D, C, P, P]`` (no
  bias), ``position_embedding`` ``[N + 1, D]`` (``N = (image_size / patch_size)^2``) and its int64
  ``position_ids`` buffer ``[1, N + 1]``; ``pre_layrnorm`` (weight, bias);
* per encoder layer built: two LayerNorms (weight, bias), ``qkv_proj`` (QKVParallelLinear
  ``[3 D / TP, D]`` + bias), ``out_proj`` (RowParallelLinear ``[D, D / TP]``, bias whole), ``fc1``
  ``[I / TP, D]`` + bias, ``fc2`` ``[D, I / TP]`` + bias;
* ``post_layernorm`` only when asked for (the LLaVA wrappers pass ``require_post_norm=False``).

Only the layers up to the feature layer are built (``num_hidden_layers_override``: ``llava.py``
``_get_num_hidden_layers`` with ``utils.py`` ``get_layer_index``: ``vision_feature_layer``
counted from the end when negative, itself otherwise, the deepest of a list).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from dryboot.errors import InputError
from dryboot.vllm.model_executor.model_loader import weights as W
from dryboot.vllm.model_executor.models.towers import tensors, vit_block

#: ``CLIPVisionConfig``'s defaults (transformers 5.x) for what a ``vision_config`` leaves out
DEFAULTS: dict[str, Any] = {
    "hidden_size": 768,
    "intermediate_size": 3072,
    "num_hidden_layers": 12,
    "num_attention_heads": 12,
    "num_channels": 3,
    "image_size": 224,
    "patch_size": 32,
}


def layers_built(feature_layer: Any, num_layers: int) -> int:
    """``llava.py`` ``_get_num_hidden_layers``: the encoder layers vLLM builds for a feature layer
    (an index, negative from the end, or a list of them: the deepest).

    :raises InputError: a feature layer that is neither."""
    layers = feature_layer if isinstance(feature_layer, list) else [feature_layer]
    if not layers or any(type(x) is not int for x in layers):
        raise InputError("config.json", "vision_feature_layer", "an integer or a list of integers")
    # vLLM's get_layer_index: a negative index counts from the end, a non-negative one is the
    # number of layers built (the hidden states before that layer)
    return max(int(x) + num_layers + 1 if x < 0 else int(x) for x in layers)


def vision_tower(v: Mapping[str, Any], tp: int, ab: int, *, layers: int, post_norm: bool = False) -> W.RankWeights:
    """One rank's CLIP tower of ``layers`` encoder layers (module docstring).

    :raises InputError: heads or the intermediate size TP does not divide (vLLM's
        ``QKVParallelLinear`` refuses them)."""
    v = {**DEFAULTS, **v}
    d, inter = W._int(v, "hidden_size"), W._int(v, "intermediate_size")
    W._divide(W._int(v, "num_attention_heads"), tp, "the vision tower's num_attention_heads")
    p, c = W._int(v, "patch_size"), W._int(v, "num_channels")
    positions = (W._int(v, "image_size") // p) ** 2 + 1
    w = W.RankWeights()
    for n in (d, d * c * p * p, positions * d, d, d):  # class, patch, position embeddings, pre_layrnorm
        w.add("vision", n * ab)
    w.add("vision", 8 * positions, buffer=True)  # position_ids, int64
    tensors("vision", vit_block(d, inter, tp, whose="the vision tower's") * layers, ab, into=w)
    if post_norm:
        w.add("vision", d * ab)
        w.add("vision", d * ab)
    return w

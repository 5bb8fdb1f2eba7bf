"""Kimi-VL (``kimi_vl.py``, ``KimiVLForConditionalGeneration``): the DeepSeek-V3 language model of
``text_config`` (the walk's MLA and MoE), then on every TP rank and pipeline stage the MoonViT
tower (``moonvit.py``) and the projector, in the model dtype:

* the Conv2d patch embedding ``[D, 3, P, P]`` + bias, the learned 2-D positions
  ``[init_pos_emb_height, init_pos_emb_width, D]``;
* per block (:func:`.towers.vit_block`, sharded): ``norm0`` / ``norm1`` LayerNorms, ``wqkv`` ``[3 D
  / TP, D]`` + bias, ``wo`` ``[D, D / TP]`` + bias, ``mlp.fc0`` ``[I / TP, D]`` + bias, ``mlp.fc1``
  ``[D, I / TP]`` + bias; the final LayerNorm;
* the projector (``KimiVLMultiModalProjector``, replicated): ``pre_norm`` LayerNorm ``[D]``,
  ``linear_1`` ``[M, M]`` + bias, ``linear_2`` ``[H_text, M]`` + bias, ``M = D x kh x kw``
  (``merge_kernel_size``).

``--language-model-only`` or ``--limit-mm-per-prompt`` image 0 drops them.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from dryboot.vllm.model_executor.model_loader import weights as W
from dryboot.vllm.model_executor.models.compose import Family, text_config, vision_language
from dryboot.vllm.model_executor.models.towers import linear, tensors, vit_block

#: ``MoonViTConfig``'s defaults for what a ``vision_config`` leaves out
DEFAULTS: dict[str, Any] = {
    "patch_size": 14,
    "init_pos_emb_height": 64,
    "init_pos_emb_width": 64,
    "num_attention_heads": 16,
    "num_hidden_layers": 27,
    "hidden_size": 1152,
    "intermediate_size": 4304,
    "merge_kernel_size": [2, 2],
}


def moonvit(
    v: Mapping[str, Any],
    text: Mapping[str, Any],
    tp: int,
    ab: int,
    *,
    replicate_indivisible: bool = False,
    projector: tuple[int, bool] | None = None,
) -> W.RankWeights:
    """MoonViT and its projector on one rank (module docstring); ``replicate_indivisible``: heads
    TP does not divide replicate the blocks (``vision.py`` ``is_vit_use_data_parallel``, Kimi-K2.5's
    tower) instead of failing as Kimi-VL's does; ``projector``: ``(output width, v2)`` where it is
    not the text width with Kimi-VL's projector (Kimi-K2.5's ``patchmergerv2``: no pre-norm, no
    biases, an RMSNorm ``[out]`` after).

    :raises InputError: heads TP does not divide (Kimi-VL)."""
    v = {**DEFAULTS, **v}
    d, inter, p = W._int(v, "hidden_size"), W._int(v, "intermediate_size"), W._int(v, "patch_size")
    split = W._int(v, "num_attention_heads") % tp == 0
    if not (split or replicate_indivisible):
        W._divide(W._int(v, "num_attention_heads"), tp, "the vision tower's num_attention_heads")
    kh, kw = (int(x) for x in v["merge_kernel_size"])
    m = d * kh * kw
    bias = bool(v.get("patch_embed_proj_bias", True))
    counts = [*linear(d, 3 * p * p, bias), W._int(v, "init_pos_emb_height") * W._int(v, "init_pos_emb_width") * d]
    counts += vit_block(d, inter, tp, shard=split) * W._int(v, "num_hidden_layers") + [d, d]
    out, v2 = projector if projector is not None else (W._int(text, "hidden_size"), False)
    if v2:
        counts += [m * m, out * m, out]
    else:
        counts += [d, d, *linear(m, m), *linear(out, m)]
    return tensors("vision", counts, ab)


FAMILIES: dict[str, Family] = {
    "KimiVLForConditionalGeneration": vision_language(
        "DeepseekV3ForCausalLM", moonvit, modalities=("image",), text_of=text_config
    ),
}

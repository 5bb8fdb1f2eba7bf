"""GLM-4.1V (``glm4_1v.py``, ``Glm4vForConditionalGeneration``): the GLM-4 language model of
``text_config`` (:mod:`.glm4`: four norms per layer; ``Glm4vTextConfig`` adds no QKV bias unless
it says so; multimodal RoPE: its table spans four times ``max_position_embeddings``), then on
every TP rank and pipeline stage the vision transformer, in the model dtype, sharded by TP:

* the Conv3d patch embedding ``[D, C, T, P, P]`` + bias, ``position_embedding`` ``[N, D]`` and its
  int64 ``position_ids`` buffer ``[1, N]`` (``N = (image_size / patch_size)^2``),
  ``post_conv_layernorm`` ``[D]``;
* per block two RMSNorms ``[D]``, ``attn.qkv`` ``[3 D / TP, D]``, ``attn.proj`` ``[D, D / TP]``
  (no biases), a gated MLP of ``out_hidden_size`` (``gate_up_proj`` ``[2 O / TP, D]``,
  ``down_proj`` ``[D, O / TP]``);
* ``post_layernorm`` ``[D]``, the Conv2d ``downsample`` ``[O, D, m, m]`` + bias
  (``m = spatial_merge_size``), the merger (``proj`` ColumnParallel ``[O / TP, O]``, a LayerNorm ``[O]`` with bias, a
  gated MLP of ``intermediate_size``: ``gate_up_proj`` ``[2 I / TP, O]``, ``down_proj`` ``[O, I /
  TP]``);
* the rotary table ``[8192, head_dim / 2]``.

``--language-model-only`` or ``--limit-mm-per-prompt`` image 0 and video 0 drop the tower.

GLM-4.5V / 4.6V (``Glm4vMoeForConditionalGeneration``, the same file): this tower over the GLM-4.5
MoE language model (:mod:`.glm4_moe` in the walk; ``Glm4vMoeTextConfig`` gives QKV biases unless it
says otherwise).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from dryboot.vllm.model_executor.model_loader import weights as W
from dryboot.vllm.model_executor.models.compose import Family, vision_language


def glm4v_text(config: Mapping[str, Any]) -> Mapping[str, Any]:
    return {"attention_bias": False, **config}


#: ``Glm4vVisionConfig``'s (and ``Glm4vMoeVisionConfig``'s) defaults (transformers 5.x)
VISION_DEFAULTS: dict[str, Any] = {
    "depth": 24,
    "hidden_size": 1536,
    "num_heads": 12,
    "in_channels": 3,
    "image_size": 336,
    "patch_size": 14,
    "spatial_merge_size": 2,
    "temporal_patch_size": 2,
    "out_hidden_size": 4096,
    "intermediate_size": 13696,
}


def vision_tower(v: Mapping[str, Any], text: Mapping[str, Any], tp: int, ab: int) -> W.RankWeights:
    """``Glm4vVisionTransformer`` on one rank (module docstring), over :data:`VISION_DEFAULTS`."""
    v = {**VISION_DEFAULTS, **v}
    d, heads = W._int(v, "hidden_size"), W._int(v, "num_heads")
    o, inter = W._int(v, "out_hidden_size"), W._int(v, "intermediate_size")
    W._divide(heads, tp, "the vision tower's num_heads")
    d_r = W._divide(d, tp, "the vision tower's width")
    o_r, i_r = W._divide(o, tp, "out_hidden_size"), W._divide(inter, tp, "the vision intermediate_size")
    p, t, c, m = (
        W._int(v, k, dflt)
        for k, dflt in (("patch_size", 14), ("temporal_patch_size", 2), ("in_channels", 3), ("spatial_merge_size", 2))
    )
    n = (W._int(v, "image_size") // p) ** 2
    sizes = [d * c * t * p * p, d, n * d, d]
    sizes += [d, d, 3 * d_r * d, d * d_r, 2 * o_r * d, d * o_r] * W._int(v, "depth")
    sizes += [d, o * d * m * m, o, o_r * o, o, o, 2 * i_r * o, o * i_r]
    w = W.RankWeights()
    for count in sizes:
        w.add("vision", count * ab)
    w.add("vision", 8 * n, buffer=True)  # position_ids, int64
    w.add("rotary", 8192 * (d // heads // 2) * ab, buffer=True)
    return w


FAMILIES: dict[str, Family] = {
    "Glm4vForConditionalGeneration": vision_language("Glm4ForCausalLM", vision_tower, prepare=glm4v_text),
    "Glm4vMoeForConditionalGeneration": vision_language(
        "Glm4MoeForCausalLM", vision_tower, prepare=lambda t: {"attention_bias": True, **t}
    ),
}

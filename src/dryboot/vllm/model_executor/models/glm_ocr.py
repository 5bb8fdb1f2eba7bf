"""GLM-OCR (``glm_ocr.py``, ``GlmOcrForConditionalGeneration``): the GLM-4 language model of
``text_config`` (as GLM-4.1V's: :func:`.glm4_1v.glm4v_text`), then on every TP rank and pipeline
stage its vision transformer, in the model dtype, sharded by TP:

* the Conv3d patch embedding ``[D, C, T, P, P]`` + bias (no position embedding);
* per block two RMSNorms ``[D]``, ``attn.qkv`` ``[3 D / TP, D]`` + bias, RMS ``q_norm`` /
  ``k_norm`` ``[head_dim]``, ``attn.proj`` ``[D, D / TP]`` + bias, a gated MLP of the vision
  ``intermediate_size`` with biases;
* ``post_layernorm`` ``[D]``, the Conv2d ``downsample`` ``[O, D, m, m]`` + bias, the merger
  (``proj`` ``[O / TP, O]``, a LayerNorm ``[O]`` with bias, a gated MLP of the *text*
  ``intermediate_size`` without biases);
* the rotary table ``[8192, head_dim / 2]``.

``--language-model-only`` or ``--limit-mm-per-prompt`` image 0 and video 0 drop the tower."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from dryboot.vllm.model_executor.model_loader import weights as W
from dryboot.vllm.model_executor.models.compose import Family, text_config, vision_language
from dryboot.vllm.model_executor.models.glm4_1v import glm4v_text
from dryboot.vllm.model_executor.models.towers import linear, tensors

#: ``GlmOcrVisionConfig``'s defaults (transformers 5.x)
VISION_DEFAULTS: dict[str, Any] = {
    "depth": 24,
    "hidden_size": 1024,
    "num_heads": 16,
    "in_channels": 3,
    "image_size": 336,
    "patch_size": 14,
    "spatial_merge_size": 2,
    "temporal_patch_size": 2,
    "out_hidden_size": 1536,
    "intermediate_size": 4096,
}


def _tower(config: Mapping[str, Any], text: Mapping[str, Any], tp: int, ab: int) -> W.RankWeights:
    v = {**VISION_DEFAULTS, **(config.get("vision_config") or {})}
    d, heads, o = W._int(v, "hidden_size"), W._int(v, "num_heads"), W._int(v, "out_hidden_size")
    W._divide(heads, tp, "the vision tower's num_heads")
    hd = d // heads
    d_r, o_r = W._divide(d, tp, "the vision tower's width"), W._divide(o, tp, "out_hidden_size")
    i_r = W._divide(W._int(v, "intermediate_size"), tp, "the vision intermediate_size")
    ti_r = W._divide(W._int(text, "intermediate_size"), tp, "the merger's intermediate_size")
    p, t, c, m = (
        W._int(v, k, dflt)
        for k, dflt in (("patch_size", 14), ("temporal_patch_size", 2), ("in_channels", 3), ("spatial_merge_size", 2))
    )
    block = [d, d, *linear(3 * d_r, d), hd, hd, *linear(d, d_r), *linear(2 * i_r, d), *linear(d, i_r)]
    counts = [*linear(d, c * t * p * p), *block * W._int(v, "depth"), d, *linear(o, d * m * m)]
    counts += [o_r * o, o, o, 2 * ti_r * o, o * ti_r]
    return tensors("vision", counts, ab, buffers=[8192 * (hd // 2) * ab])


FAMILIES: dict[str, Family] = {
    "GlmOcrForConditionalGeneration": vision_language(
        "Glm4ForCausalLM", _tower, prepare=glm4v_text, tower_of=lambda c: c, text_of=text_config
    ),
}

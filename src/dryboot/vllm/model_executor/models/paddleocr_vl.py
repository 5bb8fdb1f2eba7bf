"""PaddleOCR-VL (``paddleocr_vl.py``, ``PaddleOCRVLForConditionalGeneration``): the ERNIE-4.5 language
model of ``text_config``, then on every TP rank and pipeline stage the SigLIP tower (:mod:`.siglip`:
patch embedding, positions and their int64 ids, the blocks sharded, the post LayerNorm) with the
encoder's float32 rotary ``inv_freq`` ``[head_dim / 4]`` (a 2-D rope over half the head), and the
projector ``mlp_AR`` (replicated): ``pre_norm`` LayerNorm ``[D]``, ``linear_1`` ``[M, M]`` + bias,
``linear_2`` ``[H_text, M]`` + bias, ``M = D x spatial_merge_size^2``. ``--language-model-only`` or
``--limit-mm-per-prompt`` image 0 drops them (vLLM marks the tower for images only). No pipeline
parallelism (vLLM refuses it)."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from dryboot.vllm.model_executor.model_loader import weights as W
from dryboot.vllm.model_executor.models import siglip
from dryboot.vllm.model_executor.models.compose import Family, text_config, vision_language, without_pp
from dryboot.vllm.model_executor.models.towers import linear, tensors

#: ``PaddleOCRVisionConfig``'s defaults (transformers 5.x)
DEFAULTS: dict[str, Any] = {
    "hidden_size": 1152,
    "intermediate_size": 4304,
    "num_hidden_layers": 27,
    "num_attention_heads": 16,
    "num_channels": 3,
    "image_size": 384,
    "patch_size": 14,
}


def _tower(v: Mapping[str, Any], text: Mapping[str, Any], tp: int, ab: int) -> W.RankWeights:
    full = {**DEFAULTS, **v}
    w = siglip.vision_tower(full, tp, ab)
    d = W._int(full, "hidden_size")
    hd = d // W._int(full, "num_attention_heads")
    m = d * W._int(v, "spatial_merge_size", 2) ** 2
    counts = [d, d, *linear(m, m), *linear(W._int(text, "hidden_size"), m)]
    return tensors("vision", counts, ab, buffers=[4 * (hd // 4)], into=w)


FAMILIES: dict[str, Family] = {
    "PaddleOCRVLForConditionalGeneration": without_pp(
        vision_language("Ernie4_5ForCausalLM", _tower, ("image",), text_of=text_config)
    ),
}

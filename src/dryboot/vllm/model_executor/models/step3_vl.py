"""Step3-VL (``step3_vl.py``, ``Step3VLForConditionalGeneration``), unquantized: the Step-3 text
model of ``text_config`` (:mod:`.step3_text`, which refuses pipeline parallelism as vLLM fails it)
and, on every TP rank unless image is limited to 0 or ``--language-model-only``
(``_mark_tower_model``), the Step-3 vision transformer of ``vision_config``
(``Step3VisionEncoderConfig``'s defaults, the same on vLLM 0.27.1-0.33.0) and its projector:

* ``Step3VisionEmbeddings``: ``class_embedding`` ``[D]``, the patch convolution ``[D, C, P, P]``
  + bias, ``position_embedding`` ``[N + 1, D]`` (``N = (image_size / P)^2``) and its int64
  ``position_ids`` buffer ``[1, N + 1]``;
* per layer (``Step3VisionEncoderLayer``): two LayerNorms, ``qkv_proj`` ``[3 D / TP, D]`` + bias,
  ``out_proj`` ``[D, D / TP]`` + bias, ``fc1`` ``[I / TP, D]`` + bias, ``fc2`` ``[D, I / TP]`` +
  bias (:func:`.towers.vit_block`);
* ``vit_downsampler`` (a convolution ``[O, D, 2, 2]`` + bias, ``O = output_hidden_size``),
  ``vit_downsampler2`` (``[2 O, O, 3, 3]`` + bias) and ``vit_large_projector`` ``[H_text, 2 O]``
  (+ bias under ``projector_bias``, true by default)."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from dryboot.vllm.model_executor.model_loader import weights as W
from dryboot.vllm.model_executor.models.compose import Family, text_config, vision_language
from dryboot.vllm.model_executor.models.towers import linear, tensors, vit_block

#: ``Step3VisionEncoderConfig``'s defaults (``transformers_utils/configs/step3_vl.py``)
VISION_DEFAULTS: dict[str, Any] = {
    "hidden_size": 1792,
    "intermediate_size": 3072,
    "output_hidden_size": 4096,
    "num_hidden_layers": 63,
    "num_attention_heads": 16,
    "num_channels": 3,
    "image_size": 728,
    "patch_size": 14,
}


def vision_tower(config: Mapping[str, Any], text: Mapping[str, Any], tp: int, ab: int) -> W.RankWeights:
    """The vision transformer, downsamplers and projector on one rank (module docstring).

    :raises InputError: a width missing or bad, heads or widths TP does not divide."""
    v = {**VISION_DEFAULTS, **(config.get("vision_config") or {})}
    d, o, p, c = (W._int(v, k) for k in ("hidden_size", "output_hidden_size", "patch_size", "num_channels"))
    W._divide(W._int(v, "num_attention_heads"), tp, "the vision tower's num_attention_heads")
    positions = (W._int(v, "image_size") // p) ** 2 + 1
    counts = [d, *linear(d, c * p * p), positions * d]
    counts += vit_block(d, W._int(v, "intermediate_size"), tp, whose="the vision tower's") * W._int(
        v, "num_hidden_layers"
    )
    counts += [*linear(o, d * 2 * 2), *linear(2 * o, o * 3 * 3)]
    counts += linear(W._int(text, "hidden_size"), 2 * o, bool(config.get("projector_bias", True)))
    return tensors("vision", counts, ab, buffers=[8 * positions])


FAMILIES: dict[str, Family] = {
    "Step3VLForConditionalGeneration": vision_language(
        "Step3TextForCausalLM", vision_tower, modalities=("image",), tower_of=lambda c: c, text_of=text_config
    )
}

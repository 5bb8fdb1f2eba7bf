"""LFM2-VL (``lfm2_vl.py``, ``Lfm2VlForConditionalGeneration``): the LFM2 language model of
``text_config`` (:mod:`.lfm2`), then on every TP rank and pipeline stage the SigLIP2 tower
(NaFlex: a linear patch embedding ``[D, C x P x P]`` + bias, ``position_embedding``
``[num_patches, D]``, no ``position_ids`` buffer; the SigLIP blocks sharded; the post LayerNorm)
and the projector (``Lfm2VlMultiModalProjector``, replicated): a LayerNorm over ``M = D x f^2``
(``f = downsample_factor``; under ``projector_use_layernorm``, true by default), ``linear_1``
``[projector_hidden_size, M]`` + bias, ``linear_2`` ``[H_text, projector_hidden_size]`` + bias.
``--language-model-only`` or ``--limit-mm-per-prompt`` image 0 drops them."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from dryboot.vllm.model_executor.model_loader import weights as W
from dryboot.vllm.model_executor.models.compose import Family, text_config, vision_language
from dryboot.vllm.model_executor.models.towers import SIGLIP2_DEFAULTS, linear, siglip2_naflex, tensors

#: ``Siglip2VisionConfig``'s defaults (transformers 5.x)
DEFAULTS: dict[str, Any] = SIGLIP2_DEFAULTS


def _tower(config: Mapping[str, Any], text: Mapping[str, Any], tp: int, ab: int) -> W.RankWeights:
    v = {**DEFAULTS, **(config.get("vision_config") or {})}
    counts = siglip2_naflex(v, tp)
    m = W._int(v, "hidden_size") * W._int(config, "downsample_factor", 2) ** 2
    hid = W._int(config, "projector_hidden_size", 2560)
    if config.get("projector_use_layernorm", True):
        counts += [m, m]
    counts += linear(hid, m, bool(config.get("projector_bias", True)))
    counts += linear(W._int(text, "hidden_size"), hid, bool(config.get("projector_bias", True)))
    return tensors("vision", counts, ab)


FAMILIES: dict[str, Family] = {
    "Lfm2VlForConditionalGeneration": vision_language(
        "Lfm2ForCausalLM", _tower, modalities=("image",), tower_of=lambda c: c, text_of=text_config
    ),
}

"""PaliGemma (``paligemma.py``, ``PaliGemmaForConditionalGeneration``): the Gemma language model of
``text_config`` (:mod:`.gemma`), then on every TP rank and pipeline stage the SigLIP tower
(:mod:`.siglip`) and the projector ``multi_modal_projector.linear`` ``[projection_dim, D]`` + bias
(``projection_dim``: the vision config's, else the text hidden size). ``--language-model-only`` or
``--limit-mm-per-prompt`` image 0 drops both."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from dryboot.vllm.model_executor.model_loader import weights as W
from dryboot.vllm.model_executor.models import siglip
from dryboot.vllm.model_executor.models.compose import Family, vision_language


def _tower(v: Mapping[str, Any], text: Mapping[str, Any], tp: int, ab: int) -> W.RankWeights:
    w = siglip.vision_tower(v, tp, ab)
    d = W._int({**siglip.DEFAULTS, **v}, "hidden_size")
    proj = v.get("projection_dim") or text.get("hidden_size")
    out = W._int({"projection_dim": proj}, "projection_dim")
    w.add("vision", out * d * ab)
    w.add("vision", out * ab)
    return w


FAMILIES: dict[str, Family] = {
    "PaliGemmaForConditionalGeneration": vision_language("GemmaForCausalLM", _tower, modalities=("image",)),
}

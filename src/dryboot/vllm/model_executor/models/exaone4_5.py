"""EXAONE 4.5 (``exaone4_5.py``, ``Exaone4_5_ForConditionalGeneration``): the EXAONE 4 language
model of ``text_config`` (built as ``Exaone4ForCausalLM``: Qwen3's layout), then on every TP rank
and pipeline stage a Qwen2.5-VL vision transformer (:mod:`.qwen2_vl`: Conv3d patch embedding,
RMSNorms, gated MLP, the merger, the ``[8192, head_dim / 2]`` rotary table) without the
device-side input normalization's buffers. ``--language-model-only`` or
``--limit-mm-per-prompt`` image 0 and video 0 drop the tower."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from dryboot.vllm.model_executor.model_loader import weights as W
from dryboot.vllm.model_executor.models.compose import Family, vision_language
from dryboot.vllm.model_executor.models.qwen2_vl import qwen2_5_vl_tower


def _tower(v: Mapping[str, Any], text: Mapping[str, Any], tp: int, ab: int) -> W.RankWeights:
    return qwen2_5_vl_tower(v, text, tp, ab, input_norm=False)


FAMILIES: dict[str, Family] = {
    "Exaone4_5_ForConditionalGeneration": vision_language("Exaone4ForCausalLM", _tower),
}

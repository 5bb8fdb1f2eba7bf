"""Kimi-K2.5 (``kimi_k25.py``, ``KimiK25ForConditionalGeneration``): Kimi-VL's composition
(:func:`.kimi_vl.moonvit`: the DeepSeek-V3 language model, MoonViT and the projector) with the
tower's temporal position table, a buffer in the model dtype ``[init_pos_emb_time, 1, D]``; where
TP does not divide the tower's heads its blocks are replicated (vLLM falls back to data
parallelism for the encoder).
``--language-model-only`` or ``--limit-mm-per-prompt`` image 0 and video 0 drop the tower."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from dryboot.vllm.model_executor.model_loader import weights as W
from dryboot.vllm.model_executor.models.compose import Family, vision_language
from dryboot.vllm.model_executor.models.kimi_vl import DEFAULTS, moonvit


def _tower(v: Mapping[str, Any], text: Mapping[str, Any], tp: int, ab: int) -> W.RankWeights:
    w = moonvit(v, text, tp, ab, replicate_indivisible=True)
    time = W._int({"init_pos_emb_time": 4, **v}, "init_pos_emb_time")
    w.add("vision", time * W._int({**DEFAULTS, **v}, "hidden_size") * ab, buffer=True)
    return w


FAMILIES: dict[str, Family] = {
    "KimiK25ForConditionalGeneration": vision_language("DeepseekV3ForCausalLM", _tower),
}

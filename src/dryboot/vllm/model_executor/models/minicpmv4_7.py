"""MiniCPM-V 4.7 (``minicpmv4_7.py``, ``MiniCPMV4_7ForConditionalGeneration``, vLLM 0.32+): a
subclass of MiniCPM-V 4.6's model class (:mod:`.minicpmv4_6`) that adds canvas M-RoPE positions
(computed per request, nothing allocated) and keeps every vision encoder layer: its
``_drop_vision_last_layer`` is ``False`` whatever the config says (``MiniCPMV4_7Config`` no longer
carries ``drop_vision_last_layer``). So: the text-only Qwen3.5 language model of ``text_config``
(``Qwen3_5ForCausalLM``, Qwen3.5-MoE's layers for the 35B-A3B's ``qwen3_5_moe_text``:
:data:`.minicpmv4_6.LANGUAGE_MODEL`), then on every TP rank and pipeline stage, in the model
dtype, 4.6's towers over all of ``vision_config``'s layers.

``--language-model-only`` or ``--limit-mm-per-prompt`` image 0 drops them."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from dryboot.vllm.model_executor.model_loader import weights as W
from dryboot.vllm.model_executor.models import minicpmv4_6
from dryboot.vllm.model_executor.models.compose import Family, text_config, vision_language


def _tower(config: Mapping[str, Any], text: Mapping[str, Any], tp: int, ab: int) -> W.RankWeights:
    # MiniCPMV4_7ForConditionalGeneration._drop_vision_last_layer: False
    return minicpmv4_6.tower(config, text, tp, ab, drop_last=False)


FAMILIES: dict[str, Family] = {
    "MiniCPMV4_7ForConditionalGeneration": vision_language(
        minicpmv4_6.LANGUAGE_MODEL, _tower, ("image",), tower_of=lambda c: c, text_of=text_config
    ),
}

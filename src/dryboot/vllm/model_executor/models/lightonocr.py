"""LightOnOCR (``lightonocr.py``, ``LightOnOCRForConditionalGeneration``): a subclass of Mistral3's
model class with its own checkpoint names, the same modules (:mod:`.mistral3`: the Pixtral tower,
``Mistral3MultiModalProjector``, the language model of ``text_config``). Its published
checkpoints carry a ``mistral3`` config (Mistral3Config's defaults); transformers'
``lighton_ocr`` config class defines neither ``vision_feature_layer`` nor
``multimodal_projector_bias``, which vLLM's class reads: such a config is refused unless it gives
both."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from dryboot.errors import InputError
from dryboot.vllm.model_executor.model_loader import weights as W
from dryboot.vllm.model_executor.models import mistral3
from dryboot.vllm.model_executor.models.compose import Family, WalkArgs

_MISTRAL3 = mistral3.family()


def _walk(config: Mapping[str, Any], par: W.Parallel, args: WalkArgs) -> W.RankWeights:
    if config.get("model_type") == "lighton_ocr":
        for key in ("vision_feature_layer", "multimodal_projector_bias"):
            if key not in config:
                raise InputError(
                    "config.json", key, "a lighton_ocr config without it is not modelled (vLLM's model class reads it)"
                )
    return _MISTRAL3.walk(config, par, args)


FAMILIES: dict[str, Family] = {"LightOnOCRForConditionalGeneration": Family(_walk, ("image",))}

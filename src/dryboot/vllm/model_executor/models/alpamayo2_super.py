"""Alpamayo 2 Super (``alpamayo2_super.py``, ``Alpamayo2Super``; vLLM 0.33.0): vLLM's class is
Qwen3-VL's (``Qwen3VLForConditionalGeneration``) with a weights mapper that drops the checkpoint's
trajectory expert, so it holds what Qwen3-VL holds (:mod:`.qwen3_vl`): the Qwen3 text model and
the Qwen3-VL vision transformer. ``Alpamayo2SuperConfig`` (vLLM's ``transformers_utils/configs``)
takes both sub-configs from the checkpoint's ``vlm_config`` (``text_config``, ``vision_config``);
a checkpoint without them is refused (the config class would build Qwen3-VL's defaults)."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from dryboot.vllm.model_executor.model_loader import weights as W
from dryboot.vllm.model_executor.models.compose import Family, vision_language
from dryboot.vllm.model_executor.models.qwen3_vl import vision_tower, with_deepstack


def _vlm(config: Mapping[str, Any], key: str) -> Any:
    """``vlm_config[key]`` (``None`` where either is absent)."""
    vlm = config.get("vlm_config")
    return vlm.get(key) if isinstance(vlm, Mapping) else None


def _decoder(text: Mapping[str, Any]) -> Mapping[str, Any]:
    """The text config as ``Qwen3VLDecoderLayer`` builds it (``weights.QWEN3_VL_DECODER``)."""
    return {**text, W.QWEN3_VL_DECODER: True}


def _text_of(config: Mapping[str, Any]) -> Any:
    return _vlm(config, "text_config")


def _vision_of(config: Mapping[str, Any]) -> Any:
    return _vlm(config, "vision_config")


FAMILIES: dict[str, Family] = {
    # the class marks its tower for images and videos (Qwen3-VL's), though it takes images only
    "Alpamayo2Super": with_deepstack(
        vision_language("Qwen3ForCausalLM", vision_tower, prepare=_decoder, text_of=_text_of, tower_of=_vision_of),
        _text_of,
        _vision_of,
        ("image", "video"),
    )
}

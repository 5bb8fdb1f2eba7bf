"""HyperCLOVA X SEED vision V2 (``hyperclovax_vision_v2.py``, ``HCXVisionV2ForCausalLM``),
unquantized.

The language model: the architecture ``text_config`` names (``init_vllm_registered_model``;
``HyperCLOVAXForCausalLM`` by default: :func:`.compose.wrapped_text_architecture`). The tower
(``_mark_tower_model`` for image and video: dropped by ``--language-model-only`` or both limited to
0): Qwen2.5-VL's vision transformer on ``vision_config`` (:func:`.qwen2_vl.qwen2_5_vl_tower`,
without the device-side input normalization, which only Qwen2.5-VL's own wrapper passes it), then
``mm_projector``, a plain ``nn.Linear`` ``[H_text, out_hidden_size]`` with its bias, whole on every
rank. The class has no ``supports_encoder_tp_data``: ``--mm-encoder-tp-mode data`` falls back to
``weights``.

The LM head follows the wrapper's ``tie_word_embeddings`` (``HyperCLOVAXVisionV2Config``'s default
true), which vLLM writes over the text config's for a multimodal model
(``VllmConfig.with_hf_config``): tied by default. (A checkpoint shipping an ``lm_head`` unties it,
``ModelConfig.maybe_untie_word_embeddings``; from the config alone dryboot follows the config.)"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from dryboot.vllm.model_executor.model_loader import weights as W
from dryboot.vllm.model_executor.models.compose import (
    Family,
    WalkArgs,
    text_config,
    vision_language,
    wrapped_text_architecture,
)
from dryboot.vllm.model_executor.models.qwen2_vl import QWEN2_5_VL_VISION, qwen2_5_vl_tower
from dryboot.vllm.model_executor.models.towers import linear, tensors

MODALITIES = ("image", "video")


def _tower(vision: Mapping[str, Any], text: Mapping[str, Any], tp: int, ab: int) -> W.RankWeights:
    """Qwen2.5-VL's tower and the projector (module docstring)."""
    w = qwen2_5_vl_tower(vision, text, tp, ab, input_norm=False)
    out = W._int({**QWEN2_5_VL_VISION, **vision}, "out_hidden_size")
    return tensors("vision", linear(W._int(text, "hidden_size"), out), ab, into=w)


def _text(config: Mapping[str, Any]) -> Any:
    """``text_config`` with the wrapper's ``tie_word_embeddings`` (default true) over its own."""
    text = text_config(config)
    if not isinstance(text, Mapping):
        return text
    return {**text, "tie_word_embeddings": bool(config.get("tie_word_embeddings", True))}


def _walk(config: Mapping[str, Any], par: W.Parallel, args: WalkArgs) -> W.RankWeights:
    text_arch = wrapped_text_architecture(config, str(config["architectures"][0]))
    return vision_language(text_arch, _tower, modalities=MODALITIES, text_of=_text).walk(config, par, args)


FAMILIES: dict[str, Family] = {"HCXVisionV2ForCausalLM": Family(_walk, MODALITIES)}

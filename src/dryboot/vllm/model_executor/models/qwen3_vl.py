"""Qwen3-VL and Qwen3-VL-MoE (``qwen3_vl.py``, ``qwen3_vl_moe.py``): the Qwen3 / Qwen3-MoE text
model of ``text_config`` and the Qwen3-VL vision transformer (patch embedding, blocks, merger and
deepstack mergers, its rotary table), the tower Qwen3.5 shares (``weights._qwen3_vision_tower``)."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from dryboot.vllm.model_executor.model_loader import weights as W
from dryboot.vllm.model_executor.models.compose import Family, pp_refused_on, vision_language


def vision_tower(vision: Mapping[str, Any], text: Mapping[str, Any], tp: int, ab: int) -> W.RankWeights:
    """``Qwen3_VisionTransformer`` on one rank (see ``weights._qwen3_vision_tower``)."""
    w = W._Walk(None)  # no decoder attention layer (no q/k/v_range)
    W._qwen3_vision_tower(w, vision, tp, ab)
    return w.result()


#: vLLM 0.28.0 builds Qwen3-VL's language model from ``vllm_config.with_hf_config(text_config)``,
#: whose validation under pipeline parallelism fails on a text config without ``architectures``
#: (the published ones have none)
PP_REFUSED = (
    "vLLM 0.27.1 and 0.28.0 cannot build its language model under pipeline parallelism (VllmConfig validation of the "
    "text config: 'No model architectures are specified')"
)

#: the releases that refuse it (0.30.0 and 0.33.0 build each stage: recorded)
PP_REFUSED_ON = frozenset({"0.27.1", "0.28.0"})


def _text(text: Mapping[str, Any]) -> Mapping[str, Any]:
    """The text config as ``Qwen3VLDecoderLayer`` builds it (its RoPE table's positions per
    release: ``weights.QWEN3_VL_DECODER``)."""
    return {**text, W.QWEN3_VL_DECODER: True}


FAMILIES: dict[str, Family] = {
    arch: pp_refused_on(vision_language(text_arch, vision_tower, prepare=_text), PP_REFUSED_ON, PP_REFUSED)
    for arch, text_arch in (
        ("Qwen3VLForConditionalGeneration", "Qwen3ForCausalLM"),
        ("Qwen3VLMoeForConditionalGeneration", "Qwen3MoeForCausalLM"),
    )
}

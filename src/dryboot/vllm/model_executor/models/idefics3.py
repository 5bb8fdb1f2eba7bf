"""Idefics3 (``idefics3.py``, ``Idefics3ForConditionalGeneration``) and SmolVLM (``smolvlm.py``, an
Idefics3 subclass): the Llama language model of ``text_config``, then on every TP rank the
Idefics3 vision tower (:mod:`.siglip`'s layout without a ``position_ids`` buffer) and the
connector ``modality_projection.proj`` ``[H_text, D x scale_factor^2]`` (no bias, replicated).
No pipeline parallelism (the class lacks ``SupportsPP``: vLLM refuses it). ``--language-model-only``
or ``--limit-mm-per-prompt`` image 0 drops the tower and connector."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from dryboot.vllm.model_executor.model_loader import weights as W
from dryboot.vllm.model_executor.models import siglip
from dryboot.vllm.model_executor.models.compose import Family, vision_language, without_pp

#: ``Idefics3VisionConfig``'s defaults (transformers 5.x) where they differ from SigLIP's
VISION_DEFAULTS: dict[str, Any] = {
    "hidden_size": 1152,
    "intermediate_size": 3072,
    "num_hidden_layers": 12,
    "num_attention_heads": 16,
    "image_size": 224,
    "patch_size": 32,
}


def _connector(scale: int) -> Any:
    def tower(v: Mapping[str, Any], text: Mapping[str, Any], tp: int, ab: int) -> W.RankWeights:
        v = {**VISION_DEFAULTS, **v}
        w = siglip.vision_tower(v, tp, ab, position_ids=False)
        w.add("vision", W._int(text, "hidden_size") * W._int(v, "hidden_size") * scale * scale * ab)
        return w

    return tower


def _family() -> Family:
    def walk(config: Mapping[str, Any], par: W.Parallel, args: Any) -> W.RankWeights:
        scale = W._int({"scale_factor": config.get("scale_factor", 2)}, "scale_factor")
        return vision_language("LlamaForCausalLM", _connector(scale), modalities=("image",)).walk(config, par, args)

    return without_pp(Family(walk, ("image",)))


FAMILIES: dict[str, Family] = {
    "Idefics3ForConditionalGeneration": _family(),
    "SmolVLMForConditionalGeneration": _family(),
}

"""Command A Vision (``cohere2_vision.py``, ``Cohere2VisionForConditionalGeneration``): the
Cohere-2 language model of ``text_config`` (:mod:`.commandr`), then on every TP rank and pipeline
stage the SigLIP tower (:mod:`.siglip`) and the projector: ``linear_1`` ``[A / TP, D x
downsample_factor^2]`` + bias (``A = alignment_intermediate_size``), a SwiGLU halving it,
``linear_2`` ``[H_text, A / 2 / TP]`` + bias (whole). ``--language-model-only`` or
``--limit-mm-per-prompt`` image 0 drops the tower and projector."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from dryboot.vllm.model_executor.model_loader import weights as W
from dryboot.vllm.model_executor.models import siglip
from dryboot.vllm.model_executor.models.compose import Family, WalkArgs, vision_language


def _projector(ds: int, align: int) -> Any:
    def tower(v: Mapping[str, Any], text: Mapping[str, Any], tp: int, ab: int) -> W.RankWeights:
        w = siglip.vision_tower(v, tp, ab)
        d = W._int({**siglip.DEFAULTS, **v}, "hidden_size") * ds * ds
        a_r = W._divide(align, tp, "alignment_intermediate_size")
        half = W._divide(align // 2, tp, "alignment_intermediate_size / 2")
        h = W._int(text, "hidden_size")
        for n in (a_r * d, a_r, h * half, h):
            w.add("vision", n * ab)
        return w

    return tower


def walk(config: Mapping[str, Any], par: W.Parallel, args: WalkArgs) -> W.RankWeights:
    """One rank of one stage (module docstring)."""
    ds = W._int({"d": config.get("downsample_factor", 2)}, "d")
    align = W._int({"a": config.get("alignment_intermediate_size", 36864)}, "a")
    return vision_language("Cohere2ForCausalLM", _projector(ds, align), modalities=("image",)).walk(config, par, args)


FAMILIES: dict[str, Family] = {"Cohere2VisionForConditionalGeneration": Family(walk, ("image",))}

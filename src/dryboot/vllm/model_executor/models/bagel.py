"""BAGEL (``bagel.py``, ``BagelForConditionalGeneration``): the Qwen2 language model of
``llm_config`` (vLLM builds its understanding path only), then, under ``visual_und`` (true by
default), on every TP rank and pipeline stage the SigLIP tower of ``vit_config`` (:mod:`.siglip`;
27 layers are built as 26, as vLLM overrides them to match the published checkpoint), the
connector (``fc1`` ColumnParallel ``[H / TP, D]`` + bias, ``fc2`` RowParallel ``[H, H / TP]`` +
bias) and the float32 2-D sin-cos positions ``[vit_max_num_patch_per_side^2, H]`` (a buffer).
``--language-model-only`` or ``--limit-mm-per-prompt`` image 0 drops them. A ``vit_config`` with
``vision_use_head`` (SigLIP's pooling head) is refused by name."""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping
from typing import Any

from dryboot.errors import InputError
from dryboot.vllm.model_executor.model_loader import weights as W
from dryboot.vllm.model_executor.models import siglip
from dryboot.vllm.model_executor.models.compose import Family, WalkArgs, vision_language
from dryboot.vllm.model_executor.models.towers import linear, tensors


def _tower(config: Mapping[str, Any], text: Mapping[str, Any], tp: int, ab: int) -> W.RankWeights:
    v = dict(config.get("vit_config") or {})
    if v.get("vision_use_head"):
        raise InputError("config.json", "vit_config.vision_use_head", "SigLIP's pooling head is not modelled")
    if v.get("num_hidden_layers") == 27:
        v["num_hidden_layers"] = 26
    w = siglip.vision_tower(v, tp, ab)
    d = W._int({**siglip.DEFAULTS, **v}, "hidden_size")
    h = W._int(text, "hidden_size")
    h_r = W._divide(h, tp, "the connector's width")
    side = W._int(config, "vit_max_num_patch_per_side", 70)
    return tensors("vision", [*linear(h_r, d), h * h_r, h], ab, buffers=[4 * side * side * h], into=w)


def walk(config: Mapping[str, Any], par: W.Parallel, args: WalkArgs) -> W.RankWeights:
    """One rank of one stage (module docstring)."""
    if not config.get("visual_und", True):
        args = dataclasses.replace(args, no_tower=True)
    family = vision_language(
        "Qwen2ForCausalLM", _tower, ("image",), text_of=lambda c: c.get("llm_config"), tower_of=lambda c: c
    )
    return family.walk(config, par, args)


FAMILIES: dict[str, Family] = {"BagelForConditionalGeneration": Family(walk, ("image",))}

"""Kimi-K3 (``KimiK3ForConditionalGeneration``, vLLM 0.27.1-0.33.0: ``vllm/models/kimi_k3/nvidia/model.py``):
its language model is ``KimiLinearForCausalLM`` with Kimi-K3's options (:mod:`.kimi_linear`: q-LoRA
MLA with the output gate, the full-rank KDA gate, attention residuals, latent MoE), sized on every
stage; the wrapper's MoonViT tower (``MoonViT3dPretrainedModel``) and ``mm_projector`` are not.

The tower stays refused by name: vLLM builds it, then casts it to the model dtype unless it sits
on the meta device (``is_meta_module``), so the fidelity oracle (the meta device) keeps its
temporal position table ``pos_emb.time_weight`` in float32 where a GPU holds the model dtype: the
figure a GPU allocates cannot be checked against it. ``--language-model-only`` (or
``--limit-mm-per-prompt`` ``{"image": 0}``) drops the tower, and on 0.33 pipeline stages after the
first build none. The published checkpoint's compressed-tensors MXFP4 experts are refused by name
(quantized layouts of this wrapper are not modelled)."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from dryboot.errors import InputError
from dryboot.vllm.model_executor.model_loader import weights as W
from dryboot.vllm.model_executor.models.compose import text_config, vision_language
from dryboot.vllm.model_executor.models.kimi_linear import FAMILIES as LINEAR


def _tower(v: Mapping[str, Any], text: Mapping[str, Any], tp: int, ab: int) -> W.RankWeights:
    """Refused (module docstring).

    :raises InputError: always, naming the tower."""
    raise InputError(
        "config.json",
        "vision_config",
        "Kimi-K3's MoonViT tower (MoonViT3dPretrainedModel, with its mm_projector) is not sized (vLLM casts the "
        "tower to the model dtype off the meta device only, so its float32 time table cannot be checked); "
        "--language-model-only sizes the language model",
    )


FAMILIES = {
    "KimiK3ForConditionalGeneration": vision_language(
        LINEAR["KimiLinearForCausalLM"], _tower, ("image",), text_of=text_config
    ),
}

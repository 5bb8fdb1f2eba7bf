"""InternVL 2 / 2.5 / 3 / 3.5 (``internvl.py``, ``InternVLChatModel``; the checkpoint's own config class,
``--trust-remote-code``): the language model of ``llm_config`` built as the architecture its
``architectures`` names (Llama, Qwen2, Qwen3, Qwen3-MoE, GPT-OSS or InternLM2: those the
checkpoints' ``InternVLChatConfig`` versions read and dryboot plans), then on every TP rank InternViT
and the projector ``mlp1`` as Qianfan-OCR's (the same model class: :func:`.qianfan_ocr.intern_vit_tower`),
in the model dtype.

Vision fields left out take ``InternVisionConfig``'s defaults (the checkpoint's
``configuration_intern_vit.py``: InternViT-6B's, whose ``qk_normalization`` is refused by name);
``--language-model-only`` or ``--limit-mm-per-prompt`` image 0 and video 0 drop the tower."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from dryboot.errors import InputError
from dryboot.vllm.model_executor.model_loader import weights as W
from dryboot.vllm.model_executor.models.compose import Family, WalkArgs, vision_language
from dryboot.vllm.model_executor.models.qianfan_ocr import intern_vit_tower

#: ``InternVisionConfig``'s defaults (``configuration_intern_vit.py`` of the InternVL checkpoints;
#: ``tests/fidelity/data/remote-code/internvl_chat/``)
VISION_DEFAULTS: dict[str, Any] = {
    "hidden_size": 3200,
    "intermediate_size": 12800,
    "num_hidden_layers": 48,
    "num_attention_heads": 25,
    "num_channels": 3,
    "image_size": 224,
    "patch_size": 14,
    "qkv_bias": False,
    "qk_normalization": True,
    "norm_type": "rms_norm",
}

#: the language models ``InternVLChatConfig`` builds (by ``llm_config.architectures[0]``) that
#: dryboot plans
TEXT_ARCHITECTURES = (
    "LlamaForCausalLM",
    "Qwen2ForCausalLM",
    "Qwen3ForCausalLM",
    "Qwen3MoeForCausalLM",
    "GptOssForCausalLM",
    # InternVL 2 / 2.5's InternLM2 checkpoints (their older InternVLChatConfig)
    "InternLM2ForCausalLM",
)


def walk(config: Mapping[str, Any], par: W.Parallel, args: WalkArgs) -> W.RankWeights:
    """One rank of one stage (module docstring).

    :raises InputError: a language model not modelled, what the composed walk refuses."""
    text = config.get("llm_config")
    names = text.get("architectures") if isinstance(text, Mapping) else None
    arch = str(names[0]) if isinstance(names, list) and names else None
    if arch not in TEXT_ARCHITECTURES:
        raise InputError(
            "config.json", "llm_config.architectures", f"a {arch} language model of InternVLChatModel is not modelled"
        )
    family = vision_language(
        arch,
        intern_vit_tower(VISION_DEFAULTS),
        ("image", "video"),
        text_of=lambda c: c.get("llm_config"),
        tower_of=lambda c: c,
    )
    return family.walk(config, par, args)


FAMILIES: dict[str, Family] = {"InternVLChatModel": Family(walk, ("image", "video"))}

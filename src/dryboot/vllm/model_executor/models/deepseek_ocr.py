"""DeepSeek-OCR (``deepseek_ocr.py``, ``DeepseekOCRForCausalLM``) and DeepSeek-OCR 2
(``deepseek_ocr2.py``, ``DeepseekOCR2ForCausalLM``): the DeepSeek language model of
``language_config`` (built as the architecture it names: DeepSeek-V2 or V3), then on every TP
rank and pipeline stage the DeepEncoder (:mod:`.deepencoder`: SAM ViT-B with CLIP-L, or with the
Qwen2 encoder for OCR 2), the projector (``projector_type`` ``linear``: ``[n_embed, input_dim]`` +
bias) and the tile separators ``[n_embed]`` (``image_newline``, OCR 1 only, and
``view_seperator``), in the model dtype. ``--language-model-only`` or ``--limit-mm-per-prompt``
image 0 drops them but the separators (plain parameters of the wrapper). Other projector types are refused by name."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from dryboot.errors import InputError
from dryboot.vllm.model_executor.model_loader import weights as W
from dryboot.vllm.model_executor.models import deepencoder
from dryboot.vllm.model_executor.models.compose import Family, WalkArgs, merged, vision_language
from dryboot.vllm.model_executor.models.towers import linear, tensors

TEXT_ARCHITECTURES = ("DeepseekV2ForCausalLM", "DeepseekV3ForCausalLM")


def _projector(config: Mapping[str, Any], ab: int) -> W.RankWeights:
    p = config.get("projector_config") or {}
    if p.get("projector_type", "linear") != "linear":
        raise InputError(
            "config.json", "projector_config.projector_type", f"a {p.get('projector_type')} projector is not modelled"
        )
    return tensors("vision", linear(W._int(p, "n_embed"), W._int(p, "input_dim")), ab)


def _ocr1(config: Mapping[str, Any], text: Mapping[str, Any], tp: int, ab: int) -> W.RankWeights:
    w = merged(deepencoder.sam_vit_b(1024, ab), deepencoder.clip_l(tp, ab))
    return merged(w, _projector(config, ab))


def _ocr2(config: Mapping[str, Any], text: Mapping[str, Any], tp: int, ab: int) -> W.RankWeights:
    w = merged(deepencoder.sam_vit_b(deepencoder.QWEN2_ENCODER["hidden"], ab), deepencoder.qwen2_encoder(ab))
    return merged(w, _projector(config, ab))


def _family(tower: Any, separators: int) -> Family:
    def walk(config: Mapping[str, Any], par: W.Parallel, args: WalkArgs) -> W.RankWeights:
        text = config.get("language_config") or config.get("text_config") or {}
        archs = text.get("architectures") if isinstance(text, Mapping) else None
        arch = str(archs[0]) if isinstance(archs, list) and archs else "DeepseekV2ForCausalLM"
        if arch not in TEXT_ARCHITECTURES:
            raise InputError("config.json", "language_config.architectures", f"a {arch} language model is not modelled")
        family = vision_language(
            arch,
            tower,
            ("image",),
            text_of=lambda c: c.get("language_config") or c.get("text_config"),
            tower_of=lambda c: c,
        )
        w = family.walk(config, par, args)
        # the separators are plain parameters of the wrapper: kept without the tower too
        n = W._int(config.get("projector_config") or {}, "n_embed")
        ab = W.model_dtype_bytes({**config, **text}, args.dtype)
        return tensors("vision", [n] * separators, ab, into=w)

    return Family(walk, ("image",))


FAMILIES: dict[str, Family] = {
    "DeepseekOCRForCausalLM": _family(_ocr1, 2),
    "DeepseekOCR2ForCausalLM": _family(_ocr2, 1),
    # UnlimitedOCRForCausalLM subclasses DeepseekOCRForCausalLM: the same towers and separators
    "UnlimitedOCRForCausalLM": _family(_ocr1, 2),
}

"""LLaVA (``llava.py``, ``LlavaForConditionalGeneration``) and LLaVA-Next (``llava_next.py``,
``LlavaNextForConditionalGeneration``) with a CLIP tower: the language model of ``text_config``,
built as the architecture its ``model_type`` names (Llama, Mistral, Qwen2; the config class's
default text model is Llama), then on every TP rank and pipeline stage the CLIP tower
(:mod:`.clip`, up to ``vision_feature_layer``, no post LayerNorm) and the projector
(``LlavaMultiModalProjector``: ``linear_1`` ColumnParallel ``[H_text / TP, D_vision x features]``,
``linear_2`` RowParallel ``[H_text, H_text / TP]``, with biases under
``multimodal_projector_bias``, true by default). ``--language-model-only`` or
``--limit-mm-per-prompt`` image 0 drops the tower and projector; LLaVA-Next's ``image_newline``
``[H_text]``, a plain parameter of the wrapper, stays either way.
Other towers (SigLIP, Pixtral) are refused by name.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from dryboot.errors import InputError
from dryboot.vllm.model_executor.model_loader import weights as W
from dryboot.vllm.model_executor.models import clip
from dryboot.vllm.model_executor.models.compose import Family, WalkArgs, vision_language

#: text ``model_type`` -> the architecture vLLM builds (``init_vllm_registered_model``)
TEXT_ARCHITECTURES = {
    "llama": "LlamaForCausalLM",
    "mistral": "MistralForCausalLM",
    "qwen2": "Qwen2ForCausalLM",
}


def _tower(newline: bool) -> Any:
    def tower(
        config: Mapping[str, Any], v: Mapping[str, Any], text: Mapping[str, Any], tp: int, ab: int
    ) -> W.RankWeights:
        if v.get("model_type", "clip_vision_model") != "clip_vision_model":
            raise InputError(
                "config.json", "vision_config.model_type", f"a {v.get('model_type')} tower is not modelled"
            )
        n_layers = W._int({**clip.DEFAULTS, **v}, "num_hidden_layers")
        feature = config.get("vision_feature_layer", -2)
        w = clip.vision_tower(v, tp, ab, layers=clip.layers_built(feature, n_layers))
        d = W._int({**clip.DEFAULTS, **v}, "hidden_size") * (
            len(feature) if newline and isinstance(feature, list) else 1
        )
        h = W._int(text, "hidden_size")
        h_r = W._divide(h, tp, "the projector's width")
        bias = bool(config.get("multimodal_projector_bias", True))
        for n in (h_r * d, *([h_r] if bias else []), h * h_r, *([h] if bias else [])):
            w.add("vision", n * ab)
        return w

    return tower


def _family(newline: bool) -> Family:
    def walk(config: Mapping[str, Any], par: W.Parallel, args: WalkArgs) -> W.RankWeights:
        text = config.get("text_config") or {}
        kind = str(text.get("model_type", "llama")) if isinstance(text, Mapping) else "llama"
        if kind not in TEXT_ARCHITECTURES:
            raise InputError("config.json", "text_config.model_type", f"a {kind} language model is not modelled")
        tower = _tower(newline)
        family = vision_language(
            TEXT_ARCHITECTURES[kind], lambda v, t, tp, ab: tower(config, v, t, tp, ab), modalities=("image",)
        )
        weights = family.walk(config, par, args)
        if newline:  # a plain parameter of the wrapper: kept without the tower too
            merged = {**config, **text}
            weights.add("vision", W._int(merged, "hidden_size") * W.model_dtype_bytes(merged, args.dtype))
        return weights

    return Family(walk, ("image",))


FAMILIES: dict[str, Family] = {
    "LlavaForConditionalGeneration": _family(newline=False),
    "LlavaNextForConditionalGeneration": _family(newline=True),
}

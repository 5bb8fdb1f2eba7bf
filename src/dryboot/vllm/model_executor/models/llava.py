"""LLaVA (``llava.py``, ``LlavaForConditionalGeneration``) and LLaVA-Next (``llava_next.py``,
``LlavaNextForConditionalGeneration``): the language model of ``text_config``,
built as the architecture its ``model_type`` names (Llama, Mistral, Qwen2; the config class's
default text model is Llama), then on every TP rank and pipeline stage the vision tower
(:func:`init_vision_tower`: CLIP by default, SigLIP or Pixtral (Pixtral-12B in the HF layout), up
to ``vision_feature_layer``, no post norm) and the projector
(``LlavaMultiModalProjector``: ``linear_1`` ColumnParallel ``[H_text / TP, D_vision x features]``,
``linear_2`` RowParallel ``[H_text, H_text / TP]``, with biases under
``multimodal_projector_bias``, true by default). ``--language-model-only`` or
``--limit-mm-per-prompt`` image 0 drops the tower and projector; LLaVA-Next's ``image_newline``
``[H_text]``, a plain parameter of the wrapper, stays either way. Other towers are refused by
name.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from dryboot.errors import InputError
from dryboot.vllm.model_executor.model_loader import weights as W
from dryboot.vllm.model_executor.models import clip, pixtral, siglip
from dryboot.vllm.model_executor.models.compose import Family, WalkArgs, vision_language
from dryboot.vllm.model_executor.models.towers import linear

#: text ``model_type`` -> the architecture vLLM builds (``init_vllm_registered_model``)
TEXT_ARCHITECTURES = {
    "llama": "LlamaForCausalLM",
    "mistral": "MistralForCausalLM",
    "qwen2": "Qwen2ForCausalLM",
}


def _tower(newline: bool, version: str) -> Any:
    def tower(
        config: Mapping[str, Any], v: Mapping[str, Any], text: Mapping[str, Any], tp: int, ab: int
    ) -> W.RankWeights:
        feature = config.get("vision_feature_layer", -2)
        w = init_vision_tower({**config, "vision_feature_layer": feature}, v, tp, ab, "clip_vision_model", version)
        kind = str(v.get("model_type", "clip_vision_model"))
        d = W._int({**TOWERS[kind].DEFAULTS, **v}, "hidden_size") * (
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
            raise InputError("config.json", "text_config.model_type", f"a {kind!r} language model is not modelled")
        tower = _tower(newline, par.vllm_version)
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


#: the towers ``init_vision_tower_for_llava`` builds, by their config's ``model_type``
TOWERS = {"clip_vision_model": clip, "siglip_vision_model": siglip, "pixtral": pixtral}


def init_vision_tower(
    config: Mapping[str, Any], v: Mapping[str, Any], tp: int, ab: int, kind: str, version: str
) -> W.RankWeights:
    """``llava.py`` ``init_vision_tower_for_llava`` (``require_post_norm=False``) on one rank: the
    tower of ``vision_config``'s class (its ``model_type``, ``kind`` when absent: the wrapper
    config class's default), CLIP (:mod:`.clip`), SigLIP (:mod:`.siglip`) or Pixtral
    (:mod:`.pixtral`, on release ``version``), up to ``vision_feature_layer``
    (:func:`.clip.layers_built`).

    :raises InputError: another tower (named)."""
    kind = str(v.get("model_type", kind))
    if kind not in TOWERS:
        raise InputError("config.json", "vision_config.model_type", f"a {kind!r} tower is not modelled")
    n_layers = W._int({**TOWERS[kind].DEFAULTS, **v}, "num_hidden_layers")
    layers = clip.layers_built(config["vision_feature_layer"], n_layers)
    if kind == "siglip_vision_model":
        return siglip.vision_tower(v, tp, ab, layers=layers, post_norm=False)
    if kind == "pixtral":
        return pixtral.vision_tower(v, tp, ab, layers=layers, version=version)
    return clip.vision_tower(v, tp, ab, layers=layers)


def whole_projector(v: Mapping[str, Any], text: Mapping[str, Any], bias: bool, kind: str) -> list[int]:
    """The projector of LLaVA-OneVision and LLaVA-NeXT-Video (plain ``nn.Linear`` layers, whole on
    every rank): ``linear_1`` ``[H_text, D_vision]`` and ``linear_2`` ``[H_text, H_text]``, with
    biases under ``bias``; ``kind``: the tower's default ``model_type`` (its width's default)."""
    d = W._int({**TOWERS[str(v.get("model_type", kind))].DEFAULTS, **v}, "hidden_size")
    h = W._int(text, "hidden_size")
    return [*linear(h, d, bias), *linear(h, h, bias)]

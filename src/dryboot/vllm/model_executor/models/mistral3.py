"""Mistral3 (``mistral3.py``, ``Mistral3ForConditionalGeneration``: Mistral-Small-3.1/3.2,
Ministral-3, Magistral-Small, Devstral-Small-2 as vision models): the language model of
``text_config`` built as the architecture it names (``init_vllm_registered_model``; Mistral3Config's
default text model is Mistral), then on every TP rank and pipeline stage the Pixtral tower
(:mod:`.pixtral`, up to ``vision_feature_layer``, -1 by default) and the projector
(``Mistral3MultiModalProjector``): the RMSNorm ``[D]``, the patch merger's ``merging_layer``
``[D, D x spatial_merge_size^2]`` (plain ``nn.Linear``, no bias), ``linear_1`` ColumnParallel
``[H_text / TP, D]`` and ``linear_2`` RowParallel ``[H_text, H_text / TP]``, with biases under
``multimodal_projector_bias`` (false by default). ``--language-model-only`` or
``--limit-mm-per-prompt`` image 0 drops the tower and projector.

LightOnOCR (``lightonocr.py``) builds the same modules: :mod:`.lightonocr`.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from dryboot.errors import InputError
from dryboot.vllm.model_executor.model_loader import weights as W
from dryboot.vllm.model_executor.models import clip, pixtral
from dryboot.vllm.model_executor.models.compose import (
    Family,
    WalkArgs,
    merged,
    text_config,
    vision_language,
    wrapped_text_architecture,
)
from dryboot.vllm.model_executor.models.towers import tensors

#: ``Mistral3Config``'s defaults (transformers 5.x) for the wrapper's own fields
DEFAULTS: dict[str, Any] = {"vision_feature_layer": -1, "multimodal_projector_bias": False, "spatial_merge_size": 2}


def projector(config: Mapping[str, Any], d: int, h: int, tp: int, ab: int, quant: W.Quant) -> W.RankWeights:
    """``Mistral3MultiModalProjector``'s tensors on one rank (module docstring) for a tower of
    width ``d`` and a language model of width ``h``: ``linear_1`` / ``linear_2`` under ``quant``
    (:func:`.weights.linear_bytes`; their biases in the model dtype), the norm and the merging
    layer (plain ``nn.Linear``) in the model dtype."""
    m = W._int(config, "spatial_merge_size")
    bias = bool(config.get("multimodal_projector_bias"))
    h_r = W._divide(h, tp, "the projector's width")
    w = tensors("vision", [d, d * d * m * m, *([h_r, h] if bias else [])], ab)
    linears = W.linear_bytes(quant, d, (h_r,), ab, tp=tp) + W.linear_bytes(quant, h_r, (h,), ab, tp=tp, split="row")
    for _, nbytes in linears:
        w.add("vision", nbytes)
    return w


def quantized(quant: W.Quant) -> bool:
    """The checkpoint quantizations whose tower and projector this module sizes: fp8 with one
    scale per tensor (vLLM builds the tower's and projector's parallel linears with it, whatever
    ``modules_to_not_convert`` says: recorded on Devstral-Small-2)."""
    return quant.method == "fp8" and quant.block is None


def _tower(config: Mapping[str, Any], version: str, quant: W.Quant) -> Any:
    def tower(v: Mapping[str, Any], text: Mapping[str, Any], tp: int, ab: int) -> W.RankWeights:
        if v.get("model_type", "pixtral") != "pixtral":
            raise InputError(
                "config.json", "vision_config.model_type", f"a {v.get('model_type')!r} tower is not modelled (Pixtral)"
            )
        n_layers = W._int({**pixtral.DEFAULTS, **v}, "num_hidden_layers")
        layers = clip.layers_built(config["vision_feature_layer"], n_layers)
        w = pixtral.vision_tower(v, tp, ab, layers=layers, version=version, quant=quant)
        d = W._int({**pixtral.DEFAULTS, **v}, "hidden_size")
        return merged(w, projector(config, d, W._int(text, "hidden_size"), tp, ab, quant))

    return tower


def family(defaults: Mapping[str, Any] = DEFAULTS) -> Family:
    """The Mistral3 composition over a config class's ``defaults`` (module docstring)."""

    def walk(config: Mapping[str, Any], par: W.Parallel, args: WalkArgs) -> W.RankWeights:
        config = {**defaults, **config}
        arch = str(config["architectures"][0])
        text_arch = wrapped_text_architecture(config, arch)
        tower = _tower(config, par.vllm_version, W.quant_from_config(config, args.hf_quant))
        family = vision_language(text_arch, tower, modalities=("image",), text_of=text_config, quantized=quantized)
        return family.walk(config, par, args)

    return Family(walk, ("image",))


FAMILIES: dict[str, Family] = {"Mistral3ForConditionalGeneration": family()}

"""Granite-4-Vision (``granite4_vision.py``, ``Granite4VisionForConditionalGeneration``): the
language model of ``text_config`` built as Granite (``Granite4VisionLLMForCausalLM``: Granite's
layers with deepstack features added in the layer loop, the same tensors), then on every TP rank
and pipeline stage:

* the whole SigLIP tower (:mod:`.siglip`: every layer, whatever ``vision_feature_layer`` says, no
  post norm);
* one ``WindowQFormerDownsampler`` per ``deepstack_layer_map`` entry (``layerwise_projectors``),
  and four more (``spatial_projectors``) under ``use_spatial_sampling`` (or its alias
  ``use_checkerboard_sampling``): each a one-layer Q-Former (:func:`.towers.qformer` of the tower's
  width ``D``, cross attention over ``D``, ``intermediate_size`` 3072), a LayerNorm ``[D]``,
  ``query`` ``[1, q^2, D]`` and ``image_positions`` ``[1, w^2, D]`` (``downsample_rate`` ``"q/w"``),
  ``out_linear`` ``[H_text, D]`` + bias, all whole;
* ``image_newline`` ``[H_text]`` under ``use_image_newline_parameter`` (true by default): a plain
  parameter of the wrapper, kept without the tower too.

On 0.32.0 and 0.33.0 the model class builds the newline and the four spatial projectors whatever
the config says (recorded on both; 0.27.1-0.31.0 follow the config).

``--language-model-only`` or ``--limit-mm-per-prompt`` image 0 drops the tower and projectors.
The deepstack feature buffers, one ``[max_num_batched_tokens, H_text]`` per level (each
``deepstack_layer_map`` entry and each ``spatial_target_layers`` entry), are part of the weights:
the model class makes them with ``torch.zeros`` and no device or dtype while vLLM's loader builds
the model under its device context and default dtype (``base_loader.load_model``), so they land
on the GPU in the model dtype before the KV cache is sized (counted in ``Model loading took``;
the "CPU first" of vLLM's comment does not hold there). They are plain list attributes, not
buffers, so they count as buffer bytes here (``deepstack_buffer_bytes``) and in the
recorder's allocated bytes only. Without ``max_num_batched_tokens`` the model is refused.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from dryboot.errors import InputError
from dryboot.vllm.model_executor.model_loader import weights as W
from dryboot.vllm.model_executor.models import siglip
from dryboot.vllm.model_executor.models.compose import Family, WalkArgs, text_config, vision_language
from dryboot.vllm.model_executor.models.towers import linear, qformer, tensors
from dryboot.vllm.versions import rules_for

#: ``Granite4VisionConfig``'s (vLLM's) defaults for the wrapper's own fields
DEFAULTS: dict[str, Any] = {"use_image_newline_parameter": True, "use_spatial_sampling": False}


def _rate(config: Mapping[str, Any]) -> tuple[int, int]:
    rate = config.get("downsample_rate")
    parts = rate.split("/") if isinstance(rate, str) else []
    if len(parts) != 2 or not all(p.strip().isdigit() and int(p) > 0 for p in parts):
        raise InputError("config.json", "downsample_rate", "a string 'q/w' of two positive integers (vLLM reads it)")
    return int(parts[0]), int(parts[1])


#: releases whose model class builds the newline and the spatial projectors whatever the config
#: says (recorded: ``recorded-0.32.0-wrappers.json``, ``recorded-0.33.0-wrappers.json``; 0.27.1-0.31.0
#: follow the config)
ALWAYS_ALL_RELEASES = frozenset({"0.32.0", "0.33.0"})


def _always_all(version: str) -> bool:
    """Whether release ``version``'s model class builds the newline and spatial projectors
    unconditionally (module docstring)."""
    return rules_for(version).version in ALWAYS_ALL_RELEASES


def _projectors(config: Mapping[str, Any], version: str) -> int:
    """How many ``WindowQFormerDownsampler`` the model class builds on release ``version``."""
    layer_map = config.get("deepstack_layer_map") or config.get("vision_layer_to_llm_layer")
    if not isinstance(layer_map, list) or not layer_map:
        raise InputError("config.json", "deepstack_layer_map", "missing (vLLM's model class reads it)")
    checker = config.get("use_checkerboard_sampling")
    spatial = config["use_spatial_sampling"] if checker is None else checker
    return len(layer_map) + (4 if spatial or _always_all(version) else 0)


def _walk(config: Mapping[str, Any], par: W.Parallel, args: WalkArgs) -> W.RankWeights:
    config = {**DEFAULTS, **config}
    text = config.get("text_config")
    kind = str(text.get("model_type", "granite")) if isinstance(text, Mapping) else "granite"
    if kind != "granite":
        raise InputError(
            "config.json", "text_config.model_type", f"a {kind!r} language model is not modelled (granite)"
        )
    q, win = _rate(config)
    n_projectors = _projectors(config, par.vllm_version)

    def tower(v: Mapping[str, Any], t: Mapping[str, Any], tp: int, ab: int) -> W.RankWeights:
        if v.get("model_type", "siglip_vision_model") != "siglip_vision_model":
            raise InputError(
                "config.json", "vision_config.model_type", f"a {v.get('model_type')!r} tower is not modelled (SigLIP)"
            )
        w = siglip.vision_tower(v, tp, ab, post_norm=False)
        d, h = W._int({**siglip.DEFAULTS, **v}, "hidden_size"), W._int(t, "hidden_size")
        q_former = {"hidden_size": d, "num_hidden_layers": 1, "intermediate_size": 3072, "cross_attention_frequency": 1}
        one = [*qformer(q_former, d), d, d, q * q * d, win * win * d, *linear(h, d)]
        return tensors("vision", one * n_projectors, ab, into=w)

    weights = vision_language("GraniteForCausalLM", tower, modalities=("image",), text_of=text_config).walk(
        config, par, args
    )
    merged = {**config, **(text if isinstance(text, Mapping) else {})}
    ab = W.model_dtype_bytes(merged, args.dtype)
    if config["use_image_newline_parameter"] or _always_all(par.vllm_version):
        weights.add("vision", W._int(merged, "hidden_size") * ab)
    if args.max_num_batched_tokens is None:
        raise InputError(
            "--max-num-batched-tokens",
            None,
            "Granite-4-Vision allocates its deepstack feature buffers (max_num_batched_tokens x hidden_size per "
            "level) with the weights: give max_num_batched_tokens",
        )
    one = args.max_num_batched_tokens * W._int(merged, "hidden_size") * ab
    for _ in range(_levels(config, par.vllm_version)):
        weights.add("deepstack buffers", one, buffer=True)
    return weights


def deepstack_buffer_bytes(config: Mapping[str, Any], version: str, max_num_batched_tokens: int, ab: int) -> int:
    """Bytes of Granite-4-Vision's deepstack feature buffers: one ``[max_num_batched_tokens, H_text]``
    in ``ab``-byte elements per level (``_ds_buffers`` of ``granite4_vision.py``)."""
    text = config.get("text_config")
    h = W._int({**config, **(text if isinstance(text, Mapping) else {})}, "hidden_size")
    return _levels({**DEFAULTS, **config}, version) * max_num_batched_tokens * h * ab


def _levels(config: Mapping[str, Any], version: str) -> int:
    """Deepstack levels: ``deepstack_layer_map``'s entries and the spatial target layers
    (vLLM's own ``Granite4VisionConfig`` before 0.33: ``spatial_target_layers`` or
    ``checkerboard_llm_layers`` or four; transformers' on 0.33: ``spatial_target_layers``, four when
    absent)."""
    layer_map = config.get("deepstack_layer_map") or config.get("vision_layer_to_llm_layer") or []
    spatial = config.get("spatial_target_layers")
    if rules_for(version).version == "0.33.0":
        if spatial is None and config.get("checkerboard_llm_layers") is not None:
            raise InputError(
                "config.json", "checkerboard_llm_layers", "without spatial_target_layers on vLLM 0.33.0: not checked"
            )
        targets = 4 if spatial is None else len(spatial) if isinstance(spatial, list) else -1
    else:
        spatial = spatial or config.get("checkerboard_llm_layers")
        targets = len(spatial) if isinstance(spatial, list) and spatial else 4 if not spatial else -1
    if targets < 0 or not isinstance(layer_map, list):
        raise InputError("config.json", "spatial_target_layers", "a list of layer indices (vLLM reads it)")
    return len(layer_map) + targets


FAMILIES: dict[str, Family] = {"Granite4VisionForConditionalGeneration": Family(_walk, ("image",))}

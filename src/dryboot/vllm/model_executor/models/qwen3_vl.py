"""Qwen3-VL and Qwen3-VL-MoE (``qwen3_vl.py``, ``qwen3_vl_moe.py``): the Qwen3 / Qwen3-MoE text
model of ``text_config`` and the Qwen3-VL vision transformer (patch embedding, blocks, merger and
deepstack mergers, its rotary table), the tower Qwen3.5 shares (``weights._qwen3_vision_tower``).

Where the vision config names ``deepstack_visual_indexes``, the wrapper also keeps one deepstack
feature buffer ``[max_num_batched_tokens, H_text]`` per level in the model dtype (``qwen3_vl.py``
``Qwen3VLForConditionalGeneration.__init__``: ``torch.zeros`` under the loader's device context,
so on the GPU with the weights), a plain list attribute: counted as buffer bytes here, as
:func:`deepstack_buffers` gives them. From 0.28 only where the stage builds the vision tower
(``use_deepstack`` is false for a ``StageMissingLayer``); 0.27.1 builds them whatever the tower.
Recorded by the meta-device oracle, which counts list-held tensors (``record_weights.py``)."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import replace
from typing import Any

from dryboot.errors import InputError
from dryboot.vllm.model_executor.model_loader import weights as W
from dryboot.vllm.model_executor.models.compose import (
    Family,
    WalkArgs,
    pp_refused_on,
    towers_on_stage,
    vision_language,
)
from dryboot.vllm.versions import rules_for

#: releases whose wrapper keeps the deepstack buffers without the vision tower (0.27.1's
#: ``use_deepstack`` reads the vision config only; 0.28+ also requires the tower)
DEEPSTACK_WITHOUT_TOWER = frozenset({"0.27.1"})
#: transformers' Qwen3-VL-style vision config defaults of the keys the tower's sizes read (its
#: ``Qwen3VLVisionConfig``; Qwen4-Exp's and CohereCompass's vision configs keep the same, the latter
#: with ``deepstack_visual_indexes`` [8, 16, 24])
VISION_CONFIG_DEFAULTS: dict[str, Any] = {
    "depth": 27,
    "hidden_size": 1152,
    "intermediate_size": 4304,
    "num_heads": 16,
    "in_channels": 3,
    "patch_size": 16,
    "spatial_merge_size": 2,
    "temporal_patch_size": 2,
    "out_hidden_size": 3584,
    "num_position_embeddings": 2304,
}


#: ``Qwen3VLVisionConfig``'s and ``Qwen3VLMoeVisionConfig``'s defaults (transformers 5.20, 5.24):
#: the above and the three deepstack levels
QWEN3_VL_VISION_DEFAULTS: dict[str, Any] = {**VISION_CONFIG_DEFAULTS, "deepstack_visual_indexes": [8, 16, 24]}


def vision_config(config: Mapping[str, Any]) -> Any:
    """The vision config vLLM's Qwen3-VL wrappers read: ``vision_config`` over its config class's
    defaults (:data:`QWEN3_VL_VISION_DEFAULTS`; none or ``null``: the defaults alone, as
    ``Qwen3VLConfig`` builds them). The published Qwen3-VL-235B-A22B-Thinking copy leaves out
    ``num_position_embeddings`` and ``deepstack_visual_indexes``: vLLM builds 2304 positions and
    three deepstack mergers. Anything else is returned as is (refused by the tower's reader)."""
    vision = config.get("vision_config")
    if vision is None:
        return dict(QWEN3_VL_VISION_DEFAULTS)
    return {**QWEN3_VL_VISION_DEFAULTS, **vision} if isinstance(vision, Mapping) else vision


def vision_tower(vision: Mapping[str, Any], text: Mapping[str, Any], tp: int, ab: int) -> W.RankWeights:
    """``Qwen3_VisionTransformer`` on one rank (see ``weights._qwen3_vision_tower``)."""
    w = W._Walk(None)  # no decoder attention layer (no q/k/v_range)
    W._qwen3_vision_tower(w, vision, tp, ab)
    return w.result()


#: vLLM 0.28.0 builds Qwen3-VL's language model from ``vllm_config.with_hf_config(text_config)``,
#: whose validation under pipeline parallelism fails on a text config without ``architectures``
#: (the published ones have none)
PP_REFUSED = (
    "vLLM 0.27.1 and 0.28.0 cannot build its language model under pipeline parallelism (VllmConfig validation of the "
    "text config: 'No model architectures are specified')"
)

#: the releases that refuse it (0.30.0 and 0.33.0 build each stage: recorded)
PP_REFUSED_ON = frozenset({"0.27.1", "0.28.0"})


def _text(text: Mapping[str, Any]) -> Mapping[str, Any]:
    """The text config as ``Qwen3VLDecoderLayer`` builds it (its RoPE table's positions per
    release: ``weights.QWEN3_VL_DECODER``)."""
    return {**text, W.QWEN3_VL_DECODER: True}


def deepstack_buffers(
    weights: W.RankWeights,
    vision: object,
    text: Mapping[str, Any],
    par: W.Parallel,
    args: WalkArgs,
    tower_built: bool,
) -> W.RankWeights:
    """Add the deepstack feature buffers (module docstring) to ``weights``: ``len(vision_config.
    deepstack_visual_indexes)`` allocations of ``max_num_batched_tokens x hidden_size`` elements of
    the model dtype, where the release builds them (``tower_built``: the stage builds the vision
    tower). ``text``: the language model's config.

    :raises InputError: the buffers are built and ``max_num_batched_tokens`` is not given."""
    levels = vision.get("deepstack_visual_indexes") if isinstance(vision, Mapping) else None
    release = rules_for(par.vllm_version).version
    if levels is None or not (tower_built or release in DEEPSTACK_WITHOUT_TOWER):
        return weights
    if not isinstance(levels, list):
        raise InputError("config.json", "vision_config.deepstack_visual_indexes", "a list of layer indices")
    if args.max_num_batched_tokens is None:
        raise InputError(
            "--max-num-batched-tokens",
            None,
            "the wrapper allocates its deepstack feature buffers (max_num_batched_tokens x hidden_size per level) "
            "with the weights: give max_num_batched_tokens",
        )
    one = args.max_num_batched_tokens * W._int(text, "hidden_size") * W.model_dtype_bytes(text, args.dtype)
    for _ in levels:
        weights.add("deepstack buffers", one, buffer=True)
    return weights


def with_deepstack(family: Family, text_of: Any, vision_of: Any, tower_modalities: tuple[str, ...]) -> Family:
    """``family`` plus :func:`deepstack_buffers`: ``text_of`` / ``vision_of`` find the text and
    vision configs, ``tower_modalities`` the vision tower's (all limited to 0: no tower)."""

    def walk(config: Mapping[str, Any], par: W.Parallel, args: WalkArgs) -> W.RankWeights:
        weights = family.walk(config, par, args)
        inner = text_of(config)
        outer = {k: config[k] for k in ("torch_dtype",) if k in config}
        text = {**outer, **(inner if isinstance(inner, Mapping) else {})}
        arch = str(config["architectures"][0])
        built = (
            not args.no_tower
            and not all(m in args.zero_modalities for m in tower_modalities)
            and towers_on_stage(arch, par)
        )
        return deepstack_buffers(weights, vision_of(config), text, par, args, built)

    return replace(family, walk=walk)


def deepstack_stages_refused(config: Mapping[str, Any], par: W.Parallel) -> None:
    """vLLM's Qwen3-VL wrappers assert on every stage but the first that the stage's first text
    layer is at least the number of deepstack levels (``start_layer >= len(deepstack_visual_
    indexes)``, the class default's three where the config names none): the engine fails when any
    stage starts earlier, so every stage is refused then.

    :raises InputError: a later stage starting before the last deepstack level."""
    if par.pp == 1:
        return
    levels = vision_config(config).get("deepstack_visual_indexes") if isinstance(config, Mapping) else None
    text = config.get("text_config")
    if not isinstance(levels, list) or not isinstance(text, Mapping):
        return
    n = W._int(text, "num_hidden_layers")
    for rank in range(1, par.pp):
        start = W.pp_layers(n, replace(par, pp_rank=rank)).start
        if start < len(levels):
            raise InputError(
                "--pipeline-parallel-size",
                None,
                f"stage {rank} starts at text layer {start}, before the {len(levels)} deepstack levels: "
                "vLLM's Qwen3-VL wrapper asserts start_layer >= len(deepstack_visual_indexes)",
            )


def _qwen3_vl_family(text_arch: str) -> Family:
    family = with_deepstack(
        pp_refused_on(
            vision_language(text_arch, vision_tower, prepare=_text, tower_of=vision_config), PP_REFUSED_ON, PP_REFUSED
        ),
        lambda c: c.get("text_config"),
        vision_config,
        ("image", "video"),
    )

    def walk(config: Mapping[str, Any], par: W.Parallel, args: WalkArgs) -> W.RankWeights:
        weights = family.walk(config, par, args)
        deepstack_stages_refused(config, par)
        return weights

    return replace(family, walk=walk)


FAMILIES: dict[str, Family] = {
    arch: _qwen3_vl_family(text_arch)
    for arch, text_arch in (
        ("Qwen3VLForConditionalGeneration", "Qwen3ForCausalLM"),
        ("Qwen3VLMoeForConditionalGeneration", "Qwen3MoeForCausalLM"),
    )
}

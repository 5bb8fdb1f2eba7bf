"""Cosmos3-Edge (``cosmos3_edge.py``, ``Cosmos3EdgeForConditionalGeneration``), unquantized.

The language model (``Cosmos3EdgeForCausalLM``): a Nemotron-H model of attention and MLP layers
only on ``text_config`` (each of its layers an attention layer then an MLP layer:
``models.wrappers``' reading, built by the walk as ``NemotronHForCausalLM``), whose attention
layers (``Cosmos3EdgeAttention``) add one multimodal rotary table ``[4 x
max_position_embeddings, head_dim]`` on a stage that holds one.

The tower (``Cosmos3EdgeVisionModel``), on every TP rank, dropped by ``--language-model-only`` or
image and video limited to 0 (``_mark_tower_model``): the SigLIP2 NaFlex encoder of
``vision_config`` (:func:`.towers.siglip2_naflex`; its widths are required: vLLM 0.27.1-0.30.0's
``Cosmos3EdgeVisionConfig`` is a ``Siglip2VisionConfig``, 0.33.0's transformers' class defaults
them otherwise) and the patch merger (``Cosmos3EdgePatchMerger``): a LayerNorm (weight and bias)
over the input width (over ``input x merge^2`` under ``use_postshuffle_norm``), ``linear_fc1``
(``ColumnParallelLinear`` ``[I / TP, input x merge^2]`` + bias), ``linear_fc2``
(``RowParallelLinear`` ``[out, I / TP]`` + bias ``[out]``). Its widths: vLLM 0.27.1-0.30.0 read
``projector_config`` (``input_hidden_size``, ``merger_intermediate_size``, ``out_hidden_size``,
``spatial_merge_size``, ``use_postshuffle_norm``; ``Cosmos3EdgeProjectorConfig``'s defaults);
0.33.0 the vision ``hidden_size``, ``projector_hidden_size`` (11520 by default), the text
``hidden_size`` and the vision ``spatial_merge_size`` (2), without the post-shuffle norm.

Pipeline parallelism: refused on 0.27.1 and 0.28.0 as vLLM refuses it (the text config names no
architecture); 0.30.0 builds the tower on every stage, 0.33.0 on the first. Other releases are
refused by name (the projector's reading is checked on these four)."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from dryboot.errors import InputError
from dryboot.vllm.distributed import UNNAMED_TEXT_CONFIG_PP
from dryboot.vllm.model_executor.model_loader import weights as W
from dryboot.vllm.model_executor.models.compose import (
    Family,
    WalkArgs,
    built_as,
    built_text,
    pp_refused_on,
    vision_language,
)
from dryboot.vllm.model_executor.models.towers import linear, siglip2_naflex, tensors

ARCH = "Cosmos3EdgeForConditionalGeneration"
#: the vision widths the tower reads with no default common to the releases
VISION_REQUIRED = (
    "hidden_size",
    "intermediate_size",
    "num_hidden_layers",
    "num_attention_heads",
    "num_patches",
    "patch_size",
)
#: ``Cosmos3EdgeProjectorConfig``'s defaults (vLLM 0.27.1-0.30.0 ``transformers_utils/configs``)
PROJECTOR_DEFAULTS: dict[str, Any] = {
    "input_hidden_size": 1024,
    "use_postshuffle_norm": False,
    "spatial_merge_size": 2,
    "merger_intermediate_size": 11520,
    "out_hidden_size": 1024,
}
#: releases whose class reads ``projector_config`` / the top-level widths
PROJECTOR_CONFIG_RELEASES = frozenset({"0.27.1", "0.28.0", "0.30.0", "0.31.0", "0.32.0"})
TOP_LEVEL_RELEASES = frozenset({"0.33.0"})


def _rotary(text: Mapping[str, Any], par: W.Parallel, ab: int) -> W.RankWeights:
    """The attention layers' shared multimodal rotary table, on a stage that holds one."""
    pattern = str(text.get("hybrid_override_pattern") or "")
    w = W.RankWeights()
    if any(pattern[li : li + 1] == "*" for li in W.pp_layers(len(pattern), par)):
        w.add("rotary", W._rotary_bytes(text, W._int(text, "head_dim"), ab), buffer=True)
    return w


def _vision(config: Mapping[str, Any]) -> dict[str, Any]:
    vision = config.get("vision_config")
    if not isinstance(vision, Mapping):
        raise InputError("config.json", "vision_config", f"{ARCH} needs a vision_config object")
    for key in VISION_REQUIRED:
        if key not in vision:
            raise InputError(
                "config.json",
                f"vision_config.{key}",
                "its vision config class defaults it differently on vLLM 0.28.0 and 0.33.0: not modelled",
            )
    return {"num_channels": 3, **vision}


def _merger(inp: int, inter: int, out: int, merge: int, postshuffle: bool, tp: int) -> list[int]:
    norm = inp * merge * merge if postshuffle else inp
    i_r = W._divide(inter, tp, "the projector's intermediate size")
    return [norm, norm, *linear(i_r, inp * merge * merge), *linear(out, i_r)]


def _tower_projector_config(config: Mapping[str, Any], text: Mapping[str, Any], tp: int, ab: int) -> W.RankWeights:
    """0.27.1-0.30.0: the encoder and the merger of ``projector_config``."""
    proj = {**PROJECTOR_DEFAULTS, **(config.get("projector_config") or {})}
    merger = _merger(
        W._int(proj, "input_hidden_size"),
        W._int(proj, "merger_intermediate_size"),
        W._int(proj, "out_hidden_size"),
        W._int(proj, "spatial_merge_size"),
        bool(proj.get("use_postshuffle_norm")),
        tp,
    )
    return tensors("vision", siglip2_naflex(_vision(config), tp) + merger, ab)


def _tower_top_level(config: Mapping[str, Any], text: Mapping[str, Any], tp: int, ab: int) -> W.RankWeights:
    """0.33.0: the encoder and the merger of the vision and text widths."""
    v = _vision(config)
    merger = _merger(
        W._int(v, "hidden_size"),
        W._int({"projector_hidden_size": 11520, **config}, "projector_hidden_size"),
        W._int(text, "hidden_size"),
        W._int({"spatial_merge_size": 2, **v}, "spatial_merge_size"),
        False,
        tp,
    )
    return tensors("vision", siglip2_naflex(v, tp) + merger, ab)


_TEXT = built_as("NemotronHForCausalLM", prepare=built_text(ARCH), extra=_rotary)
_BY_READING = {
    releases: pp_refused_on(
        vision_language(_TEXT, tower, tower_of=lambda c: c),
        frozenset({"0.27.1", "0.28.0"}),
        UNNAMED_TEXT_CONFIG_PP,
    )
    for releases, tower in (
        (PROJECTOR_CONFIG_RELEASES, _tower_projector_config),
        (TOP_LEVEL_RELEASES, _tower_top_level),
    )
}


def walk(config: Mapping[str, Any], par: W.Parallel, args: WalkArgs) -> W.RankWeights:
    """One rank of one stage (module docstring).

    :raises InputError: a release whose reading is not checked, what the text model or the tower
        refuses (named)."""
    for releases, family in _BY_READING.items():
        if par.vllm_version in releases:
            return family.walk(config, par, args)
    raise InputError("--vllm-version", None, f"{ARCH}'s projector widths on vLLM {par.vllm_version} are not checked")


FAMILIES: dict[str, Family] = {ARCH: Family(walk, ("image", "video"))}

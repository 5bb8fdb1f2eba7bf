"""Qwen3-VL and Qwen3-VL-MoE (``qwen3_vl.py``, ``qwen3_vl_moe.py``): the Qwen3 / Qwen3-MoE text
model of ``text_config`` and the Qwen3-VL vision transformer (patch embedding, blocks, merger and
deepstack mergers, its rotary table), the tower Qwen3.5 shares (``weights._qwen3_vision_tower``).

Where the vision config names ``deepstack_visual_indexes``, the wrapper also keeps one deepstack
feature buffer ``[max_num_batched_tokens, H_text]`` per level in the model dtype (``qwen3_vl.py``
``Qwen3VLForConditionalGeneration.__init__``: ``torch.zeros`` under the loader's device context,
so on the GPU with the weights), a plain list attribute: counted as buffer bytes here, as
:func:`deepstack_buffers` gives them. From 0.28 only where the stage builds the vision tower
(``use_deepstack`` is false for a ``StageMissingLayer``); 0.27.1 builds them whatever the tower.
Recorded by the meta-device oracle, which counts list-held tensors (``record_weights.py``).

Quantized (:func:`quantized_walk`): the language model through the text walk under the
checkpoint's method (plain fp8 blocks: ``Fp8LinearMethod`` / the fp8 MoE method per SM;
compressed-tensors W4A16: Marlin's / the WNA16 MoE method's repacked layout; AWQ and GPTQ 4-bit:
``AutoAWQConfig`` / ``AutoGPTQConfig``, repacked to the mixed-precision kernel vLLM picks per SM
(Marlin, Machete, Humming on 0.33 SM 9.0) and their MoE methods for the experts), the module names
of ``modules_to_not_convert`` / ``ignore`` / ``modules_in_block_to_quantize`` read as vLLM maps them
(``hf_to_vllm_mapper`` through the quant config's ``apply_vllm_mapper``), the vision tower in the
model dtype: a checkpoint that quantizes any tower linear layer (AWQ: no entry of
``modules_to_not_convert`` a substring of the layer's name; GPTQ: an entry of
``modules_in_block_to_quantize`` is, or the list is absent) is refused by name (its quantized tower
is not modelled).
Checked by ``quant_cases_qwen3vl.py`` on :data:`QUANT_RELEASES`, SM :data:`QUANT_SMS`."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import replace
from typing import Any

from dryboot.errors import InputError
from dryboot.vllm.model_executor.layers.quantization.modelopt import checkpoint_module_name
from dryboot.vllm.model_executor.model_loader import weights as W
from dryboot.vllm.model_executor.models.compose import (
    Family,
    WalkArgs,
    pp_refused_on,
    quant_scope_refusal,
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


#: the architectures whose quantized layouts are recorded (Cosmos3, which shares the family, is not)
QUANT_ARCHITECTURES = ("Qwen3VLForConditionalGeneration", "Qwen3VLMoeForConditionalGeneration")
#: the releases whose quantized Qwen3-VL layouts are recorded (quant-recorded-qwen3vl-*.json; 0.32.0 with
#: humming-kernels 0.1.17: its H100 W4A16 / AWQ / GPTQ layers through Humming, as 0.33.0's)
QUANT_RELEASES = ("0.28.0", "0.30.0", "0.32.0", "0.33.0")
#: the GPUs' SMs (major x 10 + minor) recorded: Marlin's fp8 and W4A16 (8.6), CUTLASS block fp8 (8.9,
#: 9.0; 9.0 with DeepGEMM present)
QUANT_SMS = (86, 89, 90)
#: the quantization config's keys that list module names left unquantized
_IGNORE_KEYS = ("ignore", "ignored_layers", "modules_to_not_convert")
#: the wrapper's ``hf_to_vllm_mapper`` prefixes (``qwen3_vl.py``), checkpoint -> vLLM module names: the
#: tower's, and the text model's as the text walk names it
_TOWER_PREFIX = ("model.visual.", "visual.")
_TEXT_PREFIX = ("model.language_model.", "model.")


def substring_module_name(name: str) -> str:
    """A module name of AWQ's ``modules_to_not_convert`` or GPTQ's ``modules_in_block_to_quantize``
    (both matched as substrings of vLLM's layer names) as the wrapper's ``hf_to_vllm_mapper``
    rewrites it (``apply_vllm_mapper``): a name starting ``model.visual.`` becomes ``visual.``, one
    starting ``model.language_model.`` the text walk's ``model.``; any other name unchanged (a bare
    ``visual``, ``self_attn.q_proj``; also ``model.visual`` without its dot, which then matches no
    tower layer)."""
    for ckpt, model in (_TOWER_PREFIX, _TEXT_PREFIX):
        if name.startswith(ckpt):
            return model + name[len(ckpt) :]
    return name


def vllm_quant_config(qc: Mapping[str, Any]) -> dict[str, Any]:
    """``quantization_config`` with its module lists' names as vLLM maps them onto its modules
    (``hf_to_vllm_mapper``): the ignore lists of fp8 and compressed-tensors (``model.visual.X`` is
    ``visual.X``, ``model.language_model.X`` the text walk's ``model.X``;
    :func:`~dryboot.vllm.model_executor.layers.quantization.modelopt.checkpoint_module_name`), AWQ's
    and GPTQ's substring lists (:func:`substring_module_name`; GPTQ's nested lists flattened)."""
    out = dict(qc)
    substrings = qc.get("quant_method") in ("awq", "gptq")
    for key in _IGNORE_KEYS:
        names = qc.get(key)
        if isinstance(names, list):
            rename = substring_module_name if substrings else checkpoint_module_name
            out[key] = [rename(str(n)) if isinstance(n, str) else n for n in names]
    blocks = qc.get("modules_in_block_to_quantize")
    if substrings and isinstance(blocks, list):
        flat = [m for item in blocks for m in (item if isinstance(item, list) else [item])]
        out["modules_in_block_to_quantize"] = [substring_module_name(m) if isinstance(m, str) else m for m in flat]
    return out


def tower_linears(vision: Mapping[str, Any]) -> tuple[str, ...]:
    """Every linear layer of ``Qwen3_VisionTransformer`` built with the model's ``quant_config``, as
    vLLM names them: per block ``attn.qkv``, ``attn.proj``, ``mlp.linear_fc1`` / ``linear_fc2``; the
    merger's and each deepstack merger's ``linear_fc1`` / ``linear_fc2``."""
    merged = {**VISION_CONFIG_DEFAULTS, **vision}
    names = [
        f"visual.blocks.{i}.{m}"
        for i in range(W._int(merged, "depth"))
        for m in ("attn.qkv", "attn.proj", "mlp.linear_fc1", "mlp.linear_fc2")
    ]
    mergers = ["visual.merger"] + [
        f"visual.deepstack_merger_list.{j}" for j in range(len(merged.get("deepstack_visual_indexes") or []))
    ]
    names += [f"{m}.{fc}" for m in mergers for fc in ("linear_fc1", "linear_fc2")]
    return tuple(names)


def _recorded_method(quant: W.Quant) -> bool:
    """Plain fp8 with ``[128, 128]`` blocks, compressed-tensors symmetric 4-bit weight-only
    integers, AWQ (4-bit, zero points) or GPTQ (4-bit symmetric) without act-order (the layouts
    recorded; AWQ / GPTQ repacked to Marlin per SM)."""
    if quant.method == "fp8":
        return quant.block == (128, 128)
    w = quant.wna16
    if w is None or w.scheme.bits != 4 or w.desc_act:
        return False
    return w.scheme.sym if w.packing in ("ct", "gptq") else w.packing == "awq" and not w.scheme.sym


def _tower_quantized(quant: W.Quant, vision: Mapping[str, Any]) -> str | None:
    """The first tower linear layer the (vLLM-named) quantization config quantizes, else ``None``.
    Plain fp8 skips a layer only when ``modules_to_not_convert`` names it exactly (``Fp8Config``'s
    ``ignored_layers_match_mode`` ``exact``, 0.28.0-0.33.0: a bare ``visual`` or ``model.visual``
    leaves the tower quantized, recorded on 0.28.0)."""
    for name in tower_linears(vision):
        if quant.wna16 is not None:
            quantized = quant.wna16.layer_scheme(name) is not None
        else:  # plain fp8: Fp8Config's exact is_layer_skipped
            quantized = not W._is_ignored(quant, name)
        if quantized:
            return name
    return None


def quantized_walk(family: Family) -> Family:
    """``family`` for a quantized checkpoint: the recorded scope (:data:`QUANT_RELEASES`,
    :data:`QUANT_SMS`, no pipeline or expert parallelism), the recorded methods
    (:func:`_recorded_method`), a tower left unquantized (:func:`tower_linears`), then the walk
    with the ignore lists vLLM-named (:func:`vllm_quant_config`).

    :raises InputError: each of the above outside what is recorded (named)."""

    def walk(config: Mapping[str, Any], par: W.Parallel, args: WalkArgs) -> W.RankWeights:
        quant = W.quant_from_config(config, args.hf_quant)
        if quant.method is None:
            return family.walk(config, par, args)
        arch = str(config["architectures"][0])
        if arch not in QUANT_ARCHITECTURES:  # Cosmos3 shares this family; its checkpoints' names differ
            raise InputError(
                "quantization_config", "quant_method", f"quantized {arch} layouts are not modelled (unquantized only)"
            )
        if not _recorded_method(quant):
            raise InputError(
                "quantization_config",
                "quant_method",
                f"{quant.method} {arch} layouts are not modelled (plain fp8 [128, 128] blocks, "
                "compressed-tensors symmetric W4A16, 4-bit AWQ and 4-bit GPTQ without act-order only)",
            )
        why = quant_scope_refusal(arch, quant.method, par, QUANT_RELEASES, QUANT_SMS)
        if why is not None:
            raise InputError("quantization_config", "quant_method", why)
        qc = config.get("quantization_config")
        if isinstance(qc, Mapping):
            config = {**config, "quantization_config": vllm_quant_config(qc)}
        vision = config.get("vision_config")
        if isinstance(vision, Mapping) and not args.no_tower:
            name = _tower_quantized(W.quant_from_config(config, args.hf_quant), vision)
            if name is not None:
                raise InputError(
                    "quantization_config",
                    "ignore",
                    f"{arch}'s vision tower quantized ({name}): a quantized tower is not modelled "
                    "(leave it unquantized: --language-model-only, or a checkpoint whose ignore list names it)",
                )
        return family.walk(config, par, args)

    return replace(family, walk=walk)


def _qwen3_vl_family(text_arch: str) -> Family:
    family = with_deepstack(
        pp_refused_on(
            vision_language(text_arch, vision_tower, prepare=_text, tower_of=vision_config, quantized=lambda q: True),
            PP_REFUSED_ON,
            PP_REFUSED,
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
    arch: quantized_walk(_qwen3_vl_family(text_arch))
    for arch, text_arch in (
        ("Qwen3VLForConditionalGeneration", "Qwen3ForCausalLM"),
        ("Qwen3VLMoeForConditionalGeneration", "Qwen3MoeForCausalLM"),
    )
}

"""Cohere Compass (``CohereCompassForConditionalGeneration``, vLLM 0.30.0-0.33.0's
``cohere_compass.py``): its own text model (``CohereCompassForCausalLM`` on ``text_config``,
transformers' ``CohereCompassTextConfig`` read as :func:`dryboot.vllm.models.wrappers._compass_text`
reads it for the KV cache), then the vision tower and the deepstack buffers.

The text model is Command-R's layer (:mod:`.commandr`): one weight-only ``LayerNorm`` per layer,
``qkv_proj`` ``[(heads + 2 kv_heads) x head_dim / TP, H]`` and ``o_proj`` ``[H, heads x head_dim
/ TP]`` (each with a bias under ``attention_bias``, ``o_proj``'s whole), the gated MLP; the
embedding and the final norm on every pipeline stage, the head tied to the embedding (the class
asserts ``tie_word_embeddings``, which vLLM copies from the file's top level, default false:
refused by name otherwise). Unlike Cohere-2's, a layer builds a rotary table only where
``rope_parameters[layer_type]`` is given, and the table spans the engine's ``max_model_len``
(``get_rope(head_dim, max_position=max_model_len)``, ``[max_model_len, head_dim]`` in the model
dtype, one per distinct RoPE of the stage's layers: ``get_rope``'s cache); without a
``max_model_len`` it is refused by name.

The vision tower (``Cohere_VisionTransformer``) allocates what Qwen3-VL's does
(:func:`.qwen3_vl.vision_tower`: Conv3d patch embedding, learned positions, LayerNorm blocks with
biased ``qkv`` / ``proj`` / MLP, the merger and one post-shuffle merger per deepstack level, the
``[8192, head_dim / 2]`` rotary table), over ``CohereCompassVisionConfig``'s defaults
(:data:`VISION_DEFAULTS`). The wrapper keeps one deepstack feature buffer ``[max_num_batched_tokens,
H]`` per level in the model dtype (:func:`.qwen3_vl.deepstack_buffers`), made inside
``_mark_tower_model``: where the tower is skipped (``--language-model-only``, image limit 0, a later
stage of 0.33's V2 runner) they are made under ``no_init_weights``' meta device and hold no memory.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from dryboot.errors import InputError
from dryboot.vllm.model_executor.model_loader import weights as W
from dryboot.vllm.model_executor.models import qwen3_vl
from dryboot.vllm.model_executor.models.compose import (
    Family,
    Layout,
    WalkArgs,
    built_text,
    decoder,
    towers_on_stage,
    vision_language,
)

ARCH = "CohereCompassForConditionalGeneration"

#: transformers' ``CohereCompassVisionConfig`` defaults (the same on vLLM 0.30.0-0.33.0's
#: transformers 5.17-5.24) of the keys the tower's sizes read
VISION_DEFAULTS: dict[str, Any] = {
    **qwen3_vl.VISION_CONFIG_DEFAULTS,
    "deepstack_visual_indexes": [8, 16, 24],
}


def vision_config(config: Mapping[str, Any]) -> dict[str, Any]:
    """``vision_config`` over :data:`VISION_DEFAULTS` (``num_attention_heads`` is the config
    class's alias of ``num_heads``).

    :raises InputError: no ``vision_config`` object; ``num_hidden_layers`` in it (vLLM 0.30.0's
        transformers reads it as ``depth``, later ones ignore it: not modelled)."""
    v = config.get("vision_config")
    if not isinstance(v, Mapping):
        raise InputError("config.json", "vision_config", f"{ARCH} needs a vision_config object")
    if "num_hidden_layers" in v:
        raise InputError(
            "config.json",
            "vision_config.num_hidden_layers",
            "read as depth by vLLM 0.30.0's transformers, ignored by later ones: not modelled (give depth)",
        )
    out = {**VISION_DEFAULTS, **v}
    if "num_attention_heads" in v and "num_heads" not in v:
        out["num_heads"] = v["num_attention_heads"]
    return out


def _tower(vision: Mapping[str, Any], text: Mapping[str, Any], tp: int, ab: int) -> W.RankWeights:
    return qwen3_vl.vision_tower({**VISION_DEFAULTS, **vision}, text, tp, ab)


def _rope_of(config: Mapping[str, Any], kind: object) -> Any:
    rope = config.get("rope_parameters") or {}
    return rope.get(kind) if isinstance(rope, Mapping) else None


def _uses_rope(config: Mapping[str, Any], li: int) -> bool:
    return _rope_of(config, config["layer_types"][li]) is not None


def _rope_key(config: Mapping[str, Any], kind: object) -> str:
    """``get_rope``'s cache key of a layer type's RoPE: its parameters in order, as transformers'
    ``standardize_rope_params`` leaves them (``rope_type`` and ``rope_theta`` appended where absent),
    lists as tuples."""
    params = dict(_rope_of(config, kind))
    params.setdefault("rope_type", params.get("type", "default"))
    params.setdefault("rope_theta", config.get("rope_theta"))
    return repr(tuple((k, tuple(v) if isinstance(v, list) else v) for k, v in params.items()))


def _rope_tables(config: Mapping[str, Any], layers: range) -> int:
    """One table per distinct RoPE of the stage's layer types (``get_rope``'s cache, keyed by the
    parameters in their order: :func:`_rope_key`)."""
    return len({_rope_key(config, config["layer_types"][li]) for li in layers if _uses_rope(config, li)})


_TEXT = decoder(
    Layout(
        norms=1,
        tied=True,
        every_stage=True,
        qkv_bias="attention_bias",
        o_bias="attention_bias",
        uses_rope=_uses_rope,
        rope_tables=_rope_tables,
    )
)


def _check_ropes(text: Mapping[str, Any]) -> None:
    """The RoPE the layout sizes: per layer type (or none at all), each unscaled and whole.

    :raises InputError: a ``rope_parameters`` not keyed by layer type, a layer type's entry neither
        an object nor null or without ``rope_theta``, or a partial rotary table
        (``partial_rotary_factor`` other than 1, a ``rope_dim``: not verified)."""
    rope = text.get("rope_parameters")
    if not rope:
        return
    types = text["layer_types"]
    if not isinstance(rope, Mapping) or set(rope).isdisjoint(types):
        raise InputError(
            "config.json",
            "text_config.rope_parameters",
            "not keyed by layer type: Cohere Compass's layers would build no RoPE (not verified)",
        )
    for kind, params in rope.items():
        if params is not None and not isinstance(params, Mapping):
            raise InputError("config.json", f"text_config.rope_parameters.{kind}", "an object or null")
        if isinstance(params, Mapping) and (
            float(params.get("partial_rotary_factor", 1.0)) != 1.0 or "rope_dim" in params
        ):
            raise InputError(
                "config.json",
                f"text_config.rope_parameters.{kind}",
                "a partial rotary table of Cohere Compass's layers is not verified",
            )
        if isinstance(params, Mapping) and params.get("rope_theta", text.get("rope_theta")) is None:
            raise InputError(
                "config.json",
                f"text_config.rope_parameters.{kind}.rope_theta",
                "absent (transformers sets it None): not verified",
            )
    if float(text.get("partial_rotary_factor", 1.0)) != 1.0:
        raise InputError(
            "config.json",
            "text_config.partial_rotary_factor",
            "a partial rotary table of Cohere Compass's layers is not verified",
        )


def _text_walk(config: Mapping[str, Any], par: W.Parallel, args: WalkArgs) -> W.RankWeights:
    """``CohereCompassForCausalLM`` on one rank of one stage (module docstring)."""
    text = built_text(ARCH)(config)
    _check_ropes(text)
    layers = W.pp_layers(W._int(text, "num_hidden_layers"), par)
    if any(_uses_rope(text, li) for li in layers):
        if args.max_model_len is None:
            raise InputError(
                "--max-model-len",
                None,
                f"{ARCH}'s rotary table spans max_model_len rows: give max_model_len",
            )
        text = {**text, "max_position_embeddings": args.max_model_len}
    # the class's head is tied whatever text_config says (the top level's true, checked by walk)
    return _TEXT.walk({**text, "tie_word_embeddings": True, "architectures": [ARCH]}, par, args)


def walk(config: Mapping[str, Any], par: W.Parallel, args: WalkArgs) -> W.RankWeights:
    """One rank of one stage (module docstring).

    :raises InputError: the file's top-level ``tie_word_embeddings`` not true (vLLM's assertion), a
        later pipeline stage starting within the deepstack layers (vLLM's assertion), or what the
        text model, tower and buffers refuse."""
    if config.get("tie_word_embeddings") is not True:
        raise InputError(
            "config.json",
            "tie_word_embeddings",
            f"{ARCH} asserts a tied head (vLLM copies the top level's value, default false, into text_config)",
        )
    vision = vision_config(config)
    levels = vision["deepstack_visual_indexes"]
    if not isinstance(levels, list):
        raise InputError("config.json", "vision_config.deepstack_visual_indexes", "a list of layer indices")
    text = config.get("text_config")
    n = W._int(text if isinstance(text, Mapping) else {}, "num_hidden_layers", 40)
    if par.pp_rank > 0 and levels and W.pp_layers(n, par).start < len(levels):
        raise InputError(
            "--pipeline-parallel-size",
            None,
            f"stage {par.pp_rank} starts within the {len(levels)} deepstack layers: vLLM asserts it does not",
        )
    family = vision_language(Family(_text_walk), _tower, modalities=("image",))
    weights = family.walk(config, par, args)
    built = not args.no_tower and "image" not in args.zero_modalities and towers_on_stage(ARCH, par)
    outer = {k: config[k] for k in ("torch_dtype",) if k in config}
    return qwen3_vl.deepstack_buffers(weights, vision, {**outer, **(text or {})}, par, args, built)


FAMILIES: dict[str, Family] = {ARCH: Family(walk, ("image",))}

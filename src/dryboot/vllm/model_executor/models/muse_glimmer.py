"""MuseGlimmer (``muse_glimmer.py``: ``MuseGlimmerForCausalLM``, and
``MuseGlimmerForConditionalGeneration``, the same class), unquantized, as vLLM 0.28.0-0.33.0
build it.

The language model (``MuseGlimmerModel`` on ``text_config``, or the config itself when it has no
``text_config``): per layer a fused ``qkv_proj`` and ``o_proj`` without biases, an
``output_gate_proj`` (``ColumnParallelLinear`` ``[heads x head_dim / TP, H]``), a gated MLP
(``hidden_activation`` silu only: vLLM raises otherwise), four RMSNorms ``[H]`` and a weightless
QK-norm; one rotary table (``[max_position_embeddings, head_dim]`` in the model dtype) on a stage
holding a layer whose ``layer_rope_theta`` is not 0 (``MuseGlimmerTextConfig``'s default: every
fourth layer counted back from the last is NoPE). The embedding, the final norm and an untied
``ParallelLMHead`` are built on every pipeline stage (no ``PPMissingLayer``; the class never ties
the head).

The tower (a config with ``vision_config``; dropped by ``--language-model-only`` or image and video
limited to 0): ``MuseGlimmerVisionEncoder``: ``conv1_linear`` ``[D, patch_temporal x 3 x
patch_size^2]``, ``positional_embedding_vlm`` ``[pos_emb_height x pos_emb_width, D]``, ``ln_pre``,
blocks of two LayerNorms, a TP-split ``qkv_proj`` / ``o_proj`` with biases and an MLP of plain
``nn.Linear`` layers (whole on every rank), ``ln_post``; the adapter (``c_fc`` ``[P,
out_hidden_size]``, ``c_proj`` ``[P, P]``, no biases), ``vision_projection`` ``[H, P]``. The class has
no ``supports_encoder_tp_data``: ``--mm-encoder-tp-mode data`` falls back to ``weights``. On 0.33.0
the tower is built on the first pipeline stage alone.

0.28.0-0.32.0 read its config with vLLM's own classes (``transformers_utils/configs/muse_glimmer.py``,
:data:`OWN_TEXT_DEFAULTS`, :data:`OWN_VISION_DEFAULTS`; ``VersionRules.muse_glimmer_layer_types``
false): the RoPE layers are those whose ``no_rope_layers`` entry is 1, the output gate is built
under ``use_attn_output_gate`` (default true), the adapter and projection read the vision config's
``output_dim`` / ``adapter_dim`` (``merge_kernel_size`` its merge), and the tower is built on every
pipeline stage. A config whose text or vision fields sit flat on the top level (which that class
regroups) is refused by name there. (Recorded on each release: 0.29.0-0.32.0 build it as 0.28.0
does; 0.27.1's registry has no MuseGlimmer.)"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import replace
from typing import Any

from dryboot.errors import InputError
from dryboot.vllm.model_executor.model_loader import weights as W
from dryboot.vllm.model_executor.models.compose import Family, Layout, WalkArgs, decoder, vision_language
from dryboot.vllm.model_executor.models.towers import linear, tensors, vit_block
from dryboot.vllm.versions import rules_for

#: the text defaults both config classes share
TEXT_DEFAULTS_BASE: dict[str, Any] = {
    "vocab_size": 202048,
    "hidden_size": 6656,
    "intermediate_size": 19968,
    "num_hidden_layers": 52,
    "num_attention_heads": 32,
    "num_key_value_heads": 2,
    "head_dim": 128,
    "hidden_activation": "silu",
}
#: ``MuseGlimmerTextConfig``'s defaults (transformers of vLLM 0.33.0) the walk reads
TEXT_DEFAULTS: dict[str, Any] = {**TEXT_DEFAULTS_BASE, "max_position_embeddings": 131072}
#: the vision defaults both config classes share
VISION_DEFAULTS_BASE: dict[str, Any] = {
    "patch_size": 14,
    "pos_emb_height": 32,
    "pos_emb_width": 32,
    "num_attention_heads": 16,
    "num_hidden_layers": 50,
    "hidden_size": 1536,
    "intermediate_size": 8960,
    "patch_temporal": 2,
}
#: ``MuseGlimmerVisionConfig``'s defaults (transformers of vLLM 0.33.0)
VISION_DEFAULTS: dict[str, Any] = {**VISION_DEFAULTS_BASE, "merge_size": 2}
#: the releases whose ``muse_glimmer.py`` this module sizes (recorded)
SIZED_RELEASES = frozenset({"0.28.0", "0.29.0", "0.30.0", "0.31.0", "0.32.0", "0.33.0"})
#: vLLM 0.28.0's own ``MuseGlimmerTextConfig`` defaults the walk reads
OWN_TEXT_DEFAULTS: dict[str, Any] = {**TEXT_DEFAULTS_BASE, "max_position_embeddings": 16384}
#: vLLM 0.28.0's own ``MuseGlimmerVisionConfig`` defaults the walk reads
OWN_VISION_DEFAULTS: dict[str, Any] = {
    **VISION_DEFAULTS_BASE,
    "merge_kernel_size": 2,
    "output_dim": 6144,
    "adapter_dim": 4096,
}
#: ``MuseGlimmerConfig``'s defaults
WRAPPER_DEFAULTS: dict[str, Any] = {"out_hidden_size": 6144, "projector_hidden_size": 4096}


def _prepare(defaults: Mapping[str, Any]) -> Callable[[Mapping[str, Any]], Mapping[str, Any]]:
    """The text config as the class reads it over ``defaults``, the head never tied.

    :raises InputError: (from the reader) a ``hidden_activation`` other than silu (vLLM raises)."""

    def read(config: Mapping[str, Any]) -> Mapping[str, Any]:
        c = {**defaults, **config, "tie_word_embeddings": False}
        if c.get("hidden_activation") != "silu":
            raise InputError("config.json", "hidden_activation", "MuseGlimmer's MLP is silu only (vLLM raises)")
        return c

    return read


def _per_layer(config: Mapping[str, Any], key: str, li: int) -> Any:
    values = config.get(key)
    if not isinstance(values, list) or len(values) <= li:
        raise InputError("config.json", key, "not a list of num_hidden_layers entries")
    return values[li]


def _nope_every_fourth(config: Mapping[str, Any], li: int) -> bool:
    """Both config classes' default: every fourth layer counted back from the last is NoPE."""
    return (W._int(config, "num_hidden_layers") - 1 - li) % 4 != 0


def _rope_by_theta(config: Mapping[str, Any], li: int) -> bool:
    """0.33.0: layer ``li`` holds a rotary embedding where its ``layer_rope_theta`` is not 0."""
    if config.get("layer_rope_theta") is None:
        return _nope_every_fourth(config, li)
    return bool(_per_layer(config, "layer_rope_theta", li))


def _rope_by_mask(config: Mapping[str, Any], li: int) -> bool:
    """0.28.0: where its ``no_rope_layers`` entry is 1."""
    if config.get("no_rope_layers") is None:
        return _nope_every_fourth(config, li)
    return bool(_per_layer(config, "no_rope_layers", li) == 1)


_LAYOUT = Layout(norms=4, output_gate=True, every_stage=True)
_TEXT = decoder(replace(_LAYOUT, uses_rope=_rope_by_theta), _prepare(TEXT_DEFAULTS))
_OWN_TEXT = decoder(replace(_LAYOUT, uses_rope=_rope_by_mask), _prepare(OWN_TEXT_DEFAULTS))
_OWN_TEXT_UNGATED = decoder(replace(_LAYOUT, uses_rope=_rope_by_mask, output_gate=False), _prepare(OWN_TEXT_DEFAULTS))


def _own_text_walk(config: Mapping[str, Any], par: W.Parallel, args: WalkArgs) -> W.RankWeights:
    """0.28.0's text model: the output gate under ``use_attn_output_gate`` (default true)."""
    gated = config.get("use_attn_output_gate") is None or bool(config.get("use_attn_output_gate"))
    return (_OWN_TEXT if gated else _OWN_TEXT_UNGATED).walk(config, par, args)


_OWN_TEXT_FAMILY = Family(_own_text_walk)


def _released(config: Mapping[str, Any], par: W.Parallel) -> None:
    if par.vllm_version not in SIZED_RELEASES:
        raise InputError(
            "config.json",
            "architectures",
            f"weights of {config['architectures'][0]} are checked on vLLM {', '.join(sorted(SIZED_RELEASES))} only "
            "(muse_glimmer.py and its config classes change between them)",
        )


def _encoder(v: Mapping[str, Any], tp: int, merge: int, out: int) -> list[int]:
    """``MuseGlimmerVisionEncoder``'s tensors (module docstring).

    :raises InputError: a vision width or head count TP does not divide, ``out`` other than the
        pixel-shuffle output (vLLM raises), ``layer_types`` of another length."""
    d, heads, layers = W._int(v, "hidden_size"), W._int(v, "num_attention_heads"), W._int(v, "num_hidden_layers")
    W._divide(heads, tp, "the vision tower's num_attention_heads")
    kinds = v.get("layer_types")
    if kinds is not None and (not isinstance(kinds, list) or len(kinds) != layers):
        raise InputError("config.json", "vision_config.layer_types", "must match num_hidden_layers (vLLM raises)")
    if out != d * merge**2:
        raise InputError("config.json", "out_hidden_size", "not the vision pixel-shuffle output (vLLM raises)")
    patch = W._int(v, "patch_temporal") * 3 * W._int(v, "patch_size") ** 2
    counts = [d * patch, W._int(v, "pos_emb_height") * W._int(v, "pos_emb_width") * d, d, d]
    for _ in range(layers):
        counts += vit_block(d, W._int(v, "intermediate_size"), tp, shard_mlp=False, whose="the vision tower's")
    return [*counts, d, d]


def _adapter(out: int, proj: int, hidden: int) -> list[int]:
    """The adapter (``c_fc`` ``[P, out]``, ``c_proj`` ``[P, P]``) and ``vision_projection`` ``[H, P]``."""
    return [*linear(proj, out, False), *linear(proj, proj, False), *linear(hidden, proj, False)]


def _tower(config: Mapping[str, Any], text: Mapping[str, Any], tp: int, ab: int) -> W.RankWeights:
    """0.33.0: the widths of ``MuseGlimmerConfig`` (``out_hidden_size``, ``projector_hidden_size``)."""
    c = {**WRAPPER_DEFAULTS, **config}
    v = {**VISION_DEFAULTS, **(config.get("vision_config") or {})}
    out, proj = W._int(c, "out_hidden_size"), W._int(c, "projector_hidden_size")
    counts = _encoder(v, tp, W._int(v, "merge_size"), out) + _adapter(out, proj, W._int(text, "hidden_size"))
    return tensors("vision", counts, ab)


def _own_tower(config: Mapping[str, Any], text: Mapping[str, Any], tp: int, ab: int) -> W.RankWeights:
    """0.28.0: the vision config's ``output_dim``, ``adapter_dim``, ``merge_kernel_size``."""
    v = {**OWN_VISION_DEFAULTS, **(config.get("vision_config") or {})}
    out, proj = W._int(v, "output_dim"), W._int(v, "adapter_dim")
    counts = _encoder(v, tp, W._int(v, "merge_kernel_size"), out) + _adapter(out, proj, W._int(text, "hidden_size"))
    return tensors("vision", counts, ab)


def _text_of(config: Mapping[str, Any]) -> Any:
    return config.get("text_config", {})


def _whole(config: Mapping[str, Any]) -> Mapping[str, Any]:
    return config


_WRAPPER = vision_language(_TEXT, _tower, text_of=_text_of, tower_of=_whole)
_OWN_WRAPPER = vision_language(_OWN_TEXT_FAMILY, _own_tower, text_of=_text_of, tower_of=_whole)


def _walk(config: Mapping[str, Any], par: W.Parallel, args: WalkArgs) -> W.RankWeights:
    _released(config, par)
    own = not rules_for(par.vllm_version).muse_glimmer_layer_types
    text_family: Family = _OWN_TEXT_FAMILY if own else _TEXT
    if isinstance(config.get("vision_config"), Mapping):
        if own and not isinstance(config.get("text_config"), Mapping):
            raise InputError(
                "config.json",
                "text_config",
                "a MuseGlimmer config with its text fields on the top level (which vLLM's own config class "
                "regroups) is not modelled",
            )
        return (_OWN_WRAPPER if own else _WRAPPER).walk(config, par, args)
    text = config.get("text_config")
    if isinstance(text, Mapping):  # a text config nested without a tower
        return text_family.walk({**text, "architectures": config["architectures"]}, par, args)
    return text_family.walk(config, par, args)


FAMILIES: dict[str, Family] = {
    "MuseGlimmerForCausalLM": Family(_walk, ("image", "video")),
    "MuseGlimmerForConditionalGeneration": Family(_walk, ("image", "video")),
}

"""MuseGlimmer (``muse_glimmer.py``: ``MuseGlimmerForCausalLM``, and
``MuseGlimmerForConditionalGeneration``, the same class), unquantized, as vLLM 0.33.0 builds it.

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

vLLM 0.28.0-0.32.0 read other fields (the vision config's ``output_dim`` / ``adapter_dim`` /
``merge_kernel_size``, an optional output gate): refused by name there (not recorded)."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from dryboot.errors import InputError
from dryboot.vllm.model_executor.model_loader import weights as W
from dryboot.vllm.model_executor.models.compose import Family, Layout, WalkArgs, decoder, vision_language
from dryboot.vllm.model_executor.models.towers import linear, tensors, vit_block

#: the releases whose ``muse_glimmer.py`` this module sizes (recorded)
SIZED_RELEASES = frozenset({"0.33.0"})
#: ``MuseGlimmerTextConfig``'s defaults (transformers of vLLM 0.33.0) the walk reads
TEXT_DEFAULTS: dict[str, Any] = {
    "vocab_size": 202048,
    "hidden_size": 6656,
    "intermediate_size": 19968,
    "num_hidden_layers": 52,
    "num_attention_heads": 32,
    "num_key_value_heads": 2,
    "head_dim": 128,
    "hidden_activation": "silu",
    "max_position_embeddings": 131072,
}
#: ``MuseGlimmerVisionConfig``'s defaults
VISION_DEFAULTS: dict[str, Any] = {
    "patch_size": 14,
    "pos_emb_height": 32,
    "pos_emb_width": 32,
    "num_attention_heads": 16,
    "num_hidden_layers": 50,
    "hidden_size": 1536,
    "intermediate_size": 8960,
    "patch_temporal": 2,
    "merge_size": 2,
}
#: ``MuseGlimmerConfig``'s defaults
WRAPPER_DEFAULTS: dict[str, Any] = {"out_hidden_size": 6144, "projector_hidden_size": 4096}


def _prepare(config: Mapping[str, Any]) -> Mapping[str, Any]:
    """The text config as the class reads it: defaults, the head never tied.

    :raises InputError: a ``hidden_activation`` other than silu (vLLM raises)."""
    c = {**TEXT_DEFAULTS, **config, "tie_word_embeddings": False}
    if c.get("hidden_activation") != "silu":
        raise InputError("config.json", "hidden_activation", "MuseGlimmer's MLP is silu only (vLLM raises)")
    return c


def _uses_rope(config: Mapping[str, Any], li: int) -> bool:
    """Layer ``li`` holds a rotary embedding: its ``layer_rope_theta`` is not 0."""
    thetas = config.get("layer_rope_theta")
    if isinstance(thetas, list):
        if len(thetas) <= li:
            raise InputError("config.json", "layer_rope_theta", "shorter than num_hidden_layers")
        return bool(thetas[li])
    return (W._int(config, "num_hidden_layers") - 1 - li) % 4 != 0


_TEXT = decoder(Layout(norms=4, output_gate=True, every_stage=True, uses_rope=_uses_rope), _prepare)


def _released(config: Mapping[str, Any], par: W.Parallel) -> None:
    if par.vllm_version not in SIZED_RELEASES:
        raise InputError(
            "config.json",
            "architectures",
            f"weights of {config['architectures'][0]} are checked on vLLM {', '.join(sorted(SIZED_RELEASES))} only "
            "(earlier releases' muse_glimmer.py read other vision and adapter fields)",
        )


def _tower(config: Mapping[str, Any], text: Mapping[str, Any], tp: int, ab: int) -> W.RankWeights:
    """The vision encoder, adapter and projection of one TP rank (module docstring).

    :raises InputError: a vision width or head count TP does not divide, ``out_hidden_size``
        other than the pixel-shuffle output (vLLM raises), ``layer_types`` of another length."""
    c = {**WRAPPER_DEFAULTS, **config}
    v = {**VISION_DEFAULTS, **(config.get("vision_config") or {})}
    d, heads, layers = W._int(v, "hidden_size"), W._int(v, "num_attention_heads"), W._int(v, "num_hidden_layers")
    W._divide(heads, tp, "the vision tower's num_attention_heads")
    kinds = v.get("layer_types")
    if kinds is not None and (not isinstance(kinds, list) or len(kinds) != layers):
        raise InputError("config.json", "vision_config.layer_types", "must match num_hidden_layers (vLLM raises)")
    out, proj = W._int(c, "out_hidden_size"), W._int(c, "projector_hidden_size")
    if out != d * W._int(v, "merge_size") ** 2:
        raise InputError("config.json", "out_hidden_size", "not the vision pixel-shuffle output (vLLM raises)")
    patch = W._int(v, "patch_temporal") * 3 * W._int(v, "patch_size") ** 2
    counts = [d * patch, W._int(v, "pos_emb_height") * W._int(v, "pos_emb_width") * d, d, d]
    for _ in range(layers):
        counts += vit_block(d, W._int(v, "intermediate_size"), tp, shard_mlp=False, whose="the vision tower's")
    counts += [d, d, *linear(proj, out, False), *linear(proj, proj, False)]
    counts += linear(W._int(text, "hidden_size"), proj, False)
    return tensors("vision", counts, ab)


_WRAPPER = vision_language(
    _TEXT, _tower, text_of=lambda config: config.get("text_config", {}), tower_of=lambda config: config
)


def _walk(config: Mapping[str, Any], par: W.Parallel, args: WalkArgs) -> W.RankWeights:
    _released(config, par)
    if isinstance(config.get("vision_config"), Mapping):
        return _WRAPPER.walk(config, par, args)
    text = config.get("text_config")
    if isinstance(text, Mapping):  # a text config nested without a tower
        return _TEXT.walk({**text, "architectures": config["architectures"]}, par, args)
    return _TEXT.walk(config, par, args)


FAMILIES: dict[str, Family] = {
    "MuseGlimmerForCausalLM": Family(_walk, ("image", "video")),
    "MuseGlimmerForConditionalGeneration": Family(_walk, ("image", "video")),
}

"""MuseGlimmer (``MuseGlimmerForCausalLM``, and ``MuseGlimmerForConditionalGeneration``, the same
class): iRoPE layers, each a full-attention or a sliding-window KV cache, read per release.

Mirrors ``vllm/model_executor/models/muse_glimmer.py`` (the language model reads
``config.text_config`` when there is one, else the config itself):

* every layer is one ``Attention`` of ``num_attention_heads`` heads, ``num_key_value_heads`` KV heads
  and head size ``config.head_dim``;
* which layers slide is decided differently by release (switch ``muse_glimmer_layer_types``):

  - 0.28.0-0.30.0 read the config with vLLM's own ``MuseGlimmerTextConfig``
    (``transformers_utils/configs/muse_glimmer.py``) and slide the RoPE layers,
    ``no_rope_layers[i] == 1`` (absent: every 4th layer counted back from the last is NoPE, the
    others RoPE); ``max_position_embeddings`` defaults to 16,384;
  - 0.33.0 reads it with transformers' ``MuseGlimmerTextConfig`` and slides the
    ``sliding_attention`` layers of ``layer_types`` (absent: every 4th layer counted back from the
    last is full); ``max_position_embeddings`` defaults to 131,072;

* a layer that does not slide takes vLLM's model-level window (``CacheConfig.sliding_window``),
  set only when every ``layer_types`` entry is ``sliding_attention`` (both config classes write
  ``layer_types`` when a file has none; vLLM 0.28's derives it from ``no_rope_layers``).

0.27.1 has no such model class or config class (vLLM refuses the ``model_type``); 0.31.0 and 0.32.0
read it as 0.28.0-0.30.0 do (recorded: ``tests/fidelity/data/release-architectures/``).
"""

from __future__ import annotations

from dataclasses import dataclass, replace
from typing import Any

from dryboot.errors import InputError
from dryboot.vllm.config.hf import ConfigFields, FamilyExtra, LayerKind, ModelGeometry, extra_of
from dryboot.vllm.models.common import MAX_LAYERS, geometry, layer_types, window
from dryboot.vllm.models.dense import FULL, SLIDING, Decoder, heads
from dryboot.vllm.versions import VersionRules

#: the config classes' defaults for the keys that change the cache (both releases' classes agree
#: on these); ``max_position_embeddings`` differs and is set per reading
_DEFAULTS: dict[str, Any] = {
    "num_hidden_layers": 52,
    "num_attention_heads": 32,
    "num_key_value_heads": 2,
    "head_dim": 128,
    "hidden_size": 6656,
    "sliding_window": 2048,
}
#: transformers' ``MuseGlimmerTextConfig`` (0.33.0) and vLLM's own (0.28.0-0.30.0)
_MAX_POSITIONS_HF, _MAX_POSITIONS_VLLM = 131072, 16384
_SPEC = Decoder("muse_glimmer.py", head_dim="required")


@dataclass(frozen=True)
class NoRopeReading(FamilyExtra):
    """The model as vLLM's own config class and the 0.28.0-0.30.0 model class read the file
    (sliding layers from ``no_rope_layers``)."""

    model: ModelGeometry


def defaults(f: ConfigFields) -> dict[str, Any]:
    return {**_DEFAULTS, "max_position_embeddings": _MAX_POSITIONS_HF}


def _every_fourth_from_last(n: int) -> list[bool]:
    """Whether layer ``i`` is the NoPE / full one: every 4th counted back from the last."""
    return [(n - 1 - i) % 4 == 0 for i in range(n)]


def _no_rope_layers(f: ConfigFields, n: int) -> list[int]:
    """``no_rope_layers`` as vLLM's ``MuseGlimmerTextConfig`` gives it (one int per layer).

    :raises InputError: not a list of ``n`` integers (not modelled).
    """
    value = f.get("no_rope_layers")
    if value is None:
        return [0 if nope else 1 for nope in _every_fourth_from_last(n)]
    if not isinstance(value, list) or len(value) != n or not all(type(x) is int for x in value):
        raise InputError(f.source, f.where("no_rope_layers"), f"must list one integer per layer ({n})")
    return list(value)


def _kinds(slides: list[bool], types: list[str], sw: int | None) -> tuple[LayerKind, ...]:
    model_window = sw is not None and all(t == SLIDING for t in types)
    return tuple(LayerKind.SLIDING if sw and (s or model_window) else LayerKind.FULL for s in slides)


def read(f: ConfigFields, architecture: str) -> ModelGeometry:
    """The model as 0.33.0 reads it, with 0.28.0-0.30.0's reading as :class:`NoRopeReading`.

    :raises InputError: a ``muse_glimmer`` config without a ``text_config`` giving
        ``num_hidden_layers`` (not modelled), a missing or malformed field, ``hidden_size`` not a multiple of the heads
        (transformers' ``validate_architecture``), KV heads that do not divide the heads.
    """
    if f.root.get("model_type") == "muse_glimmer" and not f.prefix:
        # the multimodal config without a text_config holding the layer count: vLLM 0.28's class
        # moves flat text keys into its text config, transformers' builds a default one
        raise InputError(
            f.source,
            "text_config",
            "a muse_glimmer config whose text model is not a text_config with num_hidden_layers: not modelled",
        )
    n = f.integer("num_hidden_layers", maximum=MAX_LAYERS)
    attn = heads(f, _SPEC)
    hidden = f.integer("hidden_size")
    if hidden % attn[0]:
        raise InputError(
            f.source,
            f.where("hidden_size"),
            f"The hidden size ({hidden}) is not a multiple of the number of attention heads ({attn[0]}) "
            "(MuseGlimmerTextConfig refuses it)",
        )
    sw = window(f)
    given = layer_types(f, n)
    if given is not None and not set(given) <= {SLIDING, FULL}:
        raise InputError(f.source, f.where("layer_types"), f"{architecture} layers are {SLIDING} or {FULL}")
    # transformers' class (0.33.0)
    types = given or [FULL if full else SLIDING for full in _every_fourth_from_last(n)]
    hf = geometry(
        f, architecture, "muse_glimmer", _kinds([t == SLIDING for t in types], types, sw), heads=attn, sliding_window=sw
    )
    # vLLM's own class (0.28.0-0.30.0): its defaults where the file leaves a key out
    rope = _no_rope_layers(f, n)
    old_types = given or [FULL if r == 0 else SLIDING for r in rope]
    g = f.with_defaults({**_DEFAULTS, "max_position_embeddings": _MAX_POSITIONS_VLLM})
    old = geometry(
        g, architecture, "muse_glimmer", _kinds([r == 1 for r in rope], old_types, sw), heads=attn, sliding_window=sw
    )
    return replace(hf, family_extra=NoRopeReading(old))


def for_release(model: ModelGeometry, rules: VersionRules) -> ModelGeometry:
    """``model`` as ``rules``' release reads it: ``layer_types`` (switch
    ``muse_glimmer_layer_types``) or ``no_rope_layers``."""
    extra = extra_of(model, NoRopeReading)
    if extra is None:
        return model
    return replace(model, family_extra=None) if rules.muse_glimmer_layer_types else extra.model

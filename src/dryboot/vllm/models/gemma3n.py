"""Gemma-3n: interleaved sliding-window and global attention whose last layers read earlier
layers' KV caches.

Mirrors ``vllm/model_executor/models/gemma3n.py`` (``Gemma3nAttention``) fed by transformers'
``Gemma3nTextConfig``: absent ``layer_types`` make every 5th layer global, the rest sliding with
``sliding_window`` (default 512) passed per layer; ``num_key_value_heads`` (default 2) heads of
``head_dim`` (default 256).

Cross-layer KV sharing: the last ``num_kv_shared_layers`` (default 15) layers are KV-shared. With
``first`` the first of them, a shared sliding layer names layer ``first - 2`` and a shared global
layer ``first - 1`` as its ``kv_sharing_target_layer_name``, whatever those layers' types are (vLLM
checks only that the target is an earlier decoder attention layer); a shared layer whose target
index is negative keeps its own cache. A layer with a target keeps no cache
(``GPUModelRunner.get_kv_cache_spec`` skips it).

Refused as the config class refuses it: a ``hidden_size`` the heads do not divide, an
``intermediate_size`` or ``activation_sparsity_pattern`` list not of one entry per layer.
"""

from __future__ import annotations

from typing import Any

from dryboot.errors import InputError
from dryboot.vllm.config.hf import ConfigFields, LayerKind, ModelGeometry
from dryboot.vllm.models.common import LAYER_TYPE_NAMES, attention_heads, geometry, layer_types, num_layers, window

#: ``Gemma3nTextConfig`` defaults that change the cache
_DEFAULTS: dict[str, Any] = {
    "num_hidden_layers": 35,
    "hidden_size": 2048,
    "num_attention_heads": 8,
    "num_key_value_heads": 2,
    "head_dim": 256,
    "max_position_embeddings": 32768,
    "sliding_window": 512,
    "num_kv_shared_layers": 15,
}


def defaults(f: ConfigFields) -> dict[str, Any]:
    return dict(_DEFAULTS)


def _check_lists(f: ConfigFields, n: int) -> None:
    """``Gemma3nTextConfig.__post_init__`` / ``validate_architecture``: per-layer lists of one
    entry per layer, heads dividing ``hidden_size``.

    :raises InputError: as the config class raises ``ValueError``.
    """
    for key in ("intermediate_size", "activation_sparsity_pattern"):
        value = f.get(key)
        if isinstance(value, list) and len(value) != n:
            raise InputError(
                f.source,
                f.where(key),
                f"{len(value)} entries for {n} layers (Gemma3nTextConfig: ValueError, one entry per layer)",
            )
    hidden, heads = f.integer("hidden_size"), f.integer("num_attention_heads")
    if hidden % heads:
        raise InputError(
            f.source,
            f.where("hidden_size"),
            f"The hidden size ({hidden}) is not a multiple of the number of attention heads ({heads}) "
            "(Gemma3nTextConfig)",
        )


def read(f: ConfigFields, architecture: str) -> ModelGeometry:
    n = num_layers(f)
    _check_lists(f, n)
    heads = attention_heads(f)
    types = layer_types(f, n)
    if types is None:
        types = ["full_attention" if (i + 1) % 5 == 0 else "sliding_attention" for i in range(n)]
    if not set(types) <= {"sliding_attention", "full_attention"}:
        raise InputError(f.source, f.where("layer_types"), "Gemma-3n layers are sliding_attention or full_attention")
    shared = f.integer("num_kv_shared_layers", minimum=0)
    first = n - shared
    kinds = [LAYER_TYPE_NAMES[t] for t in types]
    pairs = []
    for i in range(max(first, 0), n):
        target = first - (2 if types[i] == "sliding_attention" else 1)
        if target >= 0:
            kinds[i] = LayerKind.NONE
            pairs.append((i, target))
    return geometry(
        f,
        architecture,
        "gemma3n",
        tuple(kinds),
        heads=heads,
        sliding_window=window(f),
        kv_sharing=tuple(pairs),
    )

"""RNJ-1 (``rnj1.py``, ``Rnj1ForCausalLM``; vLLM 0.27.1-0.33.0): Gemma-3's decoder on
transformers' ``Gemma3TextConfig`` whose ``chunked_attention`` layers are block-local with one
lookback chunk.

What ``Rnj1Attention`` builds, per entry of ``layer_types``:

* ``chunked_attention``: an ``Attention`` with ``per_layer_sliding_window = sliding_window`` and
  ``chunk_lookback = 1``. Its KV cache is a plain ``SlidingWindowSpec`` of that window (the lookback
  only masks inside the window, in ``triton_unified_attention``); without a window it is a full
  layer. ``Attention.__init__`` asserts that a layer with a lookback runs on ``TRITON_ATTN``
  ("Chunked attention with lookback requires the Triton backend, but got ...").
* any other type: no per-layer window; the model-level window (``CacheConfig.sliding_window``,
  set only when every entry is ``sliding_attention``) then applies, as to any ``Attention``. Its
  ``chunk_lookback`` (-1) still reaches the backend's impl as a keyword argument, which only
  Triton's ``TritonAttentionImpl`` takes (``TypeError: FlashAttentionImpl.__init__() got an
  unexpected keyword argument 'chunk_lookback'``, recorded on 0.33.0).

So every RNJ-1 starts on ``TRITON_ATTN`` only: any other backend (vLLM's selection or the flag's)
is refused in the words of the first layer's failure (:func:`verify_backend`).

Absent ``layer_types`` are the ones ``Gemma3TextConfig`` writes (``sliding_window_pattern``,
default 6: ``sliding_attention`` / ``full_attention``, none chunked). The rotary embedding of a
layer reads ``rope_parameters[layer_type]`` when that key exists, else the whole
``rope_parameters``, which ``get_rope`` cannot take when it is the per-layer-type mapping the
config class writes (``TypeError: unhashable type: 'dict'``, recorded on 0.33.0): a chunked layer
without a ``chunked_attention`` entry in the file's ``rope_parameters`` is refused in those words.
The MLP refuses any ``hidden_activation`` but ``gelu_pytorch_tanh`` (vLLM's ValueError).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from dryboot.errors import InputError
from dryboot.vllm.config.hf import ConfigFields, FamilyExtra, LayerKind, ModelGeometry, extra_of
from dryboot.vllm.models.common import attention_heads, geometry, layer_types, num_layers, window

#: ``Gemma3TextConfig``'s defaults for the keys read here (transformers 5.x)
_DEFAULTS: dict[str, Any] = {
    "num_attention_heads": 8,
    "num_key_value_heads": 4,
    "head_dim": 256,
    "sliding_window": 4096,
    "max_position_embeddings": 131072,
    "sliding_window_pattern": 6,
    "hidden_activation": "gelu_pytorch_tanh",
}
CHUNKED = "chunked_attention"
_SLIDING = "sliding_attention"
_FULL = "full_attention"
#: the backend every RNJ-1 layer runs on (its impl alone takes ``chunk_lookback``)
LOOKBACK_BACKEND = "TRITON_ATTN"
#: the impl class of the backends vLLM selects for a decoder (named in the TypeError)
_IMPLS = {"FLASH_ATTN": "FlashAttentionImpl", "FLASHINFER": "FlashInferImpl", "FLEX_ATTENTION": "FlexAttentionImpl"}


@dataclass(frozen=True)
class Rnj1Extra(FamilyExtra):
    """``first_chunked``: layer 0 is a ``chunked_attention`` layer (built with ``chunk_lookback`` 1),
    whose assertion fails before any impl is built; otherwise layer 0's impl fails first."""

    first_chunked: bool = False


def defaults(f: ConfigFields) -> dict[str, Any]:
    return dict(_DEFAULTS) if f.get("model_type") == "gemma3_text" else {}


def _types(f: ConfigFields, n: int) -> list[str]:
    """``layer_types`` as the file gives them, else as ``Gemma3TextConfig`` writes them."""
    types = layer_types(f, n)
    if types is None:
        period = f.integer("sliding_window_pattern", minimum=1)
        types = [_SLIDING if (i + 1) % period else _FULL for i in range(n)]
    if not set(types) <= {CHUNKED, _SLIDING, _FULL}:
        raise InputError(f.source, f.where("layer_types"), f"RNJ-1 layers are {CHUNKED}, {_SLIDING} or {_FULL}")
    return types


def read(f: ConfigFields, architecture: str) -> ModelGeometry:
    """The layers ``Rnj1Attention`` builds (module docstring).

    :raises InputError: a ``model_type`` other than ``gemma3_text`` (not verified), an activation
        vLLM's MLP refuses, a chunked layer without its ``rope_parameters`` entry, or malformed fields.
    """
    if f.get("model_type") != "gemma3_text":
        raise InputError(
            f.source,
            f.where("model_type"),
            f"{architecture} is verified on transformers' Gemma3TextConfig (model_type gemma3_text) only",
        )
    activation = f.get("hidden_activation")
    if activation != "gelu_pytorch_tanh":
        raise InputError(
            f.source,
            f.where("hidden_activation"),
            "RNJ-1 uses `gelu_pytorch_tanh` as the hidden activation function. Please set `hidden_act` and "
            "`hidden_activation` to `gelu_pytorch_tanh`. (vLLM's Rnj1MLP)",
        )
    n = num_layers(f)
    types = _types(f, n)
    rope = f.get("rope_parameters")
    if CHUNKED in types and not (isinstance(rope, dict) and isinstance(rope.get(CHUNKED), dict)):
        raise InputError(
            f.source,
            f.where("rope_parameters"),
            "TypeError: unhashable type: 'dict' (vLLM's Rnj1Attention passes the whole per-layer-type "
            f"rope_parameters to get_rope when it has no {CHUNKED!r} entry)",
        )
    sw = window(f)
    # EngineArgs.create_engine_config: the model-level window only when every layer is sliding_attention
    model_window = sw if all(t == _SLIDING for t in types) else None
    kinds = tuple(
        LayerKind.SLIDING if sw is not None and (t == CHUNKED or model_window is not None) else LayerKind.FULL
        for t in types
    )
    extra = Rnj1Extra(first_chunked=types[0] == CHUNKED)
    return geometry(f, architecture, "rnj1", kinds, heads=attention_heads(f), sliding_window=sw, family_extra=extra)


def verify_backend(model: ModelGeometry, backend: str, flag: str) -> None:
    """What vLLM's first layer does on the backend selected (or named) for the model's layers: a
    chunked layer 0 fails ``Attention.__init__``'s assertion, any other layer 0 its impl's
    constructor (``chunk_lookback`` passed to an impl that does not take it).

    :raises InputError: any backend but ``TRITON_ATTN``, in vLLM's words.
    """
    extra = extra_of(model, Rnj1Extra)
    if extra is None or backend == LOOKBACK_BACKEND:
        return
    if extra.first_chunked:
        why = f"AssertionError: Chunked attention with lookback requires the Triton backend, but got {backend}."
    else:
        impl = _IMPLS.get(backend, f"{backend}'s impl")
        why = f"TypeError: {impl}.__init__() got an unexpected keyword argument 'chunk_lookback'"
    raise InputError(
        flag,
        backend,
        f"{model.source}: {why} (vLLM's Attention, building {model.architecture}'s layer 0; only "
        f"--attention-backend {LOOKBACK_BACKEND} builds its layers)",
    )

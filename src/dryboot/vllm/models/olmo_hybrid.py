"""OLMo-Hybrid (``olmo_hybrid.py``, ``OlmoHybridForCausalLM``; vLLM 0.27.1-0.33.0): Gated DeltaNet
layers beside OLMo attention layers, on transformers' ``OlmoHybridConfig``.

* ``layer_types``: ``linear_attention`` layers are ``OlmoHybridGatedDeltaNetAttention``
  (``layers/mamba/gdn/olmo_gdn_linear_attn.py``), whose state is Qwen3-Next's:
  ``gated_delta_net_state_shape`` over the ``linear_*`` fields and ``gated_delta_net_state_dtype``
  (the model's dtype hook passes no config dtype on); unlike Qwen's layer it always runs FLA's
  prefill, so vLLM 0.33 keeps no FlashInfer prefill checkpoints for it. Every other layer is an
  ``OlmoHybridAttention``: full attention of ``num_key_value_heads`` (default: the attention heads)
  heads of ``hidden_size // num_attention_heads`` (``head_dim`` is not read).
* Without ``layer_types`` the config class makes every fourth layer (``i % 4 == 3``) full and the
  rest linear, the last full where that leaves none; its ``validate_architecture`` refuses a pattern
  without a linear or without an attention layer (ValueError while vLLM reads the config).
* The ``linear_*`` defaults: key and value heads the attention heads, key head width
  ``int(0.75 * hidden_size / key heads)``, value head width twice that, a 4-wide convolution.
* The Gated DeltaNet layer asserts ``linear_use_gate`` (default true); there is no MTP module.

Verified against the releases' engine starts (``tests/fidelity/data/architectures/recorded.json``
on 0.28.0, ``data/release-architectures/`` on the others), built with a stand-in for Triton's
``set_allocator`` (``boot/engine_start.py``), which those layers call while they are built.
"""

from __future__ import annotations

from dataclasses import replace
from typing import Any

from dryboot.errors import InputError
from dryboot.vllm.config.hf import ConfigFields, LayerKind, ModelGeometry
from dryboot.vllm.models.common import geometry, num_layers
from dryboot.vllm.models.qwen3_next import gated_delta_net

#: ``OlmoHybridConfig``'s defaults for the keys read here (transformers 5.x)
_DEFAULTS: dict[str, Any] = {
    "hidden_size": 3840,
    "num_hidden_layers": 32,
    "num_attention_heads": 30,
    "max_position_embeddings": 65536,
    "linear_conv_kernel_dim": 4,
}
_LINEAR = "linear_attention"
_KINDS = {_LINEAR: LayerKind.GDN, "full_attention": LayerKind.FULL}


def defaults(f: ConfigFields) -> dict[str, Any]:
    """The class defaults, with the ``linear_*`` fields ``__post_init__`` derives from the others."""
    out = dict(_DEFAULTS)
    heads = f.data.get("num_attention_heads") or out["num_attention_heads"]
    hidden = f.data.get("hidden_size") or out["hidden_size"]
    out["linear_num_key_heads"] = out["linear_num_value_heads"] = heads
    key_heads = f.data.get("linear_num_key_heads") or heads
    if isinstance(hidden, int) and isinstance(key_heads, int) and key_heads > 0:
        out["linear_key_head_dim"] = int(0.75 * hidden / key_heads)
    key_dim = f.data.get("linear_key_head_dim") or out.get("linear_key_head_dim")
    if isinstance(key_dim, int):
        out["linear_value_head_dim"] = 2 * key_dim
    return out


def _layer_types(f: ConfigFields, n: int) -> list[str]:
    """``layer_types`` as ``OlmoHybridConfig`` keeps it (module docstring).

    :raises InputError: not one known type per layer; no linear or no attention layer."""
    types = f.get("layer_types")
    if types is None:
        types = ["full_attention" if i % 4 == 3 else _LINEAR for i in range(n)]
        if "full_attention" not in types:
            types[-1] = "full_attention"
    if not isinstance(types, list) or len(types) != n or any(t not in _KINDS for t in types):
        raise InputError(
            f.source,
            f.where("layer_types"),
            f"must list linear_attention or full_attention for each of the {n} layers (others: not modelled)",
        )
    if _LINEAR not in types:
        raise InputError(f.source, f.where("layer_types"), "OLMoHybrid expects at least one 'linear_attention' layer.")
    if all(t == _LINEAR for t in types):
        raise InputError(f.source, f.where("layer_types"), "OLMoHybrid expects at least one attention layer.")
    return types


def read(f: ConfigFields, architecture: str) -> ModelGeometry:
    """:raises InputError: what ``OlmoHybridConfig`` or the model class refuses (module docstring),
    a hidden size the attention heads do not divide (not modelled)."""
    n = num_layers(f)
    types = _layer_types(f, n)
    if f.get("linear_use_gate") is False:
        raise InputError(
            f.source,
            f.where("linear_use_gate"),
            "vLLM asserts it: OlmoHybridGatedDeltaNet requires linear_use_gate=True",
        )
    heads = f.integer("num_attention_heads")
    kv = f.integer("num_key_value_heads", default=heads)
    hidden = f.integer("hidden_size")
    if hidden % heads:
        raise InputError(f.source, f.where("hidden_size"), f"not a multiple of {heads} attention heads: not modelled")
    return geometry(
        f,
        architecture,
        "olmo_hybrid",
        tuple(_KINDS[t] for t in types),
        heads=(heads, kv, hidden // heads),
        gdn=replace(gated_delta_net(f), prefill_checkpoints=False),
        num_mtp_layers=0,
        mtp_kind=None,
        hybrid_class=True,
        hf_layer_types=True,
    )

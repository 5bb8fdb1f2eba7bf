"""Flint (``FlintForCausalLM``, ``vllm/models/flint``; vLLM 0.33.0): a Qwen3-MoE-style decoder
whose every attention head has a learned sink, on ``FlintConfig``.

What ``FlintAttention`` builds, per entry of ``layer_types`` (``FlintConfig`` writes every layer
``full_attention`` when absent): a plain ``Attention`` of ``num_attention_heads / TP`` heads and
``max(1, num_key_value_heads / TP)`` KV heads of ``head_dim``, with sinks, and
``per_layer_sliding_window = sliding_window`` on a ``sliding_attention`` layer (``None`` on a
full one; ``FlintConfig`` clears the window when ``use_sliding_window`` is false). Its KV cache is
the plain ``SlidingWindowSpec`` / ``FullAttentionSpec`` of that layer on FlashInfer's pages.

The class then asserts that the layer's impl is FlashInfer's ("Flint requires FlashInfer
attention"), the model dtype bfloat16 and the KV cache dtype ``auto`` / ``bfloat16``: its fused
kernel writes the cache in FlashInfer's layout. vLLM 0.33.0 selects FlashInfer for the sinks on
SM 10.x only; on SM 9.0 it picks FLASH_ATTN (the assertion), and FLASHINFER named there is refused
("attention sinks not supported"): :func:`verify_backend`.

At TP 1 on SM 10.x (``_flint_kernels``) the class also builds its CuTe DSL decode attention
(``ops/decode_attention.py``, ``nvidia-cutlass-dsl``), which the oracle's environment lacks: the
TP 1 engine start is not recorded. That kernel reads the FlashInfer cache as it is (it checks the
page layout, ``_supports_kv_cache``, and leaves any other to FlashInfer) and the layers' specs are
built before it, by the same ``Attention``: the cache geometry is the one recorded at TP 2, 4
and 8, and TP 1 is planned on it, the limitation stated with the plan (:func:`backend_assumption`).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from dryboot.errors import InputError
from dryboot.vllm.config.hf import ConfigFields, FamilyExtra, LayerKind, ModelGeometry, extra_of
from dryboot.vllm.config.resolve import model_dtype_of
from dryboot.vllm.engine_args import EngineArgs
from dryboot.vllm.models.common import attention_heads, geometry, layer_types, num_layers, window

#: ``FlintConfig``'s defaults for the keys read here (``vllm/models/flint/configs.py``)
_DEFAULTS: dict[str, Any] = {
    "num_hidden_layers": 49,
    "num_attention_heads": 32,
    "num_key_value_heads": 4,
    "head_dim": 128,
    "hidden_size": 2048,
    "max_position_embeddings": 262144,
    "use_sliding_window": True,
    "sliding_window": 513,
    "num_experts": 256,
}
_SLIDING = "sliding_attention"
_FULL = "full_attention"
#: the backend every Flint layer asserts
FLINT_BACKEND = "FLASHINFER"
#: the KV cache dtypes ``FlintAttention`` asserts
FLINT_KV_DTYPES = frozenset({"auto", "bfloat16"})
#: the release whose engine start was recorded (``tests/fidelity/test_flint.py``)
FLINT_RELEASES = frozenset({"0.33.0"})


@dataclass(frozen=True)
class FlintExtra(FamilyExtra):
    """Marks a Flint model (its layers assert FlashInfer, bfloat16 and a bfloat16 KV cache)."""


def defaults(f: ConfigFields) -> dict[str, Any]:
    return dict(_DEFAULTS)


def read(f: ConfigFields, architecture: str) -> ModelGeometry:
    """The layers ``FlintAttention`` builds (module docstring).

    :raises InputError: layer types other than ``sliding_attention`` / ``full_attention`` (not
        verified), or malformed fields."""
    n = num_layers(f)
    types = layer_types(f, n) or [_FULL] * n
    if not set(types) <= {_SLIDING, _FULL}:
        raise InputError(f.source, f.where("layer_types"), f"Flint layers are {_SLIDING} or {_FULL}")
    sw = window(f) if f.boolean("use_sliding_window", default=True) else None
    kinds = tuple(LayerKind.SLIDING if sw is not None and t == _SLIDING else LayerKind.FULL for t in types)
    return geometry(
        f,
        architecture,
        "flint",
        kinds,
        heads=attention_heads(f),
        sliding_window=sw,
        attention_sinks=True,
        family_extra=FlintExtra(),
    )


def engine_args(model: ModelGeometry, args: EngineArgs) -> EngineArgs:
    """:raises InputError: a release other than :data:`FLINT_RELEASES` (not verified)."""
    if extra_of(model, FlintExtra) is not None and args.vllm_version not in FLINT_RELEASES:
        raise InputError(
            "--vllm-version",
            args.vllm_version,
            f"{model.architecture}: verified on vLLM {', '.join(sorted(FLINT_RELEASES))} only",
        )
    return args


def verify_built(model: ModelGeometry, args: EngineArgs, backend: str) -> None:
    """What ``FlintAttention`` asserts of the flags after its FlashInfer assertion
    (:func:`verify_backend`).

    :raises InputError: a model dtype other than bfloat16, a KV cache dtype outside
        :data:`FLINT_KV_DTYPES` (vLLM's AssertionErrors, in its order)."""
    if extra_of(model, FlintExtra) is None:
        return
    arch = model.architecture
    dtype = model_dtype_of(model, args)
    if dtype != "bfloat16":
        raise InputError("--dtype", args.dtype, f"{arch}: vLLM's FlintAttention asserts a bfloat16 model ({dtype})")
    kv = args.kv_cache_dtype or "auto"
    if kv not in FLINT_KV_DTYPES:
        raise InputError(
            "--kv-cache-dtype",
            kv,
            f"{arch}: vLLM's FlintAttention asserts an auto / bfloat16 KV cache (AssertionError: its fused kernel "
            "writes the cache in FlashInfer's bfloat16 layout)",
        )


def verify_backend(model: ModelGeometry, backend: str, flag: str) -> None:
    """What ``FlintAttention`` asserts of the backend selected (or named) for its layers.

    :raises InputError: any backend but FlashInfer, in vLLM's words."""
    if extra_of(model, FlintExtra) is None or backend == FLINT_BACKEND:
        return
    raise InputError(
        flag,
        backend,
        f"{model.architecture}: AssertionError: Flint requires FlashInfer attention (vLLM 0.33.0 selects FlashInfer "
        "for its attention sinks on SM 10.x only)",
    )


def backend_assumption(model: ModelGeometry) -> str | None:
    """Flint's layers assert FlashInfer; the TP 1 limitation (module docstring)."""
    if extra_of(model, FlintExtra) is None:
        return None
    return (
        "Flint's layers assert FlashInfer, which vLLM 0.33.0 selects for their attention sinks on SM 10.x only; "
        "verified against vLLM at TP 2, 4 and 8: at TP 1 the class also builds its CuTe DSL decode kernels "
        "(nvidia-cutlass-dsl, absent from the oracle's environment), which read FlashInfer's cache as it is, so TP 1 "
        "is planned on the same cache geometry without its own engine-start record"
    )

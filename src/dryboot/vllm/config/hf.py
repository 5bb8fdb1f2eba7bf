"""Read a Hugging Face ``config.json`` into the geometry the KV-cache planner needs.

Handles flat and ``text_config``-nested (multimodal wrapper) layouts and derives each
layer's kind from ``layer_types``, ``hybrid_override_pattern`` (Nemotron-H),
``full_attention_interval`` (Qwen3-Next), ``sliding_window`` / ``use_sliding_window`` /
``max_window_layers`` (Qwen2 style) and the architecture (MLA when ``kv_lora_rank`` is set).
Field meanings follow the model classes under ``vllm/model_executor/models/``.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from enum import Enum
from functools import cached_property
from pathlib import Path
from typing import Any

from dryboot.errors import InputError


class LayerKind(Enum):
    """What a decoder layer keeps in the KV cache."""

    FULL = "full_attention"
    SLIDING = "sliding_attention"
    CHUNKED = "chunked_attention"
    MLA = "mla"
    GDN = "gated_deltanet"
    MAMBA2 = "mamba2"
    MAMBA1 = "mamba1"
    NONE = "none"

    # members are singletons: identity hashing is exact and runs in C (Enum's is Python code)
    __hash__ = object.__hash__

    @property
    def is_attention(self) -> bool:
        return self in (LayerKind.FULL, LayerKind.SLIDING, LayerKind.CHUNKED, LayerKind.MLA)

    @property
    def is_mamba(self) -> bool:
        return self in (LayerKind.GDN, LayerKind.MAMBA2, LayerKind.MAMBA1)


@dataclass(frozen=True)
class GatedDeltaNet:
    """Gated DeltaNet (Qwen3-Next, Qwen3.5) state parameters (HF ``linear_*`` fields)."""

    num_k_heads: int
    num_v_heads: int
    head_k_dim: int
    head_v_dim: int
    conv_kernel: int


@dataclass(frozen=True)
class Mamba2:
    """Mamba2 (Nemotron-H, Granite-4-H, Falcon-H1) state parameters."""

    num_heads: int
    head_dim: int
    n_groups: int
    state_size: int
    conv_kernel: int
    chunk_size: int | None


@dataclass(frozen=True)
class Mamba1:
    """Mamba1 (Jamba) state parameters: ``d_inner`` (intermediate size), ``d_state``, ``d_conv``."""

    d_inner: int
    d_state: int
    d_conv: int


@dataclass(frozen=True)
class ModelGeometry:
    """The cache-relevant shape of one model.

    Head counts are totals (before tensor parallelism). ``dtype`` is the torch dtype name the
    HF config declares (``bfloat16``...). ``hf_ssm_dtype`` is the SSM state dtype the config
    pins (Qwen3.5 ``mamba_ssm_dtype``, Nemotron-H ``mamba_ssm_cache_dtype`` or float32), or
    ``None`` when the state follows ``--mamba-cache-dtype``.
    """

    source: str
    architecture: str
    model_type: str
    dtype: str
    layer_kinds: tuple[LayerKind, ...]
    num_kv_heads: int
    head_dim: int
    head_dim_v: int
    sliding_window: int | None
    attention_chunk_size: int | None
    max_position_embeddings: int | None
    gdn: GatedDeltaNet | None = None
    mamba2: Mamba2 | None = None
    mamba1: Mamba1 | None = None
    hf_ssm_dtype: str | None = None
    layer_prefix: str = "model.layers"
    num_attention_heads: int = 0

    @property
    def num_layers(self) -> int:
        return len(self.layer_kinds)

    @cached_property
    def kinds(self) -> frozenset[LayerKind]:
        """The distinct layer kinds."""
        return frozenset(self.layer_kinds)

    @cached_property
    def is_hybrid(self) -> bool:
        """Attention and mamba-family layers together (vLLM's ``is_hybrid``)."""
        return any(k.is_mamba for k in self.kinds) and any(k.is_attention for k in self.kinds)

    @property
    def use_mla(self) -> bool:
        return LayerKind.MLA in self.kinds

    def layers_by_kind(
        self, prefix: str | None = None
    ) -> tuple[tuple[LayerKind, ...], tuple[tuple[str, ...], ...], tuple[str, ...]]:
        """(kinds in first-appearance order, the layer names of each kind, every name in module
        order), for layers that keep a KV cache. Cached per prefix."""
        cache: dict[str | None, tuple[tuple[LayerKind, ...], tuple[tuple[str, ...], ...], tuple[str, ...]]] = (
            self.__dict__.setdefault("_by_kind", {})
        )
        hit = cache.get(prefix)
        if hit is None:
            table = self.layer_table(prefix)
            by: dict[LayerKind, list[str]] = {}
            for name, kind in table:
                by.setdefault(kind, []).append(name)
            hit = cache[prefix] = (tuple(by), tuple(tuple(v) for v in by.values()), tuple(n for n, _ in table))
        return hit

    def layer_table(self, prefix: str | None = None) -> tuple[tuple[str, LayerKind], ...]:
        """(module name, kind) of every layer that keeps a KV cache, in module order;
        names are ``layer_name(i)``, or ``<prefix>.<i>`` when ``prefix`` is given. Cached."""
        cache: dict[str | None, tuple[tuple[str, LayerKind], ...]] = self.__dict__.setdefault("_tables", {})
        table = cache.get(prefix)
        if table is None:
            table = cache[prefix] = tuple(
                (self.layer_name(i) if prefix is None else f"{prefix}.{i}", kind)
                for i, kind in enumerate(self.layer_kinds)
                if kind is not LayerKind.NONE
            )
        return table

    def layer_name(self, index: int) -> str:
        """vLLM's module name of layer ``index`` (the key of its KV cache spec)."""
        kind = self.layer_kinds[index]
        if kind is LayerKind.GDN:
            return f"{self.layer_prefix}.{index}.linear_attn"
        if kind in (LayerKind.MAMBA2, LayerKind.MAMBA1):
            return f"{self.layer_prefix}.{index}.mixer"
        return f"{self.layer_prefix}.{index}.self_attn.attn"

    def count(self, kind: LayerKind) -> int:
        return sum(1 for k in self.layer_kinds if k is kind)


_TORCH_DTYPE_NAMES = {
    "bfloat16": "bfloat16",
    "float16": "float16",
    "half": "float16",
    "float32": "float32",
    "float": "float32",
}


class _Fields:
    """Typed access to config fields with one-line errors naming the file and field."""

    def __init__(self, source: str, data: dict[str, Any], prefix: str) -> None:
        self.source = source
        self.data = data
        self.prefix = prefix

    def where(self, key: str) -> str:
        return f"{self.prefix}{key}"

    def has(self, key: str) -> bool:
        return self.data.get(key) is not None

    def get(self, key: str) -> Any:
        return self.data.get(key)

    def integer(self, key: str, default: int | None = None, *, minimum: int = 1) -> int:
        value = self.data.get(key)
        if value is None:
            if default is None:
                raise InputError(self.source, self.where(key), "required field is missing")
            return default
        if isinstance(value, bool) or not isinstance(value, int):
            raise InputError(self.source, self.where(key), f"must be an integer, got {json.dumps(value)}")
        if value < minimum:
            raise InputError(self.source, self.where(key), f"must be >= {minimum}, got {value}")
        return value

    def opt_int(self, key: str) -> int | None:
        return self.integer(key) if self.has(key) else None


def load_config_json(path: str | Path) -> tuple[str, dict[str, Any]]:
    """Read ``path`` (a ``config.json`` or a directory holding one) as a JSON object.

    :returns: (the file's path as text, the parsed object).
    :raises InputError: missing file, unreadable JSON, or not an object.
    """
    p = Path(path)
    if p.is_dir():
        p = p / "config.json"
    source = str(p)
    try:
        text = p.read_text(encoding="utf-8")
    except FileNotFoundError:
        raise InputError(source, None, "no such file") from None
    except (OSError, UnicodeDecodeError) as exc:
        raise InputError(source, None, f"cannot read: {exc}") from None
    try:
        data = json.loads(text)
    except json.JSONDecodeError as exc:
        raise InputError(source, f"line {exc.lineno} column {exc.colno}", f"invalid JSON: {exc.msg}") from None
    if not isinstance(data, dict):
        raise InputError(source, None, "a config.json must hold a JSON object")
    return source, data


def load_model(path: str | Path) -> ModelGeometry:
    """Load a model's :class:`ModelGeometry` from its ``config.json`` (file or directory).

    :raises InputError: the file is missing or malformed, or a field the planner needs is
        missing or has the wrong type (the message names the field).
    """
    source, data = load_config_json(path)
    return geometry_from_config(data, source)


def geometry_from_config(data: dict[str, Any], source: str = "<config>") -> ModelGeometry:
    """Build a :class:`ModelGeometry` from a parsed HF config object.

    :raises InputError: as :func:`load_model`.
    """
    architectures = data.get("architectures") or []
    if not isinstance(architectures, list) or not all(isinstance(a, str) for a in architectures):
        raise InputError(source, "architectures", "must be a list of strings")
    architecture = architectures[0] if architectures else str(data.get("model_type", "unknown"))

    prefix = ""
    text = data
    nested = data.get("text_config")
    if isinstance(nested, dict) and "num_hidden_layers" in nested:
        text = {**{k: v for k, v in data.items() if k != "text_config"}, **nested}
        prefix = "text_config."
    f = _Fields(source, text, prefix)
    model_type = str(text.get("model_type") or data.get("model_type") or "")

    num_layers = f.integer("num_hidden_layers")
    layer_kinds = _layer_kinds(f, num_layers, model_type)

    # Attention geometry.
    num_heads = f.integer("num_attention_heads", default=1)
    kv_heads = f.integer("num_key_value_heads", default=num_heads)
    if f.has("head_dim"):
        head_dim = f.integer("head_dim")
    elif f.has("attention_head_dim"):
        head_dim = f.integer("attention_head_dim")
    else:
        hidden = f.integer("hidden_size")
        head_dim = hidden // num_heads
    head_dim_v = head_dim
    if LayerKind.MLA in layer_kinds:
        kv_heads = 1
        head_dim = f.integer("kv_lora_rank") + f.integer("qk_rope_head_dim", minimum=0)
        head_dim_v = 0

    sliding = f.opt_int("sliding_window") if LayerKind.SLIDING in layer_kinds else None
    if LayerKind.SLIDING in layer_kinds and sliding is None:
        raise InputError(source, f.where("sliding_window"), "sliding-window layers need a window")
    chunk = f.opt_int("attention_chunk_size") if LayerKind.CHUNKED in layer_kinds else None
    if LayerKind.CHUNKED in layer_kinds and chunk is None:
        raise InputError(source, f.where("attention_chunk_size"), "chunked layers need a size")

    dtype_name = text.get("dtype") or text.get("torch_dtype") or data.get("torch_dtype")
    dtype_name = dtype_name or "bfloat16"
    if dtype_name not in _TORCH_DTYPE_NAMES:
        raise InputError(source, f.where("torch_dtype"), f"unsupported dtype {dtype_name!r}")
    dtype = _TORCH_DTYPE_NAMES[str(dtype_name)]

    gdn = mamba2 = mamba1 = None
    hf_ssm: str | None = None
    if LayerKind.GDN in layer_kinds:
        gdn = GatedDeltaNet(
            num_k_heads=f.integer("linear_num_key_heads"),
            num_v_heads=f.integer("linear_num_value_heads"),
            head_k_dim=f.integer("linear_key_head_dim"),
            head_v_dim=f.integer("linear_value_head_dim"),
            conv_kernel=f.integer("linear_conv_kernel_dim"),
        )
        if model_type.startswith("qwen3_5") and f.has("mamba_ssm_dtype"):
            hf_ssm = _ssm_dtype(f, "mamba_ssm_dtype")
    if LayerKind.MAMBA2 in layer_kinds:
        heads = f.integer("mamba_num_heads")
        mamba2 = Mamba2(
            num_heads=heads,
            head_dim=f.integer("mamba_head_dim"),
            n_groups=f.integer("n_groups", default=1),
            state_size=f.integer("ssm_state_size"),
            conv_kernel=f.integer("conv_kernel"),
            chunk_size=f.opt_int("chunk_size"),
        )
        if model_type.startswith("nemotron_h"):
            hf_ssm = _ssm_dtype(f, "mamba_ssm_cache_dtype") if f.has("mamba_ssm_cache_dtype") else "float32"
    if LayerKind.MAMBA1 in layer_kinds:
        hidden = f.integer("hidden_size")
        mamba1 = Mamba1(
            d_inner=f.integer("mamba_expand", default=2) * hidden,
            d_state=f.integer("mamba_d_state", default=16),
            d_conv=f.integer("mamba_d_conv", default=4),
        )

    return ModelGeometry(
        source=source,
        architecture=architecture,
        model_type=model_type,
        dtype=dtype,
        layer_kinds=layer_kinds,
        num_kv_heads=kv_heads,
        head_dim=head_dim,
        head_dim_v=head_dim_v,
        sliding_window=sliding,
        attention_chunk_size=chunk,
        max_position_embeddings=f.opt_int("max_position_embeddings"),
        gdn=gdn,
        mamba2=mamba2,
        mamba1=mamba1,
        hf_ssm_dtype=hf_ssm,
        num_attention_heads=num_heads,
    )


def _ssm_dtype(f: _Fields, key: str) -> str:
    value = f.get(key)
    if value not in ("float32", "float16", "bfloat16"):
        raise InputError(f.source, f.where(key), f"unsupported SSM dtype {value!r}")
    return str(value)


_LAYER_TYPE_NAMES = {
    "full_attention": LayerKind.FULL,
    "attention": LayerKind.FULL,
    "sliding_attention": LayerKind.SLIDING,
    "chunked_attention": LayerKind.CHUNKED,
    "linear_attention": LayerKind.GDN,
    "mamba": LayerKind.MAMBA1,
    "mamba2": LayerKind.MAMBA2,
}

_PATTERN_CHARS = {"M": LayerKind.MAMBA2, "*": LayerKind.FULL, "-": LayerKind.NONE, "E": LayerKind.NONE}


def _layer_kinds(f: _Fields, num_layers: int, model_type: str) -> tuple[LayerKind, ...]:
    layer_types = f.get("layer_types")
    if layer_types is not None:
        if not isinstance(layer_types, list) or len(layer_types) != num_layers:
            raise InputError(
                f.source,
                f.where("layer_types"),
                f"must list one type per layer ({num_layers}), got "
                f"{len(layer_types) if isinstance(layer_types, list) else type(layer_types).__name__}",
            )
        kinds = []
        for i, name in enumerate(layer_types):
            if name not in _LAYER_TYPE_NAMES:
                raise InputError(f.source, f"{f.where('layer_types')}[{i}]", f"unknown layer type {name!r}")
            kinds.append(_LAYER_TYPE_NAMES[name])
        if f.has("kv_lora_rank"):
            kinds = [LayerKind.MLA if k is LayerKind.FULL else k for k in kinds]
        return tuple(kinds)

    pattern = f.get("hybrid_override_pattern")
    if pattern is not None:
        if not isinstance(pattern, str) or len(pattern) != num_layers:
            raise InputError(
                f.source,
                f.where("hybrid_override_pattern"),
                f"must be a string of {num_layers} characters (M, *, -, E)",
            )
        bad = sorted(set(pattern) - set(_PATTERN_CHARS))
        if bad:
            raise InputError(f.source, f.where("hybrid_override_pattern"), f"unknown layer symbols {bad}")
        return tuple(_PATTERN_CHARS[c] for c in pattern)

    if f.has("full_attention_interval") and (
        f.has("linear_num_value_heads") or model_type.startswith(("qwen3_next", "qwen3_5"))
    ):
        interval = f.integer("full_attention_interval")
        return tuple(LayerKind.FULL if (i + 1) % interval == 0 else LayerKind.GDN for i in range(num_layers))

    if f.has("kv_lora_rank"):
        return (LayerKind.MLA,) * num_layers

    if f.has("sliding_window"):
        use = f.get("use_sliding_window")
        if use is False:
            return (LayerKind.FULL,) * num_layers
        if use is True and f.has("max_window_layers"):
            first = f.integer("max_window_layers", minimum=0)
            return tuple(LayerKind.SLIDING if i >= first else LayerKind.FULL for i in range(num_layers))
        return (LayerKind.SLIDING,) * num_layers

    if model_type in ("mamba", "falcon_mamba"):
        return (LayerKind.MAMBA1,) * num_layers
    return (LayerKind.FULL,) * num_layers

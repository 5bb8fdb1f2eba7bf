"""KV cache groups: which layers share a block table, and the padding layers.

The ``upstream`` policy mirrors vLLM 0.28.0's ``get_kv_cache_groups`` and
``_get_kv_cache_groups_uniform_page_size`` (``vllm/v1/core/kv_cache_utils.py``):
layers are bucketed by (unified) spec in order of first appearance; ``group_size`` is the
smallest bucket, or the largest when largest < 1.5 x smallest; each bucket of ``n`` layers
splits into ``cdiv(n, group_size)`` groups taking ``layers[i::num_groups]``, and the
missing slots are padding layers.

The ``pad-sliding-window-buckets`` policy is the reference deployment's patch
(``kv-geometry-rules.md`` section 7): when the smallest bucket holds only sliding-window
layers, take the largest divisor ``g`` of the GCD of the other buckets' sizes with
``g > group_size`` such that padding each sliding bucket up to a multiple of ``g`` adds no
more layers than the bucket has.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from math import gcd
from typing import Literal

from dryboot.hybrid import cdiv
from dryboot.specs import AttentionSpec, LayerSpec, MambaSpec
from dryboot.unify import distinct_specs

GroupingPolicy = Literal["upstream", "pad-sliding-window-buckets"]
GROUPING_POLICIES: tuple[str, ...] = ("upstream", "pad-sliding-window-buckets")


@dataclass(frozen=True)
class KVCacheGroup:
    """One KV cache group (``KVCacheGroupSpec``).

    :param layer_names: the member layers (at most ``group_size``; the rest are padding).
    :param spec: the group's (unified) spec; for a uniform-type group, the first layer's.
    :param uniform_type: vLLM's ``UniformTypeKVCacheSpecs`` case: one group holding every
        layer, each with its own page (``page_sizes``).
    """

    layer_names: tuple[str, ...]
    spec: LayerSpec
    uniform_type: bool = False
    page_sizes: tuple[int, ...] = ()

    @property
    def block_size(self) -> int:
        return self.spec.block_size

    @property
    def kind(self) -> str:
        return self.spec.kind


@dataclass(frozen=True)
class Grouping:
    """The grouping outcome: groups, ``group_size`` (layers per group), log lines."""

    groups: tuple[KVCacheGroup, ...]
    group_size: int
    path: Literal["uniform-spec", "uniform-type", "hybrid", "empty"]
    log: tuple[str, ...]
    decisions: tuple[str, ...] = ()


def bucket_key(spec: LayerSpec) -> tuple[object, ...]:
    """What vLLM's spec equality compares (backend name and dtype spelling excluded)."""
    if isinstance(spec, MambaSpec):
        return (
            "mamba",
            spec.mamba_type,
            spec.block_size,
            spec.shapes,
            spec.torch_dtypes,
            spec.page_size_padded,
            spec.mamba_cache_mode,
            spec.num_speculative_blocks,
        )
    return (
        spec.kind,
        spec.block_size,
        spec.num_kv_heads,
        spec.head_size,
        spec.head_size_v,
        spec.torch_dtype,
        spec.quant_mode,
        spec.content_bytes,
        spec.page_size_padded,
        spec.indexes_kv_by_block_stride,
        spec.sliding_window,
        spec.attention_chunk_size,
    )


def _type_key(spec: LayerSpec) -> tuple[object, ...]:
    """``is_uniform_with_collection``: same class family (MLA counts as full attention),
    same window / chunk / speculative blocks."""
    if isinstance(spec, MambaSpec):
        return ("mamba", spec.num_speculative_blocks)
    if spec.kind in ("full", "mla"):
        return ("full",)
    if spec.kind == "sliding":
        return ("sliding", spec.sliding_window)
    return ("chunked", spec.attention_chunk_size)


def uniform_path(layers: Sequence[tuple[str, LayerSpec]]) -> Grouping | None:
    """vLLM's two single-group cases, before any unification.

    ``is_kv_cache_spec_uniform`` (every spec the same) or
    ``UniformTypeKVCacheSpecs.from_specs`` (one block size, one type family).
    """
    if not layers:
        return Grouping((), 0, "empty", ())
    names = tuple(n for n, _ in layers)
    distinct = [spec for _, spec, _ in distinct_specs(layers).values()]
    if len({bucket_key(s) for s in distinct}) == 1:
        return Grouping((KVCacheGroup(names, distinct[0]),), len(names), "uniform-spec", ())
    if len({s.block_size for s in distinct}) == 1 and len({_type_key(s) for s in distinct}) == 1:
        group = KVCacheGroup(
            names, layers[0][1], uniform_type=True, page_sizes=tuple(s.page_size_bytes for _, s in layers)
        )
        return Grouping((group,), 1, "uniform-type", ())
    return None


def _is_sliding(spec: LayerSpec) -> bool:
    return isinstance(spec, AttentionSpec) and spec.kind == "sliding"


def sliding_bucket_group_size(sizes: Sequence[int], sliding: Sequence[bool], group_size: int) -> int | None:
    """The ``pad-sliding-window-buckets`` group size, or ``None`` to keep upstream's.

    ``sizes[i]`` is bucket i's layer count, ``sliding[i]`` whether it holds sliding-window
    layers only. Example (section 7): sizes 16 / 48 / 5, the 5 sliding -> 8.
    """
    smallest = min(sizes)
    if group_size != smallest:
        return None
    if not all(sl for n, sl in zip(sizes, sliding, strict=True) if n == smallest):
        return None
    others = [n for n, sl in zip(sizes, sliding, strict=True) if not sl]
    if not others:
        return None
    common = 0
    for n in others:
        common = gcd(common, n)
    for g in range(common, group_size, -1):
        if common % g:
            continue
        if all(cdiv(n, g) * g - n <= n for n, sl in zip(sizes, sliding, strict=True) if sl):
            return g
    return None


def group_layers(layers: Sequence[tuple[str, LayerSpec]], policy: str = "upstream") -> Grouping:
    """Split unified ``layers`` (all one page size) into KV cache groups.

    :param policy: ``upstream`` or ``pad-sliding-window-buckets``.
    :returns: a :class:`Grouping` with vLLM's padding warnings verbatim in ``log``.
    """
    buckets: dict[tuple[object, ...], list[str]] = {}
    bucket_spec: dict[tuple[object, ...], LayerSpec] = {}
    key_of: dict[int, tuple[object, ...]] = {}
    for name, spec in layers:
        key = key_of.get(id(spec))
        if key is None:
            key = key_of[id(spec)] = bucket_key(spec)
            bucket_spec.setdefault(key, spec)
            buckets.setdefault(key, [])
        buckets[key].append(name)
    keys = list(buckets)
    sizes = [len(buckets[k]) for k in keys]
    group_size = min(sizes)
    if max(sizes) < group_size * 1.5:
        group_size = max(sizes)
    decisions: list[str] = []
    if policy == "pad-sliding-window-buckets":
        g = sliding_bucket_group_size(sizes, [_is_sliding(bucket_spec[k]) for k in keys], group_size)
        if g is not None:
            decisions.append(
                f"Sliding-window bucket of {group_size} layers is the smallest: using "
                f"group_size {g} instead of {group_size}"
            )
            group_size = g
        else:
            decisions.append(f"pad-sliding-window-buckets: keeping group_size {group_size}")
    elif policy != "upstream":
        raise ValueError(f"unknown grouping policy {policy!r}")
    log: list[str] = []
    groups: list[KVCacheGroup] = []
    for key in keys:
        names = buckets[key]
        padding = group_size - len(names) % group_size
        if padding != group_size:
            log.append(
                f"Add {padding} padding layers, may waste at most {padding / len(names) * 100:.2f}% KV cache memory"
            )
        num_groups = cdiv(len(names), group_size)
        for i in range(num_groups):
            groups.append(KVCacheGroup(tuple(names[i::num_groups]), bucket_spec[key]))
    return Grouping(tuple(groups), group_size, "hybrid", tuple(log), tuple(decisions))

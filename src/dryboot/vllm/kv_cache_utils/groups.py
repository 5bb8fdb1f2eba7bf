"""KV cache groups: which layers share a block table, and the padding layers.

The ``upstream`` policy mirrors vLLM 0.28.0's ``get_kv_cache_groups`` and
``_get_kv_cache_groups_uniform_page_size`` (``vllm/v1/core/kv_cache_utils.py``):
layers are bucketed by (unified) spec in order of first appearance; ``group_size`` is the
smallest bucket, or the largest when largest < 1.5 x smallest; each bucket of ``n`` layers
splits into ``cdiv(n, group_size)`` groups taking ``layers[i::num_groups]``, and the
missing slots are padding layers.

The ``pad-sliding-window-buckets`` policy is the reference deployment's patch
(``docs/kv-geometry-rules.md`` section 7): when the smallest bucket holds only sliding-window
layers, take the largest divisor ``g`` of the GCD of the other buckets' sizes with
``g > group_size`` such that padding each sliding bucket up to a multiple of ``g`` adds no
more layers than the bucket has.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, replace
from functools import cached_property
from math import gcd
from typing import Literal, NamedTuple

from dryboot.vllm.kv_cache_interface import AttentionSpec, LayerKind, LayerSpec, MambaSpec
from dryboot.vllm.layer_set import LayerSet
from dryboot.vllm.platforms import cdiv

GroupingPolicy = Literal["upstream", "pad-sliding-window-buckets"]


class KVCacheGroup(NamedTuple):
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


class GroupRun(NamedTuple):
    """One bucket of identical (unified) specs and the groups it splits into.

    :param members: the bucket's layers, module order; group ``i`` is ``members[i::num_groups]``.
    """

    spec: LayerSpec
    members: tuple[str, ...]
    num_groups: int

    @property
    def largest_group(self) -> int:
        """Layers in this bucket's fullest group."""
        return cdiv(len(self.members), self.num_groups)


@dataclass(frozen=True)
class Grouping:
    """The grouping outcome: buckets and their groups, ``group_size``, log lines.

    :param runs: one :class:`GroupRun` per bucket, in vLLM's group order.
    :param uniform_pages: the uniform-type case: every layer's own page, module order.
    :param packed: the ``packed`` case (DeepSeek-V4, :mod:`dryboot.vllm.kv_cache_utils.packed`):
        every group, each a uniform-type group; ``packed_stride`` the slab's block (bytes).
    :param pool_alignment: the pool's bytes per block are rounded up to a multiple of it (vLLM
        0.31.0 ``_get_kv_cache_bytes_per_block``: the least common multiple of the layers'
        ``block_stride_alignment``; 1: none).
    """

    runs: tuple[GroupRun, ...]
    group_size: int
    path: Literal["uniform-spec", "uniform-type", "hybrid", "empty", "packed"]
    log: tuple[str, ...]
    decisions: tuple[str, ...] = ()
    uniform_pages: tuple[int, ...] = ()
    packed: tuple[KVCacheGroup, ...] = ()
    packed_stride: int = 0
    pool_alignment: int = 1

    @cached_property
    def groups(self) -> tuple[KVCacheGroup, ...]:
        """Every KV cache group (``KVCacheGroupSpec``), in vLLM's order (built on first use)."""
        if self.path == "packed":
            return self.packed
        if self.path == "uniform-type":
            run = self.runs[0]
            return (KVCacheGroup(run.members, run.spec, uniform_type=True, page_sizes=self.uniform_pages),)
        return tuple(
            KVCacheGroup(run.members[i :: run.num_groups], run.spec) for run in self.runs for i in range(run.num_groups)
        )

    @property
    def num_groups(self) -> int:
        if self.path == "packed":
            return len(self.packed)
        return sum(run.num_groups for run in self.runs)

    @property
    def specs(self) -> tuple[LayerSpec, ...]:
        """The distinct group specs (one per bucket), in group order."""
        return tuple(run.spec for run in self.runs)

    @property
    def page_size_bytes(self) -> int:
        """The pool's page: the unified page, the sum of pages of a uniform-type group, or the
        packed slab's block stride (DeepSeek-V4)."""
        if self.path == "packed":
            return self.packed_stride
        return sum(self.uniform_pages) if self.path == "uniform-type" else self.runs[0].spec.page_size_bytes


def bucket_key(spec: LayerSpec) -> tuple[object, ...]:
    """What vLLM's spec equality compares (backend name and dtype spelling excluded)."""
    if isinstance(spec, MambaSpec):
        return (
            "mamba",
            spec.layer_kind,
            spec.block_size,
            spec.shapes,
            spec.torch_dtypes,
            spec.page_size_padded,
            spec.mamba_cache_mode,
            spec.num_speculative_blocks,
            spec.num_prefill_checkpoint_blocks,
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
        spec.block_stride_alignment,
    )


def _type_key(spec: LayerSpec) -> tuple[object, ...]:
    """``is_uniform_with_collection``: same class family (MLA, the sparse-attention indexer's key
    cache, MiniMax-M3's indexer cache and the hidden-state cache ``HiddenStateCacheSpec``, all
    ``MLAAttentionSpec``, count as
    full attention), same window / chunk /
    speculative blocks."""
    if isinstance(spec, MambaSpec):
        return ("mamba", spec.num_speculative_blocks, spec.num_prefill_checkpoint_blocks)
    if spec.layer_kind in (
        LayerKind.FULL,
        LayerKind.MLA,
        LayerKind.MLA_INDEXER,
        LayerKind.MM3_SPARSE,
        LayerKind.MM3_INDEXER,
        LayerKind.HIDDEN_STATE,
    ):
        return ("full",)
    if spec.layer_kind.is_sliding_window:
        return ("sliding", spec.sliding_window)
    return ("chunked", spec.attention_chunk_size)


def uniform_path(layers: LayerSet) -> Grouping | None:
    """vLLM's two single-group cases, before any unification.

    ``is_kv_cache_spec_uniform`` (every spec the same) or
    ``UniformTypeKVCacheSpecs.from_specs`` (one block size, one type family).
    """
    if not layers.specs:
        return Grouping((), 0, "empty", ())
    specs = layers.specs
    if len({bucket_key(s) for s in specs}) == 1:
        return Grouping((GroupRun(specs[0], layers.order, 1),), len(layers.order), "uniform-spec", ())
    if len({s.block_size for s in specs}) == 1 and len({_type_key(s) for s in specs}) == 1:
        return uniform_type_grouping(layers)
    return None


#: spec kinds that are vLLM ``MLAAttentionSpec`` (``HIDDEN_STATE`` too, ruled out first)
_MLA_KINDS = frozenset(k for k in LayerKind if k.spec_kind == "mla")
#: spec kinds that are vLLM ``FullAttentionSpec`` (``MLAAttentionSpec`` is one)
_FULL_KINDS = _MLA_KINDS | {LayerKind.FULL, LayerKind.MM3_SPARSE, LayerKind.STEP5_SUMMARY}


def full_allocation_fallback(layers: LayerSet) -> LayerSet | None:
    """The layers as vLLM's full-allocation fallback allocates them, or ``None`` where it declines.

    Mirrors ``_try_get_full_allocation_fallback_groups`` (``v1/core/kv_cache_utils.py``
    0.27.1-0.32.0, ``v1/core/kv_cache_planning.py`` 0.33.0), which ``get_kv_cache_groups`` tries
    when page unification raises ``NotImplementedError``: it applies only to MLA layers beside
    plain sliding-window layers (no hidden-state cache, sliding-window MLA or chunked local layer);
    every sliding-window layer is then allocated as full attention (``_promote_local_kv_cache_specs``:
    the full-attention layers' one block size, or its own where they have several; a padded page
    scaled to that block) and all layers form one ``UniformTypeKVCacheSpecs`` group, which needs
    one block size and one type family. The window still bounds compute, not the cache: each
    promoted layer keeps a page a block for every token of ``max_model_len``.
    """
    kinds = {s.layer_kind for s in layers.specs}
    if LayerKind.HIDDEN_STATE in kinds or any(k.spec_kind in ("sliding_mla", "chunked") for k in kinds):
        return None
    if not (kinds & _MLA_KINDS and any(k.is_sliding_window for k in kinds)):
        return None
    full_blocks = {s.block_size for s in layers.specs if s.layer_kind in _FULL_KINDS}
    full_block = next(iter(full_blocks)) if len(full_blocks) == 1 else None

    def promoted(spec: LayerSpec) -> LayerSpec:
        if not (isinstance(spec, AttentionSpec) and spec.layer_kind.is_sliding_window):
            return spec
        block = full_block or spec.block_size
        padded = spec.page_size_padded
        if padded is not None:
            padded = max(padded, spec.natural_page_size_bytes * block // spec.block_size)
        return replace(spec, layer_kind=LayerKind.FULL, sliding_window=None, block_size=block, page_size_padded=padded)

    out = LayerSet.from_pairs([(n, promoted(s)) for n, s in layers.pairs()])
    if len({s.block_size for s in out.specs}) != 1 or len({_type_key(s) for s in out.specs}) != 1:
        return None
    return out


def uniform_type_grouping(layers: LayerSet) -> Grouping:
    """One ``UniformTypeKVCacheSpecs`` group of every layer, each with its own page
    (``_get_kv_cache_groups_uniform_type``)."""
    page_of = {name: s.page_size_bytes for s, names in zip(layers.specs, layers.names, strict=True) for name in names}
    pages = tuple(page_of[n] for n in layers.order)
    return Grouping((GroupRun(layers.specs[0], layers.order, 1),), 1, "uniform-type", (), (), pages)


def _is_sliding(spec: LayerSpec) -> bool:
    return isinstance(spec, AttentionSpec) and spec.layer_kind.is_sliding_window


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


def group_layers(layers: LayerSet, policy: str = "upstream") -> Grouping:
    """Split unified ``layers`` (all one page size) into KV cache groups.

    :param policy: ``upstream`` or ``pad-sliding-window-buckets``.
    :returns: a :class:`Grouping` with vLLM's padding warnings verbatim in ``log``.
    """
    buckets: dict[tuple[object, ...], tuple[str, ...]] = {}
    bucket_spec: dict[tuple[object, ...], LayerSpec] = {}
    position: dict[str, int] | None = None
    for spec, names in zip(layers.specs, layers.names, strict=True):
        key = bucket_key(spec)
        if key in buckets:
            # equal specs reached from different layers: one bucket, in module order
            if position is None:
                position = {n: j for j, n in enumerate(layers.order)}
            buckets[key] = tuple(sorted(buckets[key] + names, key=position.__getitem__))
        else:
            buckets[key] = names
            bucket_spec[key] = spec
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
    runs: list[GroupRun] = []
    for key in keys:
        members = buckets[key]
        padding = group_size - len(members) % group_size
        if padding != group_size:
            log.append(
                f"Add {padding} padding layers, may waste at most {padding / len(members) * 100:.2f}% KV cache memory"
            )
        runs.append(GroupRun(bucket_spec[key], members, cdiv(len(members), group_size)))
    return Grouping(tuple(runs), group_size, "hybrid", tuple(log), tuple(decisions))


def _largest_divisor_at_most(n: int, limit: int) -> int:
    """The largest divisor of ``n`` that is at most ``limit`` (1 at least)."""
    return max((d for d in range(1, min(n, limit) + 1) if n % d == 0), default=1)


def add_hidden_state_groups(
    grouping: Grouping, hidden: Sequence[tuple[str, AttentionSpec]], min_page: bool = False, divides: bool = True
) -> tuple[Grouping, dict[LayerSpec, LayerSpec], list[tuple[str, AttentionSpec]]]:
    """Give each hidden-state cache layer (``extract_hidden_states``) a group of its own after
    the others, as ``get_kv_cache_groups`` does once the other layers are grouped: its block is
    the largest divisor of the groups' GCD block whose page (``block * per-token bytes``) fits
    the common page, and its page is padded to the common page. ``min_page`` (vLLM 0.30+,
    ``_ensure_min_page_size``): first the other groups' blocks (and padded pages) are multiplied
    by the smallest factor that makes the common page hold one token of hidden states.
    ``divides`` False (vLLM 0.27.1): the block is simply the tokens that fit the common page.

    :returns: (the grouping with one more group per hidden layer, the other groups' specs
        replaced by scaling, each hidden layer's aligned spec).
    :raises ValueError: one token of hidden states is larger than the common page (vLLM would
        record a padded page smaller than the data).
    """
    common_page = grouping.page_size_bytes
    runs = list(grouping.runs)
    scaled: dict[LayerSpec, LayerSpec] = {}
    largest = max(spec.bytes_per_token for _, spec in hidden)
    if min_page and largest > common_page:
        scale = cdiv(largest, common_page)
        common_page *= scale
        for i, run in enumerate(runs):
            spec = run.spec.with_block_size(run.spec.block_size * scale)
            if run.spec.page_size_padded is not None:
                spec = spec.with_padded_page(run.spec.page_size_padded * scale)
            scaled[run.spec] = spec
            runs[i] = GroupRun(spec, run.members, run.num_groups)
    block = gcd(*(run.spec.block_size for run in runs))
    aligned: list[tuple[str, AttentionSpec]] = []
    for name, spec in hidden:
        per_token = spec.bytes_per_token
        fit = max(common_page // per_token, 1)
        new_block = _largest_divisor_at_most(block, fit) if divides else fit
        try:
            spec = spec.with_block_size(new_block).with_padded_page(common_page)
        except ValueError:
            raise ValueError(
                f"one token of hidden states ({per_token} bytes) is larger than the common page ({common_page} bytes)"
            ) from None
        runs.append(GroupRun(spec, (name,), 1))
        aligned.append((name, spec))
    return (
        Grouping(tuple(runs), grouping.group_size, grouping.path, grouping.log, grouping.decisions),
        scaled,
        aligned,
    )

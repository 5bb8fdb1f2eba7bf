"""DeepSeek-V4's KV cache: its specs, its multi-group grouping and its packed block slab.

Mirrors vLLM 0.28.0 (and, where they differ, the releases of :data:`POOLED`,
:data:`LAYOUT_PACKED` and :data:`KERNEL_ALIGNED`, and the family's
``engine_args`` hook, :mod:`dryboot.vllm.models.deepseek_v4`; every release of
:data:`PLANNED_RELEASES` is checked against its own engine start): the layers'
``get_kv_cache_spec`` (``vllm/models/deepseek_v4/attention.py``
``DeepseekV4Attention`` / ``DeepseekV4IndexerCache``, ``compressor.py``
``CompressorStateCache``, ``v1/attention/backends/mla/sparse_swa.py`` ``DeepseekV4SWACache``),
``v1/kv_cache_interface.py`` (``MLAAttentionSpec`` / ``SlidingWindowMLASpec`` storage blocks and
alignment, ``UniformTypeKVCacheSpecs``) and ``v1/core/kv_cache_utils.py``
(``group_and_unify_kv_cache_specs``, ``_get_kv_cache_groups_uniform_groups``,
``_approximate_gcd``, ``_get_kv_cache_config_packed``, ``_max_memory_usage_bytes_from_groups``,
``get_max_concurrency_for_kv_cache_config``).

Per layer, in registration order: a ratio-4 layer's indexer key cache and indexer compressor
state; the sliding-window cache; a compressed layer's MLA cache and compressor state. The
``fp8_ds_mla`` latent row is 584 bytes per token (448 fp8 values, 64 bf16 rope values, 8 scale
bytes), the indexer row ``index_head_dim + index_head_dim / 128 * 4`` bytes; every page is
rounded up to 576 bytes. FlashInfer's TRT-LLM-gen layers (``FLASHINFER_MLA_SPARSE_DSV4`` named off SM
12.x) store the plain row instead (:class:`RowLayout`): ``head_dim`` values of the KV cache dtype,
every page rounded up to 512 bytes.
"""

from __future__ import annotations

import math
from collections import Counter
from collections.abc import Callable
from dataclasses import dataclass, replace
from typing import Any

from dryboot.errors import InputError
from dryboot.vllm import kv_cache_layout
from dryboot.vllm.backends import AttentionBackend
from dryboot.vllm.config.hf import DeepseekV4Caches, ModelGeometry, extra_of
from dryboot.vllm.config.resolve import EngineConfig
from dryboot.vllm.distributed import pp_refused, pp_stage_ranges
from dryboot.vllm.dtypes import KVQuantMode, dtype_bytes
from dryboot.vllm.engine_args import EngineArgs
from dryboot.vllm.kv_cache_interface import AttentionSpec, LayerKind
from dryboot.vllm.kv_cache_utils.capacity import (
    CannotAutoFit,
    Capacity,
    NotEnoughMemory,
    auto_fit_result,
    override_line,
    size_lines,
)
from dryboot.vllm.kv_cache_utils.groups import KVCacheGroup
from dryboot.vllm.platforms import cdiv

#: bytes per token of the ``fp8_ds_mla`` latent row of a 512-wide head (``attention.py``)
FP8_DS_MLA_ROW = 584
#: page alignment of every DeepSeek-V4 spec with the ``fp8_ds_mla`` layout (bytes)
ALIGNMENT = 576
#: page alignment of every DeepSeek-V4 spec with the plain row (bytes; vLLM's ``576 if fp8_ds_mla else 512``)
PLAIN_ALIGNMENT = 512


@dataclass(frozen=True)
class RowLayout:
    """How the compressed MLA and sliding-window caches store a token, and every spec's page
    alignment (``_resolve_dsv4_kv_cache_dtype`` with the layer class's ``use_fp8_ds_mla_layout``).

    :param kv_cache_dtype: the caches' dtype as vLLM names it (``fp8_ds_mla``; plain: ``fp8`` or
        ``bfloat16``).
    :param torch_dtype: their element type (``uint8`` for ``fp8_ds_mla``; plain: ``float8_e4m3fn``
        or ``bfloat16``).
    :param row_bytes: bytes a token (584 for ``fp8_ds_mla``; plain: ``head_dim`` x the element size).
    :param alignment: every spec's page alignment (bytes; 576, plain 512).
    """

    kv_cache_dtype: str = "fp8_ds_mla"
    torch_dtype: str = "uint8"
    row_bytes: int = FP8_DS_MLA_ROW
    alignment: int = ALIGNMENT

    @property
    def plain(self) -> bool:
        """Whether this is the plain row (FlashInfer's TRT-LLM-gen layers)."""
        return self.kv_cache_dtype != "fp8_ds_mla"


#: the ``fp8_ds_mla`` layout (FlashMLA's layers, FlashInfer's SM120 ones)
DS_MLA = RowLayout()


def plain_layout(kv_cache_dtype: str, head_dim: int) -> RowLayout:
    """The plain row of a ``head_dim``-wide latent for ``--kv-cache-dtype`` (``auto`` / ``bfloat16``:
    bfloat16, 2 bytes a value; ``fp8``: ``float8_e4m3fn``, 1 byte), pages aligned to
    :data:`PLAIN_ALIGNMENT` (``_resolve_dsv4_kv_cache_dtype``'s plain-row branch)."""
    if kv_cache_dtype.startswith("fp8"):
        return RowLayout("fp8", "float8_e4m3fn", head_dim, PLAIN_ALIGNMENT)
    return RowLayout("bfloat16", "bfloat16", 2 * head_dim, PLAIN_ALIGNMENT)


#: tokens per block of the sliding-window cache (``DeepseekV4SWACache``)
SWA_BLOCK = 64
#: the sparse SWA backend's default cache block (tokens; "Setting kv cache block size to 256")
DEFAULT_BLOCK = 256
#: releases whose packed KV cache dryboot models, each checked against that release's engine
#: start (``tests/fidelity/data/deepseek_v4/recorded-<release>.json``); every other is refused
PLANNED_RELEASES = frozenset({"0.27.1", "0.28.0", "0.29.0", "0.30.0", "0.31.0", "0.32.0", "0.33.0"})
#: releases that pack the groups only under a block-outermost KV cache layout
#: (``_get_packed_kv_cache_groups``), which one backend asks for: DeepSeek-V4's indexer
#: (``DeepseekV4IndexerBackend.supported_kv_cache_layouts``, ratio-4 layers only). Without it
#: ``resolve_kv_cache_layout`` keeps the layer-compact default and ``unify_kv_cache_spec_page_size``
#: refuses the MLA pages (NotImplementedError).
LAYOUT_PACKED = frozenset({"0.29.0", "0.30.0", "0.31.0", "0.32.0", "0.33.0"})
#: releases whose one-request need is the widest group's bytes per block times the pages of every
#: group (``_max_memory_usage_bytes_from_groups``: ``_pool_bytes_per_block x total_blocks``),
#: that put a hidden-state cache in a group of its own after the packed ones
#: (``get_kv_cache_groups``); before them the need reserves the most layer tuples of any group in
#: every group, and the hidden-state cache joins the MLA group
POOLED = frozenset({"0.29.0", "0.30.0", "0.31.0", "0.32.0", "0.33.0"})
#: releases that round the block stride up to a multiple of every layer's kernel-block page
#: (``_get_kv_cache_bytes_per_block``, ``get_block_stride_alignment``): the MLA and indexer
#: caches' backends take :data:`KERNEL_BLOCK`-token kernel blocks only, so a larger cache block
#: aligns to their pages at that block (``customize_attention_spec``: ``MultipleOf(256)``)
KERNEL_ALIGNED = frozenset({"0.32.0", "0.33.0"})
#: the DeepSeek-V4 sparse MLA and indexer backends' kernel block (tokens)
KERNEL_BLOCK = 256


@dataclass(frozen=True)
class PoolRules:
    """How a release sizes the packed pool.

    :param pooled: :data:`POOLED` (the one-request need, the hidden-state group).
    :param reserve_null_block: the memory checks and auto-fit see each worker's budget less one
        block (``check_memory``: the block pool's null block).
    :param kernel_aligned: :data:`KERNEL_ALIGNED` (the block stride).
    :param kv_memory_wording: the auto-fit line names the KV cache memory the checks see
        (``VersionRules.autofit_log_kv_memory``).
    :param split_log: the size and the concurrency are two log lines (vLLM 0.27.1,
        ``VersionRules.capacity_log_split``).
    """

    pooled: bool = False
    reserve_null_block: bool = False
    kernel_aligned: bool = False
    kv_memory_wording: bool = False
    split_log: bool = False


def pool_rules(cfg: EngineConfig) -> PoolRules:
    """The :class:`PoolRules` of the release ``cfg`` plans."""
    version = cfg.rules.version
    return PoolRules(
        version in POOLED,
        cfg.rules.reserve_null_block,
        version in KERNEL_ALIGNED,
        cfg.rules.autofit_log_kv_memory,
        cfg.rules.capacity_log_split,
    )


#: releases whose ``_resolve_dsv4_kv_cache_dtype`` (``models/deepseek_v4/attention.py``) asserts an
#: fp8 KV cache for the ``fp8_ds_mla`` layout, ``auto`` included (AssertionError); 0.30.0-0.33.0
#: take ``auto`` as fp8 there and serve other dtypes on plain-row backends
FP8_ASSERTED = frozenset({"0.27.1", "0.28.0", "0.29.0"})
#: cache blocks verified on every planned release (below 128 a ratio-128 layer's storage block
#: is 0 tokens: ZeroDivisionError)
VERIFIED_BLOCKS = frozenset({128, 256, 512})
#: the backend vLLM logs choosing the block (its kernel blocks are not modelled: not used here)
SPARSE_SWA = AttentionBackend("DEEPSEEK_SPARSE_SWA", (), False, is_mla=True)
BACKEND = SPARSE_SWA.name
#: the indexer's and the compressors' backends, as the block line names them
INDEXER_BACKEND = "DEEPSEEK_V4_INDEXER"
COMPRESSOR_BACKEND = "CompressorBackend"


def attention_name(capability: tuple[int, int], layout: RowLayout = DS_MLA) -> str:
    """The DeepSeek-V4 attention backend the layers take on a GPU of ``capability``
    (``models/deepseek_v4/nvidia/model.py`` ``_select_dsv4_attn_cls``, no FlashMLA / FlashInfer
    name given): FlashInfer's SM120 layers on SM 12.x (``DeepseekV4FlashInferSM120Attention``),
    FlashMLA's elsewhere. Both store the ``fp8_ds_mla`` row, so the caches are the same. The plain
    ``layout``: FlashInfer's TRT-LLM-gen layers (``DeepseekV4FlashInferMLAAttention``, named), the
    same backend name."""
    return "FLASHINFER_MLA_SPARSE_DSV4" if capability[0] == 12 or layout.plain else "FLASHMLA_SPARSE_DSV4"


def block_log_backends(ratios: tuple[int, ...], capability: tuple[int, int], layout: RowLayout = DS_MLA) -> list[str]:
    """The backends vLLM 0.31+ names choosing the block ("for A/B/C backend(s).", before 0.31 the
    first alone: "for A backend."), in the order the
    layers register them (``update_block_size_for_backend``): a ratio-4 layer's indexer and its
    compressor, then every layer's sliding-window cache and attention, then the layer's own
    compressor (ratio 4 or 128; recorded: a pipeline stage starting at a ratio-128 layer names the
    compressor after the attention); the MTP layer's add none the backbone lacks; each name once."""
    out: list[str] = []
    for r in ratios:
        first = [INDEXER_BACKEND, COMPRESSOR_BACKEND] if r == 4 else []
        last = [COMPRESSOR_BACKEND] if r > 1 else []
        for name in (*first, BACKEND, attention_name(capability, layout), *last):
            if name not in out:
                out.append(name)
    return out


def packed_caches(model: ModelGeometry) -> DeepseekV4Caches:
    """What ``model``'s layers cache, for a model whose family lays them out packed.

    :raises InputError: a model without packed caches (its family's ``kv_cache_layout`` is wrong).
    """
    caches = extra_of(model, DeepseekV4Caches)
    if caches is None:
        raise InputError("--model", model.source, f"{model.architecture}: no packed KV caches to plan")
    return caches


def dsv4_spec(
    kind: LayerKind, block: int, head: int, content: int, dtype: str, row_dtype: str = "fp8_ds_mla", **fields: Any
) -> AttentionSpec:
    """One DeepSeek-V4-style cache: a single head of ``head`` values and ``content`` bytes a row in
    ``dtype`` (``row_dtype`` rows for the compressed MLA and sliding-window caches, ``fp8_ds_mla``
    unless given), not indexed by block stride, on :data:`BACKEND` with :data:`ALIGNMENT` unless
    ``fields`` say otherwise (``backend``, ``alignment``, ``compress_ratio``, ``sliding_window``,
    ``block_stride_alignment``)."""
    base: dict[str, Any] = {"backend": BACKEND, "alignment": ALIGNMENT}
    return AttentionSpec(
        layer_kind=kind,
        block_size=block,
        num_kv_heads=1,
        head_size=head,
        head_size_v=0,
        torch_dtype=dtype,
        kv_cache_dtype=row_dtype if kind in (LayerKind.DSV4_MLA, LayerKind.DSV4_SWA) else dtype,
        quant_mode=KVQuantMode.NONE,
        content_bytes=content,
        indexes_kv_by_block_stride=False,
        **{**base, **fields},
    )


def _spec(
    kind: LayerKind,
    block: int,
    head: int,
    content: int,
    dtype: str,
    *,
    ratio: int = 1,
    window: int | None = None,
    layout: RowLayout = DS_MLA,
) -> AttentionSpec:
    return dsv4_spec(
        kind,
        block,
        head,
        content,
        dtype,
        layout.kv_cache_dtype,
        compress_ratio=ratio,
        sliding_window=window,
        alignment=layout.alignment,
    )


def layer_specs(
    caches: DeepseekV4Caches,
    block: int,
    num_mtp: int,
    layout: RowLayout = DS_MLA,
    mla_layout: RowLayout | None = None,
) -> list[tuple[str, AttentionSpec]]:
    """(layer name, spec) of every cache, in registration order; the ``num_mtp`` MTP layers
    (ratio 1: a sliding-window cache only) follow the backbone. The sliding-window caches store
    ``layout``'s row, the compressed MLA caches ``mla_layout``'s (``None``: ``layout``); every page is
    aligned to its layout's alignment.

    Compressed MLA (``DeepseekV4Attention.get_kv_cache_spec``): ``block`` tokens, stored
    ``block / ratio``. Indexer key cache: the same at ratio 4, one uint8 head of
    ``index_head_dim + index_head_dim / 128 * 4`` bytes. Sliding window: 64-token blocks,
    ``sliding_window`` tokens. Compressor state (``CompressorStateCache``): float32
    ``2 * coff * head`` per token (``coff`` 2 at ratio 4, else 1), blocks of 4 (ratio 4) or 8
    (ratio 128) tokens, a window of ``coff * ratio`` tokens.
    """
    out: list[tuple[str, AttentionSpec]] = []
    ratios = (*caches.compress_ratios, *(1,) * num_mtp)
    index_row = caches.index_head_dim + caches.index_head_dim // 128 * 4

    def state(ratio: int, head: int) -> AttentionSpec:
        coff = 2 if ratio == 4 else 1
        width = 2 * coff * head
        return _spec(
            LayerKind.DSV4_COMPRESSOR,
            4 if ratio == 4 else 8,
            width,
            width * 4,
            "float32",
            window=coff * ratio,
            layout=layout,
        )

    for i, ratio in enumerate(ratios):
        p = f"model.layers.{i}.attn"
        if ratio == 4:
            out.append(
                (
                    f"{p}.indexer.k_cache",
                    _spec(LayerKind.DSV4_INDEXER, block, index_row, index_row, "uint8", ratio=4, layout=layout),
                )
            )
            out.append((f"{p}.indexer.compressor.state_cache", state(4, caches.index_head_dim)))
        out.append(
            (
                f"{p}.swa_cache",
                _spec(
                    LayerKind.DSV4_SWA,
                    SWA_BLOCK,
                    caches.head_dim,
                    layout.row_bytes,
                    layout.torch_dtype,
                    window=caches.sliding_window,
                    layout=layout,
                ),
            )
        )
        if ratio > 1:
            m = mla_layout or layout
            out.append(
                (
                    p,
                    _spec(
                        LayerKind.DSV4_MLA, block, caches.head_dim, m.row_bytes, m.torch_dtype, ratio=ratio, layout=m
                    ),
                )
            )
            out.append((f"{p}.compressor.state_cache", state(ratio, caches.head_dim)))
    return out


def approximate_gcd(values: list[int], lower_bound: int) -> int:
    """The divisor ``d`` in ``[lower_bound, max(values)]`` whose rounding up of every value adds
    the least padding, the larger on ties (``_approximate_gcd``)."""
    best, best_pad = lower_bound, None
    for d in range(max(1, lower_bound), max(values) + 1):
        pad = sum((d - x % d) % d for x in values)
        if best_pad is None or pad < best_pad or (pad == best_pad and d > best):
            best, best_pad = d, pad
    return best


def _tuples(pages: list[int]) -> int:
    """Layer tuples of a uniform-type spec: the count of its most common page."""
    return Counter(pages).most_common(1)[0][1]


@dataclass(frozen=True)
class PackedGroups:
    """The KV cache groups (``KVCacheGroupSpec``; each a ``UniformTypeKVCacheSpecs``), first the
    MLA group.

    :param groups: member layer names per group, in vLLM's order.
    """

    groups: tuple[tuple[str, ...], ...]


def group_specs(specs: dict[str, AttentionSpec], hidden_apart: bool = False) -> PackedGroups:
    """``group_and_unify_kv_cache_specs`` then ``_get_kv_cache_groups_uniform_groups``: the MLA
    specs in one group; the sliding-window specs bucketed by (block, window), each bucket split
    into ``cdiv(layers per page size, T)`` groups of layer tuples (tuple ``j`` of group ``i``:
    ``tuples[i::groups]``), ``T`` the approximate GCD of every bucket's tuple count, at least the
    MLA group's. ``hidden_apart`` (:data:`POOLED` releases): a hidden-state cache is not an MLA
    member but a group of its own, last.

    :raises ValueError: a bucket whose page sizes hold different layer counts (vLLM asserts).
    """
    hidden = [n for n, s in specs.items() if hidden_apart and s.layer_kind is LayerKind.HIDDEN_STATE]
    mla = [n for n, s in specs.items() if s.sliding_window is None and n not in hidden]
    buckets: dict[tuple[int, int], list[str]] = {}
    for n, s in specs.items():
        if s.sliding_window is not None:
            buckets.setdefault((s.block_size, s.sliding_window), []).append(n)
    counts = [_tuples([specs[n].page_size_bytes for n in mla])]
    counts += [_tuples([specs[n].page_size_bytes for n in b]) for b in buckets.values()]
    t = approximate_gcd(counts, counts[0])
    groups: list[tuple[str, ...]] = [tuple(mla)]
    for members in buckets.values():
        by_page: dict[int, list[str]] = {}
        for n in members:
            by_page.setdefault(specs[n].page_size_bytes, []).append(n)
        sizes = {len(v) for v in by_page.values()}
        if len(sizes) != 1:
            raise ValueError(
                f"a (block, window) bucket holds page sizes with different layer counts {sorted(sizes)}: vLLM's "
                "_get_kv_cache_groups_uniform_groups asserts they match"
            )
        per = sizes.pop()
        k = cdiv(per, t)
        layer_tuples = list(zip(*by_page.values(), strict=True))
        for i in range(k):
            groups.append(tuple(n for tup in layer_tuples[i::k] for n in tup))
    groups.extend((n,) for n in hidden)
    return PackedGroups(tuple(groups))


def blocks_per_request(spec: AttentionSpec, max_model_len: int, in_flight: int) -> int:
    """Pages one ``max_model_len`` request holds of a spec: ``cdiv(len, block)`` (MLA), or
    ``cdiv(min(window - 1 + in_flight, len), block) + 1`` (sliding window MLA)."""
    if spec.sliding_window is None:
        return cdiv(max_model_len, spec.block_size)
    return cdiv(min(spec.sliding_window - 1 + in_flight, max_model_len), spec.block_size) + 1


def _group_pages(names: tuple[str, ...], specs: dict[str, AttentionSpec], length: int, in_flight: int) -> int:
    return max(blocks_per_request(specs[n], length, in_flight) for n in names)


def worker_groups(groups: PackedGroups, worker: frozenset[str] | None) -> list[tuple[tuple[str, ...], tuple[str, ...]]]:
    """(the worker's layers, the layers its spec covers) per group
    (``_project_kv_cache_groups_to_worker``: a group without layers on the worker keeps the
    whole group's spec)."""
    out = []
    for g in groups.groups:
        own = g if worker is None else tuple(n for n in g if n in worker)
        out.append((own, own or g))
    return out


def stride_alignment(spec: AttentionSpec) -> int:
    """What a :data:`KERNEL_ALIGNED` release rounds the block stride to for ``spec`` (bytes): an
    MLA or indexer cache's page at ``gcd(KERNEL_BLOCK, block)`` tokens when that is not its
    block, else 1 (``KVCacheSpec.get_block_stride_alignment``)."""
    if spec.layer_kind not in (LayerKind.DSV4_MLA, LayerKind.DSV4_INDEXER):
        return 1
    kernel = math.gcd(KERNEL_BLOCK, spec.block_size)
    return 1 if kernel == spec.block_size else replace(spec, block_size=kernel).page_size_bytes


def block_stride(
    projected: list[tuple[tuple[str, ...], tuple[str, ...]]],
    specs: dict[str, AttentionSpec],
    rules: PoolRules = PoolRules(),
) -> int:
    """Bytes of one block of the packed slab: the largest group's pages on this worker
    (``_get_packed_kv_cache_layout``), rounded up to the lcm of its layers'
    :func:`stride_alignment` under ``rules.kernel_aligned``."""
    widest = max(sum(specs[n].page_size_bytes for n in own) for own, _ in projected)
    if not rules.kernel_aligned:
        return widest
    align = math.lcm(*(stride_alignment(specs[n]) for own, _ in projected for n in own))
    return cdiv(widest, align) * align


def needed_bytes(
    projected: list[tuple[tuple[str, ...], tuple[str, ...]]],
    specs: dict[str, AttentionSpec],
    length: int,
    in_flight: int,
    rules: PoolRules = PoolRules(),
) -> int:
    """What one ``length``-token request needs on a worker (``_max_memory_usage_bytes_from_groups``,
    the all-uniform-type case): every group reserves the most layer tuples of any group times its
    pages times the MLA group's distinct page sizes summed; under ``rules.pooled``: the worker's
    bytes per block (:func:`block_stride`) times every group's pages."""
    if rules.pooled:
        pages = sum(_group_pages(cover, specs, length, in_flight) for _, cover in projected)
        return block_stride(projected, specs, rules) * pages
    tuple_bytes = sum({specs[n].page_size_bytes for n in projected[0][1]})
    most = max(_tuples([specs[n].page_size_bytes for n in cover]) for _, cover in projected)
    return sum(most * _group_pages(cover, specs, length, in_flight) * tuple_bytes for _, cover in projected)


def estimate_max_model_len(
    projected: list[tuple[tuple[str, ...], tuple[str, ...]]],
    specs: dict[str, AttentionSpec],
    upper: int,
    in_flight: int,
    available: int,
    rules: PoolRules = PoolRules(),
) -> int:
    """The largest length in ``[1, upper]`` whose request fits, 0 if none (binary search,
    ``_estimate_max_model_len_from_groups``; ``rules``: :func:`needed_bytes`)."""

    def fits(length: int) -> bool:
        return needed_bytes(projected, specs, length, in_flight, rules) <= available

    if not fits(1):
        return 0
    left, right, result = 1, upper, 1
    while left <= right:
        mid = (left + right) // 2
        if fits(mid):
            result, left = mid, mid + 1
        else:
            right = mid - 1
    return result


@dataclass(frozen=True)
class PackedCapacity:
    """Blocks and concurrency of the packed slab.

    :param block_stride: bytes per block (stage 0's slab).
    :param num_blocks: blocks (the fewest of any worker, or ``--num-gpu-blocks-override``).
    :param blocks_per_request: per group, pages one request holds.
    :param request_bytes: stage 0's need for one ``max_model_len`` request.
    """

    block_stride: int
    num_blocks: int
    blocks_per_request: tuple[int, ...]
    max_concurrency: float
    kv_cache_size_tokens: int
    max_model_len: int
    request_bytes: int
    available_bytes: int
    log: tuple[str, ...]


def auto_fit(
    groups: PackedGroups,
    specs: dict[str, AttentionSpec],
    workers: list[frozenset[str] | None],
    upper: int,
    in_flight: int,
    available: int,
    override: int | None,
    rules: PoolRules = PoolRules(),
) -> tuple[int, str]:
    """``--max-model-len -1``: the largest length every worker fits (``_auto_fit_max_model_len``;
    ``rules.reserve_null_block``: in each worker's budget less one block, ``check_memory``).

    :raises CannotAutoFit: not even one token fits.
    """
    fitted, limiting = upper, None
    for w in workers:
        projected = worker_groups(groups, w)
        stride = block_stride(projected, specs, rules)
        budget = override * stride if override is not None else available
        if rules.reserve_null_block:
            budget -= stride
        limiting = budget if limiting is None else limiting  # the first worker's, unless one limits
        worker_max = estimate_max_model_len(projected, specs, upper, in_flight, budget, rules)
        if worker_max < fitted:
            fitted, limiting = worker_max, budget
    assert limiting is not None
    if fitted <= 0:
        raise CannotAutoFit(0, limiting, 1, 0)
    return auto_fit_result(upper, fitted, limiting, rules.kv_memory_wording)


def capacity(
    groups: PackedGroups,
    specs: dict[str, AttentionSpec],
    workers: list[frozenset[str] | None],
    max_model_len: int,
    in_flight: int,
    available: int,
    override: int | None,
    rules: PoolRules = PoolRules(),
) -> PackedCapacity:
    """``get_kv_cache_configs`` on the packed groups: each worker checks one request fits its
    budget (``--num-gpu-blocks-override`` blocks of its slab, when given; ``rules.reserve_null_block``:
    less one block, the pool's null block) and counts ``budget // block stride`` blocks; the
    engine keeps the fewest. Concurrency is
    ``num_blocks / sum of pages per request`` over stage 0's groups
    (``get_max_concurrency_for_kv_cache_config``), tokens ``int(concurrency * max_model_len)``.

    :raises NotEnoughMemory: one request does not fit a worker.
    """
    log: list[str] = []
    counts, needs, strides = [], [], []
    for w in workers:
        projected = worker_groups(groups, w)
        stride = block_stride(projected, specs, rules)
        budget = available
        if override is not None:
            log.append(override_line(available // stride, override))
            budget = override * stride
        need = needed_bytes(projected, specs, max_model_len, in_flight, rules)
        check = budget - stride if rules.reserve_null_block else budget
        if check <= 0 or need > check:
            est = estimate_max_model_len(projected, specs, max_model_len, in_flight, check, rules) if check > 0 else 0
            raise NotEnoughMemory(need, check, max_model_len, est)
        counts.append(budget // stride)
        needs.append(need)
        strides.append(stride)
    num_blocks = override if override is not None else min(counts)
    stage0 = worker_groups(groups, workers[0])
    per = tuple(blocks_per_request(specs[cover[0]], max_model_len, in_flight) for _, cover in stage0)
    concurrency = num_blocks / sum(per)
    tokens = int(concurrency * max_model_len)
    log.extend(size_lines(tokens, max_model_len, concurrency, rules.split_log))
    return PackedCapacity(
        block_stride=strides[0],
        num_blocks=num_blocks,
        blocks_per_request=per,
        max_concurrency=concurrency,
        kv_cache_size_tokens=tokens,
        max_model_len=max_model_len,
        request_bytes=needs[0],
        available_bytes=available if override is None else override * strides[0],
        log=tuple(log),
    )


def kv_groups(groups: PackedGroups, specs: dict[str, AttentionSpec]) -> tuple[KVCacheGroup, ...]:
    """The groups as dryboot reports them: each with its first layer's spec (the scheduler's
    ``generate_scheduler_kv_cache_config``) and every layer's page."""
    return tuple(
        KVCacheGroup(g, specs[g[0]], uniform_type=True, page_sizes=tuple(specs[n].page_size_bytes for n in g))
        for g in groups.groups
    )


#: the backend name that, named off SM 12.x, gives the layers FlashInfer's TRT-LLM-gen attention
#: (``_select_dsv4_attn_cls``: ``DeepseekV4FlashInferMLAAttention``, ``use_fp8_ds_mla_layout = False``)
FLASHINFER_NAMED = "FLASHINFER_MLA_SPARSE_DSV4"
#: the ``--kv-cache-dtype`` values the plain row was recorded with (``auto`` is bfloat16 there)
PLAIN_KV_DTYPES = frozenset({"auto", "bfloat16", "fp8"})
#: releases whose MTP layer does not see the named backend (the draft's attention config): it builds
#: FlashMLA's layers, whose ``_resolve_dsv4_kv_cache_dtype`` writes ``fp8_ds_mla`` onto the shared cache
#: config, so every spec that reads the cache config (sliding window, indexer, compressor state) takes
#: the ``fp8_ds_mla`` row and alignment while the target's compressed MLA caches keep the plain row
#: (their own dtype, resolved as they were built); recorded on a B200 with an fp8 cache
MTP_FLASHMLA = frozenset({"0.27.1"})


def mla_layout(cfg: EngineConfig) -> RowLayout:
    """The row the target's compressed MLA caches store (:class:`RowLayout`; each layer's own resolved
    dtype): the plain row of the KV cache dtype where :data:`FLASHINFER_NAMED` is named off SM 12.x
    (the family's ``engine_args`` keeps the name only there), else ``fp8_ds_mla``."""
    args = cfg.args
    if args.attention_backend == FLASHINFER_NAMED and args.device.capability[0] != 12:
        caches = packed_caches(cfg.model)
        return plain_layout(cfg.kv_cache_dtype, caches.head_dim)
    return DS_MLA


def row_layout(cfg: EngineConfig) -> RowLayout:
    """The row of the caches that read the cache config (sliding window, indexer, compressor
    state, the MTP layer's): :func:`mla_layout`'s, but ``fp8_ds_mla`` on :data:`MTP_FLASHMLA` with
    the MTP drafter."""
    layout = mla_layout(cfg)
    if cfg.rules.version in MTP_FLASHMLA and cfg.drafter is not None and cfg.drafter.method == "mtp":
        return DS_MLA
    return layout


def check_engine_config(cfg: EngineConfig, log: list[str]) -> tuple[int, RowLayout, RowLayout]:
    """(the cache block the packed layers take: ``--block-size`` or :data:`DEFAULT_BLOCK`, the
    sparse SWA backend's; the row of the caches that read the cache config: :func:`row_layout`; the
    row of the compressed MLA caches: :func:`mla_layout`), after what the release planned refuses
    for them or was not verified; logs vLLM's block-size line when the block is the default.

    :raises InputError: for the ``fp8_ds_mla`` row, a KV cache dtype other than fp8 on a release
        that asserts it (:data:`FP8_ASSERTED`, named with the release planned), or other than fp8
        and ``auto`` on a later one (its ValueError); for the plain row, one outside
        :data:`PLAIN_KV_DTYPES`, a drafter other than MTP, and other than fp8 with both rows
        (:data:`MTP_FLASHMLA`) (not verified); a release outside :data:`PLANNED_RELEASES`; no ratio-4
        layer on :data:`LAYOUT_PACKED`
        (vLLM's NotImplementedError); a block below 128 tokens (its ZeroDivisionError); another
        block or a named backend (not verified).
    """
    model, args, version = cfg.model, cfg.args, cfg.rules.version
    dtype = cfg.kv_cache_dtype
    layout, mla = row_layout(cfg), mla_layout(cfg)
    mixed = mla.plain and not layout.plain
    if mla.plain and (dtype not in PLAIN_KV_DTYPES or (mixed and dtype != "fp8")):
        raise InputError(
            "--kv-cache-dtype",
            args.kv_cache_dtype,
            f"{model.architecture}: FlashInfer's plain-row DeepSeek-V4 caches are verified with "
            f"{'fp8 beside the MTP layer' if mixed else ', '.join(sorted(PLAIN_KV_DTYPES))} only",
        )
    if mla.plain and cfg.drafter is not None and cfg.drafter.method != "mtp":
        raise InputError(
            "--speculative-config",
            cfg.drafter.method,
            f"{model.architecture}: FlashInfer's plain-row DeepSeek-V4 caches are verified with the MTP drafter only",
        )
    if not dtype.startswith("fp8") and version in FP8_ASSERTED and not mla.plain:
        raise InputError(
            "--kv-cache-dtype",
            args.kv_cache_dtype,
            f"{model.architecture}: vLLM {version} builds it only with an fp8 KV cache (AssertionError: "
            f"DeepseekV4 fp8_ds_mla layout only supports fp8 kv-cache, got {dtype})",
        )
    if version not in PLANNED_RELEASES:
        raise InputError(
            "--vllm-version",
            version,
            f"{model.architecture}'s KV cache on vLLM {version} is not modelled: verified against vLLM "
            f"{', '.join(sorted(PLANNED_RELEASES))} only",
        )
    if not dtype.startswith("fp8") and dtype != "auto" and not mla.plain:
        raise InputError(
            "--kv-cache-dtype",
            args.kv_cache_dtype,
            f"{model.architecture}: vLLM {version} builds its fp8_ds_mla layout only with an fp8 KV cache (ValueError: "
            f"DeepseekV4 fp8_ds_mla layout only supports fp8 kv-cache, got {dtype}); auto is taken as fp8",
        )
    caches = packed_caches(model)
    ratios = caches.compress_ratios
    if version in LAYOUT_PACKED and 4 not in ratios:
        first = next(i for i, r in enumerate(ratios) if r > 1)
        raise InputError(
            "--model",
            model.source,
            f"{model.architecture}: no layer of compress ratio 4, so no indexer asks for a block-outermost KV "
            f"cache layout and vLLM {version} does not pack the groups (NotImplementedError: Layer "
            f"model.layers.{first}.attn: page size is not divisible by the maximum page size and cannot be padded)",
        )
    block = args.block_size or DEFAULT_BLOCK
    if block < 128:
        raise InputError(
            "--block-size",
            str(block),
            f"{model.architecture}: a ratio-128 layer stores block / 128 = 0 tokens per block: vLLM {version} fails "
            "planning the KV cache (ZeroDivisionError)",
        )
    if block not in VERIFIED_BLOCKS:
        raise InputError(
            "--block-size",
            str(block),
            f"{model.architecture}: blocks {sorted(VERIFIED_BLOCKS)} are verified against vLLM {version}; this one "
            "is not modelled",
        )
    for flag, value in (
        ("--attention-backend", None if mla.plain else args.attention_backend),
        ("--prefix-match-unit", args.prefix_match_unit),
    ):
        if value is not None:
            raise InputError(flag, str(value), f"{model.architecture}: not verified against vLLM {version}")
    if args.block_size is None:
        cap = args.device.capability

        def names_of(r: range) -> list[str]:
            return block_log_backends(tuple(ratios[i] for i in r), cap, mla)

        log.extend(stage_block_lines(cfg, len(ratios), block, names_of))
    return block, layout, mla


def stage_block_lines(
    cfg: EngineConfig, n_layers: int, block: int, names_of: Callable[[range], list[str]]
) -> list[str]:
    """The block-size lines of a model whose family names the backends itself: every pipeline stage's
    worker logs one over the ``n_layers`` decoder layers it builds (``names_of``: the backends those
    layers register, in order; each line once), the ``extract_hidden_states`` drafter's cache
    (``CACHE_ONLY_ATTN``) registering after the last stage's; 0.31+ names every backend, earlier
    releases the first registered (``update_block_size_for_backend``)."""
    args = cfg.args
    pp = args.pipeline_parallel_size
    ranges = [range(n_layers)] if pp <= 1 else pp_stage_ranges(n_layers, pp, args.pp_layer_partition)
    hidden = cfg.drafter is not None and cfg.drafter.method == "extract_hidden_states"
    out: list[str] = []
    for r in ranges:
        names = names_of(r)
        if hidden and cfg.drafter_backend is not None and r is ranges[-1]:
            names = [*names, cfg.drafter_backend.name]
        if cfg.rules.block_size_log_backends:
            line = f"Setting kv cache block size to {block} for {'/'.join(names)} backend(s)."
        else:
            line = f"Setting kv cache block size to {block} for {names[0]} backend."
        if line not in out:
            out.append(line)
    return out


def layer_backend(name: str, capability: tuple[int, int], mla: RowLayout) -> str:
    """The backend the layer ``name`` (:func:`layer_specs`'s) registers on a GPU of ``capability``, its
    compressed MLA caches storing ``mla``'s row: the indexer's key cache :data:`INDEXER_BACKEND`, a
    compressor's state :data:`COMPRESSOR_BACKEND`, the sliding-window cache :data:`BACKEND`, the
    compressed MLA cache :func:`attention_name`'s."""
    if name.endswith(".indexer.k_cache"):
        return INDEXER_BACKEND
    if name.endswith(".state_cache"):
        return COMPRESSOR_BACKEND
    if name.endswith(".swa_cache"):
        return BACKEND
    return attention_name(capability, mla)


def check_stage_layouts(cfg: EngineConfig, stages: list[frozenset[str]] | None) -> None:
    """Under pipeline parallelism every worker reports the KV cache layouts its backends support and
    the engine core asserts they agree from 0.29.0
    (:func:`dryboot.vllm.kv_cache_layout.check_stage_layouts`, ``resolve_kv_cache_layout``): a stage
    holding a ratio-4 layer (its indexer asks for the block-outermost layouts) and one without
    report different lists.

    :raises InputError: stages that differ so (vLLM's AssertionError).
    """
    if stages is None:
        return
    capability, mla = cfg.args.device.capability, mla_layout(cfg)
    backends = [{layer_backend(n, capability, mla) for n in st} for st in stages]
    without = [s for s, b in enumerate(backends) if INDEXER_BACKEND not in b]
    kv_cache_layout.check_stage_layouts(
        backends,
        capability,
        cfg.rules,
        refusal=f"{cfg.model.architecture}: stage(s) {without} hold no layer of compress ratio 4, the others do: "
        f"their workers report different KV cache layouts and vLLM {cfg.rules.version} refuses (AssertionError: "
        "Workers disagree on supported KV cache layouts)",
    )


def drafter_layers(cfg: EngineConfig, block: int) -> tuple[int, list[tuple[str, AttentionSpec]]]:
    """(MTP layers, hidden-state cache layers) the drafter adds: the checkpoint's one MTP layer
    (``"method": "mtp"``), or the ``extract_hidden_states`` cache (``HiddenStateCacheSpec``, an
    ``MLAAttentionSpec``: it joins the MLA group, unaligned).

    :raises InputError: any other drafter, or a drafter under pipeline parallelism (MTP is run on
        the last stage where the release runs drafters under it: ``pp_draft_models``).
    """
    model, args, d = cfg.model, cfg.args, cfg.drafter
    if d is None:
        return 0, []
    if args.pipeline_parallel_size > 1 and (d.method != "mtp" or not cfg.rules.pp_draft_models):
        raise pp_refused(args.pipeline_parallel_size, f"{d.method} drafter")
    if d.method == "extract_hidden_states":
        heads, width = d.model.num_kv_heads, d.model.head_dim
        dtype = cfg.drafter_model_dtype or cfg.model_dtype
        names = d.model.naming.layer_names
        name = names[0] if names else f"cache_only_layers.{model.num_decoder_layers}"
        spec = AttentionSpec(
            layer_kind=LayerKind.HIDDEN_STATE,
            block_size=block,
            num_kv_heads=heads,
            head_size=width,
            head_size_v=0,
            torch_dtype=dtype,
            kv_cache_dtype=dtype,
            quant_mode=KVQuantMode.NONE,
            content_bytes=width * dtype_bytes(dtype),
            backend=BACKEND,
            indexes_kv_by_block_stride=False,
        )
        return 0, [(name, spec)]
    if d.method != "mtp" or model.mtp.num_mtp_layers != 1:
        raise InputError(
            "--speculative-config",
            d.method,
            f"{model.architecture}: only its one MTP layer (num_nextn_predict_layers 1, method mtp) and the "
            "extract_hidden_states cache are modelled",
        )
    return 1, []


def stage_layers(
    pairs: list[tuple[str, AttentionSpec]], num_layers: int, num_mtp: int, args: EngineArgs
) -> list[frozenset[str]] | None:
    """The layer names each pipeline stage's worker builds (``get_pp_indices``; the MTP layer on
    the last stage), or ``None`` without pipeline parallelism.

    :raises InputError: a stage that holds no layer.
    """
    if args.pipeline_parallel_size <= 1:
        return None
    ranges = pp_stage_ranges(num_layers, args.pipeline_parallel_size, args.pp_layer_partition)
    last = len(ranges) - 1
    stages = []
    for s, r in enumerate(ranges):
        held = set(r) | ({*range(num_layers, num_layers + num_mtp)} if s == last else set())
        stages.append(frozenset(name for name, _ in pairs if int(name.split(".")[2]) in held))
    if any(not st for st in stages):
        raise InputError("--pipeline-parallel-size", str(args.pipeline_parallel_size), "a stage holds no layer")
    return stages


def engine_capacity(
    cfg: EngineConfig,
    groups: PackedGroups,
    specs: dict[str, AttentionSpec],
    workers: list[frozenset[str] | None],
    log: list[str],
) -> tuple[Capacity | None, NotEnoughMemory | None, int]:
    """(the engine's capacity, or ``None`` without a KV budget; the memory refusal, if any; the max
    model length, auto-fitted under ``--max-model-len -1``) for the packed groups on each
    pipeline stage's ``workers``; vLLM's log lines go to ``log``."""
    args = cfg.args
    in_flight = args.resolved_max_num_batched_tokens() * cfg.max_concurrent_batches
    max_model_len = cfg.max_model_len
    available = args.available_kv_bytes()
    rules, override = pool_rules(cfg), args.num_gpu_blocks_override
    result: Capacity | None = None
    memory_error: NotEnoughMemory | None = None
    if available is not None:
        try:
            if args.max_model_len == -1:
                max_model_len, line = auto_fit(
                    groups, specs, workers, max_model_len, in_flight, available, override, rules
                )
                log.append(line)
            cap = capacity(groups, specs, workers, max_model_len, in_flight, available, override, rules)
            log.extend(cap.log)
            result = Capacity(
                available_bytes=cap.available_bytes,
                page_size_bytes=cap.block_stride,
                group_size=1,
                num_blocks=cap.num_blocks,
                blocks_per_request=cap.blocks_per_request,
                max_concurrency=cap.max_concurrency,
                kv_cache_size_tokens=cap.kv_cache_size_tokens,
                max_model_len=max_model_len,
                request_bytes=cap.request_bytes,
                log=cap.log,
            )
        except NotEnoughMemory as exc:
            memory_error = exc
    return result, memory_error, max_model_len

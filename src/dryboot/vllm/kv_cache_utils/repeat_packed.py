"""vLLM 0.33.0's packing of mixed page sizes by repeat pattern (0.32.0's ``kv_cache_utils.py`` has the
same rule: Qwen4-Exp's QSA caches take it there too), and Step5's caches that take it.

The rule (policy ``"repeat-packed"``, the planner :data:`RELEASES` reach through a family's
``kv_cache_layout`` hook, as DeepSeek-V4's reach :mod:`dryboot.vllm.kv_cache_utils.packed`) is
dryboot's own statement of what 0.33.0's ``v1/core/kv_cache_planning.py``
``_get_packed_kv_cache_groups`` decides under a block-outermost KV cache layout when the layers'
pages differ:

1. **buckets**: each layer joins the first bucket whose layers it shares a type with (vLLM's
   ``UniformTypeKVCacheSpecs.is_uniform_type``: one block size; full attention with full
   attention, a sliding window with the same window, a circular buffer with any circular
   buffer), else opens one; buckets keep first-appearance order.
2. **repeats**: a bucket whose page sizes each hold the same number of layers is *balanced*; that
   number is its repeats (the most layers of one page size, whatever the balance).
3. **repeats per group**: the balanced buckets that mix page sizes stay whole, so the most repeats
   of any of them is a floor; the repeats per group is the approximate GCD
   (:func:`~dryboot.vllm.kv_cache_utils.packed.approximate_gcd`) of every balanced bucket's
   repeats, at least that floor. No balanced mixed bucket: no split (``None``).
4. **splits**: a balanced bucket splits into ``cdiv(repeats, repeats per group)`` groups (group
   ``i`` takes the pattern repeats ``i, i + n, ...``); any other, one group.
5. **ring caps**: a *state* bucket (a circular buffer, a Mamba state, or a sliding window when there
   is no split) may not widen the block: the
   block must already hold the widest group of any bucket (a state bucket counted at one layer a
   group), and a state bucket splits into at least ``cdiv(layers, max(that width // its page, 1))``
   groups.

The pool's bytes per block are the widest group's pages summed, rounded up to the lcm of every
layer's block-stride alignment (``_get_kv_cache_bytes_per_block``); one request holds, per group,
the most pages any of its layers needs (``max_memory_usage_pages``), and the pool serves
``blocks / pages per request`` of them (``get_max_concurrency_for_kv_cache_config``).

Step5 (``vllm/models/step5/nvidia``, vLLM 0.33.0) with ``sparse_config`` enabled: each
``full_attention`` layer is a DSA layer (``STEP5_DSA``: a ``FullAttentionSpec`` of the layer's KV
heads x 192 x K and V, its block stride aligned to ``MultipleOf(8)`` tokens), keeping a region
summary cache (``Step5SparseSummaryCacheLayer``: a ``FullAttentionSpec`` of one 256-byte uint8
summary per 8 tokens, ``tokens_per_state=8``) and a CSA tail ring (``Step5CSATailRing``: a
``CircularBufferSpec`` the size of the layer's KV page, 1024-byte rows, stride alignment 1024);
its sliding layers are plain ``FLASH_ATTN`` sliding-window layers of the same KV heads.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from dataclasses import dataclass

from dryboot.errors import InputError
from dryboot.vllm.backends import AttentionBackend
from dryboot.vllm.config.hf import FamilyExtra, ModelGeometry, extra_of
from dryboot.vllm.config.resolve import EngineConfig
from dryboot.vllm.distributed import pp_stage_ranges
from dryboot.vllm.dtypes import KVQuantMode
from dryboot.vllm.engine_args import EngineArgs
from dryboot.vllm.kv_cache_interface import AttentionSpec, LayerKind, LayerSpec, MambaSpec
from dryboot.vllm.kv_cache_utils.capacity import (
    CannotAutoFit,
    Capacity,
    NotEnoughMemory,
    auto_fit_result,
    override_line,
    size_lines,
)
from dryboot.vllm.kv_cache_utils.groups import KVCacheGroup
from dryboot.vllm.kv_cache_utils.packed import approximate_gcd
from dryboot.vllm.platforms import cdiv

#: releases whose repeat-pattern packing dryboot models (each checked against its engine start)
RELEASES = frozenset({"0.33.0"})
#: the policy's name: the ``EngineConfig.kv_cache_layout`` a family's hook answers to reach it
POLICY = "repeat-packed"


# --------------------------------------------------------------------------- the rule


#: spec kinds vLLM buckets as one type (``uniform_type_base_spec``: ``MLAAttentionSpec`` is a
#: ``FullAttentionSpec``)
_BASE_KIND = {"mla": "full"}


def uniform_key(spec: LayerSpec) -> tuple[int, str, int | None, int, tuple[int, int, bool]]:
    """What two layers must share to sit in one bucket (``is_uniform_type``): the block, the
    spec family (full attention with MLA, sliding, circular buffer, Mamba), a sliding layer's
    window, and a Mamba state's page, speculative and checkpoint pages and TP replication
    (``MambaSpec.is_uniform_with_collection``)."""
    if isinstance(spec, MambaSpec):
        pages = (spec.num_speculative_blocks, spec.num_prefill_checkpoint_blocks, spec.tp_replicated)
        return spec.block_size, spec.kind, None, spec.page_size_bytes, pages
    return spec.block_size, _BASE_KIND.get(spec.kind, spec.kind), spec.sliding_window, 0, (0, 0, False)


def is_state(spec: LayerSpec) -> bool:
    """A spec that keeps states a request (a circular buffer, GLM-5.3-Flash's 0.30.0 / 0.31.0 tail ring, a Mamba
    state), which a block may cap."""
    return spec.kind in ("circular_buffer", "kpool_tail", "mamba")


@dataclass(frozen=True)
class Bucket:
    """One uniform-type bucket.

    :param by_page: page bytes -> member layers, first appearance first.
    :param balanced: every page size holds the same number of layers.
    :param repeats: the most layers of one page size.
    :param state: its first layer is a state spec (:func:`is_state`).
    :param sliding: its first layer is a sliding window.
    """

    names: tuple[str, ...]
    by_page: tuple[tuple[int, tuple[str, ...]], ...]
    balanced: bool
    repeats: int
    state: bool
    sliding: bool

    def widest(self, n: int) -> int:
        """Page bytes of the widest of ``n`` groups the bucket splits into."""
        return sum(cdiv(len(names), n) * page for page, names in self.by_page)


def buckets(specs: Mapping[str, LayerSpec]) -> list[Bucket]:
    """The uniform-type buckets of ``specs`` (module order), each a :class:`Bucket`."""
    members: dict[tuple[int, str, int | None, int, tuple[int, int, bool]], list[str]] = {}
    for name, spec in specs.items():
        members.setdefault(uniform_key(spec), []).append(name)
    out = []
    for names in members.values():
        by_page: dict[int, list[str]] = {}
        for n in names:
            by_page.setdefault(specs[n].page_size_bytes, []).append(n)
        counts = {len(v) for v in by_page.values()}
        first = specs[names[0]]
        out.append(
            Bucket(
                names=tuple(names),
                by_page=tuple((p, tuple(v)) for p, v in by_page.items()),
                balanced=len(counts) == 1,
                repeats=max(counts),
                state=is_state(first),
                sliding=isinstance(first, AttentionSpec) and first.sliding_window is not None,
            )
        )
    return out


def repeats_per_group(bs: list[Bucket]) -> int | None:
    """The pattern repeats each group covers (rule 3), ``None`` when no balanced bucket mixes
    page sizes."""
    floor = max((b.repeats for b in bs if b.balanced and len(b.by_page) > 1), default=0)
    if not floor:
        return None
    return approximate_gcd([b.repeats for b in bs if b.balanced], floor)


def group_specs(specs: Mapping[str, LayerSpec]) -> tuple[tuple[str, ...], ...]:
    """The KV cache groups (member layers, vLLM's order) of ``specs`` whose pages differ (rules
    1-5 of the module docstring)."""
    bs = buckets(specs)
    r = repeats_per_group(bs)

    def split(b: Bucket) -> int:
        return cdiv(b.repeats, r) if b.balanced and r is not None else 1

    def capped(b: Bucket) -> bool:
        return b.state or (r is None and b.sliding)

    anchor = max(b.widest(len(b.names) if capped(b) else split(b)) for b in bs)
    groups: list[tuple[str, ...]] = []
    for b in bs:
        n = split(b)
        if capped(b):
            fits = max(anchor // b.by_page[0][0], 1)
            n = max(n, cdiv(len(b.names), fits))
        if n == 1:
            groups.append(b.names)
            continue
        repeats = list(zip(*(names for _, names in b.by_page), strict=False))
        groups.extend(tuple(x for rep in repeats[i::n] for x in rep) for i in range(n))
    return tuple(groups)


# --------------------------------------------------------------------------- a family's layers


@dataclass(frozen=True)
class PackedLayers:
    """What a family hands the repeat-packed planner (its ``packed_layers`` hook): every cache
    layer's spec, how vLLM groups them, and what the plan reports.

    :param specs: layer name -> spec, module order (a hidden-state cache included).
    :param groups: the KV cache groups (member layers, vLLM's order).
    :param stages: the layers each pipeline stage's worker builds, ``None`` without pipeline
        parallelism.
    :param block: the cache block (tokens), the scheduler's and the hash block too.
    :param backend: the backend the plan names.
    :param kv_cache_dtype: the KV cache dtype the plan names.
    :param num_target: the target model's cache layers (the rest are the drafter's).
    :param hash_block: the prefix-cache hash block, the engine's global block, where it is not
        ``block`` (DeepSeek-V4.1 whose sliding-window caches take part in prefix caching: the smallest
        block of the groups that do); ``None``: ``block``.
    """

    specs: dict[str, AttentionSpec]
    groups: tuple[tuple[str, ...], ...]
    stages: list[frozenset[str]] | None
    block: int
    backend: AttentionBackend
    kv_cache_dtype: str
    num_target: int
    hash_block: int | None = None


# --------------------------------------------------------------------------- the pool


def stride_alignment(spec: LayerSpec) -> int:
    """Bytes a block stride must be a multiple of for ``spec`` (``get_block_stride_alignment``):
    a ``MultipleOf(k)`` alignment (``block_stride_alignment`` k tokens) is the page at
    ``gcd(k, block)`` tokens, or 1 when that is the block; a tail ring's is its 1024-byte row; a
    Mamba state's 1. A sparse MLA cache read as flat rows (``align_blocks_to_rows``: one row's
    bytes) is ``block_stride_alignment`` 1: its page at one token is that row; a byte alignment
    (``block_stride_bytes``) is itself."""
    if isinstance(spec, MambaSpec):
        return 1
    if spec.block_stride_bytes is not None:
        return spec.block_stride_bytes
    if spec.layer_kind is LayerKind.STEP5_RING:
        return RING_ROW  # Step5CSATailRing: block_stride_alignment=1024 bytes
    if spec.block_stride_alignment is not None:
        kernel = math.gcd(spec.block_stride_alignment, spec.block_size)
        return 1 if kernel == spec.block_size else spec.with_block_size(kernel).page_size_bytes
    return 1


def bytes_per_block(groups: tuple[tuple[str, ...], ...], specs: Mapping[str, LayerSpec]) -> int:
    """The pool's bytes per block: the widest group's pages summed, rounded up to the lcm of
    every layer's :func:`stride_alignment` (``_get_kv_cache_bytes_per_block``, block-outermost);
    a group may be empty (none of its layers on this worker)."""
    widest = max(sum(specs[n].page_size_bytes for n in g) for g in groups)
    align = math.lcm(*(stride_alignment(specs[n]) for g in groups for n in g))
    return cdiv(widest, align) * align


def layer_pages(spec: LayerSpec, length: int, in_flight: int) -> int:
    """Pages one ``length``-token request holds of ``spec``: a circular buffer 1, a Mamba state
    ``2 + speculative + checkpoint blocks`` in ``align`` mode, else ``1 + speculative blocks``
    (``MambaSpec.max_memory_usage_bytes``), a sliding window
    ``cdiv(min(window - 1 + in_flight, length), block) + 1``, else ``cdiv(length, block)``
    (``max_memory_usage_bytes`` over the page)."""
    if isinstance(spec, MambaSpec):
        if spec.mamba_cache_mode == "align":
            return 2 + spec.num_speculative_blocks + spec.num_prefill_checkpoint_blocks
        return 1 + spec.num_speculative_blocks
    if is_state(spec):
        return 1
    if spec.sliding_window is not None:
        return cdiv(min(spec.sliding_window - 1 + in_flight, length), spec.block_size) + 1
    return cdiv(length, spec.block_size)


def request_pages(
    groups: tuple[tuple[str, ...], ...], specs: Mapping[str, LayerSpec], length: int, in_flight: int
) -> tuple[int, ...]:
    """Per group, the most pages any of its layers holds for one request."""
    return tuple(max(layer_pages(specs[n], length, in_flight) for n in g) for g in groups)


@dataclass(frozen=True)
class Pool:
    """The packed pool of one worker (a pipeline stage): the engine's ``groups`` over ``specs``,
    of which the worker holds ``own`` (``None``: every layer; ``_project_kv_cache_groups_to_worker``:
    a group keeps its spec where the worker holds none of its layers).

    :param in_flight: tokens a sliding window holds beyond itself (batched tokens x batches).
    :param reserve_null_block: the checks see the budget less one block (the null block).
    :param kv_memory_wording: the auto-fit line names the KV cache memory.
    """

    groups: tuple[tuple[str, ...], ...]
    specs: Mapping[str, LayerSpec]
    in_flight: int
    reserve_null_block: bool
    kv_memory_wording: bool
    own: frozenset[str] | None = None

    @property
    def held(self) -> tuple[tuple[str, ...], ...]:
        """Each group's layers on this worker."""
        if self.own is None:
            return self.groups
        return tuple(tuple(n for n in g if n in self.own) for g in self.groups)

    @property
    def stride(self) -> int:
        return bytes_per_block(self.held, self.specs)

    def pages(self, length: int) -> tuple[int, ...]:
        """Per group, the pages one ``length``-token request holds (the group's spec)."""
        return request_pages(self.groups, self.specs, length, self.in_flight)

    def need(self, length: int) -> int:
        """Bytes one ``length``-token request needs (``_max_memory_usage_bytes_from_groups``)."""
        return self.stride * sum(self.pages(length))

    def longest(self, upper: int, budget: int) -> int:
        """The longest length in ``[1, upper]`` that fits ``budget``, 0 if none (binary search)."""
        if self.need(1) > budget:
            return 0
        lo, hi, best = 1, upper, 1
        while lo <= hi:
            mid = (lo + hi) // 2
            if self.need(mid) <= budget:
                best, lo = mid, mid + 1
            else:
                hi = mid - 1
        return best

    def check_budget(self, budget: int) -> int:
        return budget - self.stride if self.reserve_null_block else budget


def auto_fit(pools: list[Pool], upper: int, available: int, override: int | None) -> tuple[int, str]:
    """``--max-model-len -1``: the longest length every worker fits, and vLLM's line
    (``_auto_fit_max_model_len``).

    :raises CannotAutoFit: not even one token fits."""
    fitted, limiting = upper, None
    for pool in pools:
        budget = pool.check_budget(override * pool.stride if override is not None else available)
        limiting = budget if limiting is None else limiting
        got = pool.longest(upper, budget) if budget > 0 else 0
        if got < fitted:
            fitted, limiting = got, budget
    assert limiting is not None
    if fitted <= 0:
        raise CannotAutoFit(0, limiting, 1, 0)
    return auto_fit_result(upper, fitted, limiting, pools[0].kv_memory_wording)


def capacity(pools: list[Pool], length: int, available: int, override: int | None) -> Capacity:
    """Blocks, concurrency and tokens at ``length`` (``get_kv_cache_configs``): each worker checks
    one request fits its budget and counts ``budget // its stride`` blocks; the engine keeps the
    fewest; concurrency is blocks over stage 0's pages a request.

    :raises NotEnoughMemory: one request does not fit a worker."""
    log, counts = [], []
    for pool in pools:
        stride, budget = pool.stride, available
        if override is not None:
            log.append(override_line(available // stride, override))
            budget = override * stride
        need, check = pool.need(length), pool.check_budget(budget)
        if check <= 0 or need > check:
            raise NotEnoughMemory(need, check, length, pool.longest(length, check) if check > 0 else 0)
        counts.append(budget // stride)
    first = pools[0]
    num_blocks = override if override is not None else min(counts)
    per = first.pages(length)
    concurrency = num_blocks / sum(per)
    tokens = int(concurrency * length)
    log.extend(size_lines(tokens, length, concurrency))
    return Capacity(
        available_bytes=available if override is None else override * first.stride,
        page_size_bytes=first.stride,
        group_size=1,
        num_blocks=num_blocks,
        blocks_per_request=per,
        max_concurrency=concurrency,
        kv_cache_size_tokens=tokens,
        max_model_len=length,
        request_bytes=first.need(length),
        log=tuple(log),
    )


def stage_layers(
    specs: dict[str, AttentionSpec], caches: Step5Caches, args: EngineArgs, prefix: str = "model.layers"
) -> list[frozenset[str]] | None:
    """The cache layers each pipeline stage's worker builds (``get_pp_indices``), or ``None``
    without pipeline parallelism. ``prefix``: the decoder layers' module path (see
    :func:`step5_specs`).

    :raises InputError: a stage without a cache layer, or stages of which some hold a DSA layer
        and some none: their workers report different KV cache layouts (vLLM's AssertionError).
    """
    pp = args.pipeline_parallel_size
    if pp <= 1:
        return None
    ranges = pp_stage_ranges(len(caches.dsa_layers), pp, args.pp_layer_partition)
    stages = [
        frozenset(n for n in specs if n.startswith(f"{prefix}.") and int(n[len(prefix) + 1 :].split(".")[0]) in r)
        for r in ranges
    ]
    if any(not st for st in stages):
        raise InputError("--pipeline-parallel-size", str(pp), "a stage holds no layer")
    dsa = [any(caches.dsa_layers[i] for i in r) for r in ranges]
    if any(dsa) and not all(dsa):
        raise InputError(
            "--pipeline-parallel-size",
            str(pp),
            f"stage(s) {[s for s, d in enumerate(dsa) if not d]} hold no DSA layer, the others do: their workers "
            "report different KV cache layouts (AssertionError: Workers disagree on supported KV cache layouts)",
        )
    return stages


def kv_groups(groups: tuple[tuple[str, ...], ...], specs: Mapping[str, LayerSpec]) -> tuple[KVCacheGroup, ...]:
    """The groups as dryboot reports them: each with its first layer's spec and every page."""
    return tuple(
        KVCacheGroup(g, specs[g[0]], uniform_type=True, page_sizes=tuple(specs[n].page_size_bytes for n in g))
        for g in groups
    )


# --------------------------------------------------------------------------- Step5's caches

#: bytes of one CSA tail ring row (``csa_tail_ring.py``: 512 bfloat16 values)
RING_ROW = 1024
#: rows a tail ring needs without speculative tokens (``Step5CSATailRing.required_rows``)
RING_ROWS = 7
#: tokens one region summary covers, and its bytes (``Step5SparseSummaryCacheLayer``)
SUMMARY_TOKENS = 8
SUMMARY_BYTES = 256
#: the DSA backend's stride alignment (``Step5DSAAttentionBackend.customize_spec``: MultipleOf(8))
DSA_ALIGN_TOKENS = 8
#: the DSA layers' head size (``Step5DSAAttentionBackend.supports_head_size``)
DSA_HEAD = 192
#: cache blocks verified against vLLM 0.33.0's engine start (``FLASH_ATTN``'s 16 by default)
VERIFIED_BLOCKS = frozenset({16, 32, 64, 128, 256})
DEFAULT_BLOCK = 16
#: the KV cache dtypes the DSA backend takes (``supported_kv_cache_dtypes``), and their bytes
KV_DTYPES = {"auto": 2, "bfloat16": 2, "fp8": 1, "fp8_e4m3": 1}
DSA = AttentionBackend("STEP5_DSA", (), False)
#: the GPUs the DSA backend runs on (``Step5DSAAttentionBackend.supports_compute_capability``)
DSA_CAPABILITIES = frozenset({(9, 0), (10, 0), (10, 3)})


@dataclass(frozen=True)
class Step5Caches(FamilyExtra):
    """What a Step5 config with ``sparse_config`` enabled caches (``vllm/models/step5/nvidia``).

    :param dsa_layers: per decoder layer, whether it is a DSA layer (a ``full_attention`` one;
        the others slide).
    :param num_kv_heads: ``num_attention_groups`` (every layer's KV heads before TP).
    :param head_dim: every layer's head size (192).
    :param sliding_window: the sliding layers' window (tokens).
    :param num_attention_heads: the DSA layers' query heads (before TP).
    :param index_tp_size: ``sparse_config.index_tp_size`` (the indexer's provider groups).
    :param indexer_heads: ``sparse_config.sparse_indexer_num_heads``.
    """

    dsa_layers: tuple[bool, ...]
    num_kv_heads: int
    head_dim: int
    sliding_window: int | None
    num_attention_heads: int
    index_tp_size: int
    indexer_heads: int


def step5_caches(model: ModelGeometry) -> Step5Caches:
    """:raises InputError: a model without Step5's DSA caches."""
    caches = extra_of(model, Step5Caches)
    if caches is None:
        raise InputError("--model", model.source, f"{model.architecture}: no Step5 DSA caches to plan")
    return caches


def step5_specs(
    caches: Step5Caches, block: int, kv_heads: int, kv_bytes: int, prefix: str = "model.layers"
) -> dict[str, AttentionSpec]:
    """(layer name -> spec) of every cache, module order: per DSA layer its KV
    (``<prefix>.<i>.self_attn.attn``), its summary cache (``.sparse_summary_cache``) and its
    tail ring (``.csa_tail_ring``); per sliding layer its KV. ``kv_heads`` per rank, ``kv_bytes``
    per element; ``prefix`` the decoder layers' module path (``model.layers``; the multimodal
    wrapper's ``language_model.model.layers``)."""
    content = 2 * caches.head_dim * kv_bytes
    dtype = "fp8_e4m3" if kv_bytes == 1 else "bfloat16"
    out: dict[str, AttentionSpec] = {}

    def kv(kind: LayerKind, window: int | None, backend: str, align: int | None) -> AttentionSpec:
        return AttentionSpec(
            layer_kind=kind,
            block_size=block,
            num_kv_heads=kv_heads,
            head_size=caches.head_dim,
            head_size_v=caches.head_dim,
            torch_dtype="bfloat16",
            kv_cache_dtype=dtype,
            quant_mode=KVQuantMode.NONE,
            content_bytes=content,
            backend=backend,
            indexes_kv_by_block_stride=False,
            sliding_window=window,
            block_stride_alignment=align,
        )

    for i, dsa in enumerate(caches.dsa_layers):
        p = f"{prefix}.{i}.self_attn.attn"
        if not dsa:
            out[p] = kv(LayerKind.SLIDING, caches.sliding_window, "FLASH_ATTN", None)
            continue
        main = kv(LayerKind.FULL, None, DSA.name, DSA_ALIGN_TOKENS)
        out[p] = main
        out[f"{p}.sparse_summary_cache"] = AttentionSpec(
            layer_kind=LayerKind.STEP5_SUMMARY,
            block_size=block,
            num_kv_heads=1,
            head_size=SUMMARY_BYTES,
            head_size_v=0,
            torch_dtype="uint8",
            kv_cache_dtype="uint8",
            quant_mode=KVQuantMode.NONE,
            content_bytes=SUMMARY_BYTES,
            backend="STEP5_CSA_SUMMARY",
            indexes_kv_by_block_stride=False,
            compress_ratio=SUMMARY_TOKENS,
        )
        page = main.page_size_bytes
        out[f"{p}.csa_tail_ring"] = AttentionSpec(
            layer_kind=LayerKind.STEP5_RING,
            block_size=block,
            num_kv_heads=1,
            head_size=page // (block * 2),
            head_size_v=0,
            torch_dtype="bfloat16",
            kv_cache_dtype="bfloat16",
            quant_mode=KVQuantMode.NONE,
            content_bytes=page // block,
            backend="STEP5_CSA_TAIL_RING",
            indexes_kv_by_block_stride=False,
            spec_name="circular_buffer",
        )
    return out


def check_engine_config(cfg: EngineConfig, log: list[str]) -> tuple[int, int]:
    """(the cache block, KV bytes per element) Step5's DSA layers take on the release planned.

    :raises InputError: a release outside :data:`RELEASES`; a model dtype other than bfloat16 or
        a GPU outside :data:`DSA_CAPABILITIES` (vLLM's NotImplementedError); a KV cache dtype the
        DSA backend refuses; a block that is not a multiple of 8 (vLLM's ValueError) or not verified;
        what was not verified (decode context parallelism, a drafter but the hidden-state
        cache, ``--prefix-match-unit``).
    """
    model, args, version = cfg.model, cfg.args, cfg.rules.version
    arch = model.architecture
    if version not in RELEASES:
        raise InputError(
            "--vllm-version",
            version,
            f"{arch}'s DSA caches on vLLM {version} are not modelled: verified against vLLM "
            f"{', '.join(sorted(RELEASES))} only",
        )
    if cfg.model_dtype != "bfloat16":
        raise InputError(
            "--dtype",
            cfg.model_dtype,
            f"{arch}: NotImplementedError: Step5 DSA kernels require bfloat16 activations, got {cfg.model_dtype}.",
        )
    capability = tuple(args.device.capability)
    if capability not in DSA_CAPABILITIES:
        raise InputError(
            "--gpu",
            args.device.name,
            f"{arch}: NotImplementedError: Step5 DSA requires SM90, SM100 or SM103; got {capability}.",
        )
    dtype = args.kv_cache_dtype or "auto"
    if dtype not in KV_DTYPES:
        raise InputError(
            "--kv-cache-dtype",
            dtype,
            f"{arch}: the STEP5_DSA backend takes a KV cache of {', '.join(KV_DTYPES)} only",
        )
    block = args.block_size or DEFAULT_BLOCK
    if block % SUMMARY_TOKENS:
        raise InputError(
            "--block-size", str(block), f"{arch}: ValueError: Step5 KV blocks must align to eight-token regions"
        )
    if block not in VERIFIED_BLOCKS:
        raise InputError(
            "--block-size",
            str(block),
            f"{arch}: blocks {sorted(VERIFIED_BLOCKS)} are verified against vLLM {version}; this one is not modelled",
        )
    for flag, value, bad in (
        (
            "--decode-context-parallel-size",
            args.decode_context_parallel_size,
            args.decode_context_parallel_size > 1,
        ),
        (
            "--speculative-config",
            args.speculative_method,
            cfg.drafter is not None and cfg.drafter.method != "extract_hidden_states",
        ),
        ("--prefix-match-unit", args.prefix_match_unit, args.prefix_match_unit is not None),
    ):
        if bad:
            raise InputError(
                flag,
                str(value),
                f"{arch}: its DSA caches (summary caches, tail rings) under this flag are not verified against "
                f"vLLM {version}",
            )
    return block, KV_DTYPES[dtype]


def check_ring(specs: dict[str, AttentionSpec], num_speculative: int = 0) -> None:
    """:raises InputError: a KV page that holds fewer than ``7 + num_speculative`` ring rows, or
    not a whole number of them (``Step5CSATailRing.get_kv_cache_spec``'s ValueError)."""
    for s in specs.values():
        if s.layer_kind is not LayerKind.STEP5_RING:
            continue
        page, rows = s.page_size_bytes, RING_ROWS + num_speculative
        if page % RING_ROW or page // RING_ROW < rows:
            raise InputError(
                "--block-size",
                str(s.block_size),
                f"ValueError: Step5 CSA tail ring needs {rows} rows of {RING_ROW} bytes in one {page}-byte KV page; "
                "increase --block-size.",
            )
        return

"""Blocks, "GPU KV cache size", concurrency and the memory one request needs.

Mirrors vLLM 0.28.0's ``vllm/v1/core/kv_cache_utils.py``: ``get_num_blocks`` /
``get_kv_cache_config_from_groups`` (``available // page // group_size``, or
``available // sum(pages)`` for a uniform-type group), ``get_max_concurrency_for_kv_cache_config``
(blocks per request = sum over groups of ``cdiv(max_memory_usage_bytes, page)``),
``update_kv_cache_capacity`` (the "GPU KV cache size" line), ``_max_memory_usage_bytes_from_groups``
and ``_estimate_max_model_len_from_groups`` / ``_check_enough_kv_cache_memory`` (the
ValueError with the estimated maximum model length), and each spec's
``max_memory_usage_bytes`` in ``vllm/v1/kv_cache_interface.py``.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass

from dryboot.vllm.kv_cache_interface import LayerKind, LayerSpec, MambaSpec
from dryboot.vllm.kv_cache_utils.groups import Grouping
from dryboot.vllm.platforms import cdiv

GIB = 1 << 30


@dataclass(frozen=True)
class SchedulerLimits:
    """The engine flags that bound one request's blocks.

    :param max_model_len: tokens.
    :param max_num_batched_tokens: tokens per scheduler step.
    :param max_concurrent_batches: 2 with async scheduling at PP=1, else PP size.
    :param mamba2_align_pages: pages a Mamba2 ``align`` group holds (version switch).
    :param gdn_align_pages: pages a Gated DeltaNet ``align`` group holds (3 on 0.33: one
        FlashInfer prefill checkpoint).
    :param decode_context_parallel_size: ``-dcp``: a full-attention cache holds
        ``cdiv(max_model_len, dcp)`` of a request's tokens per rank.
    """

    max_model_len: int
    max_num_batched_tokens: int
    max_concurrent_batches: int
    mamba2_align_pages: int = 2
    gdn_align_pages: int = 2
    decode_context_parallel_size: int = 1

    @property
    def max_in_flight_tokens(self) -> int:
        """``max_concurrent_batches * max_num_batched_tokens`` (``VllmConfig.max_in_flight_tokens``)."""
        return self.max_concurrent_batches * self.max_num_batched_tokens


def blocks_per_request(spec: LayerSpec, limits: SchedulerLimits, max_model_len: int | None = None) -> int:
    """Blocks one request at ``max_model_len`` holds in one layer of ``spec``.

    Full attention / MLA: ``cdiv(len, block)``, with ``-dcp`` ``cdiv(cdiv(len, dcp), block)``
    (``FullAttentionSpec.max_memory_usage_bytes``); sliding window:
    ``cdiv(min(window - 1 + in_flight, len), block) + 1``; chunked local:
    ``cdiv(min(chunk + in_flight, len), block)``; mamba ``none``: ``1 + spec``,
    ``align``: ``2 + spec`` (Mamba2 from 0.32: 3 + spec) ``+ checkpoint`` (the prefill checkpoint
    blocks, ``MambaSpec.max_memory_usage_bytes``), ``all``: ``cdiv(len, block) + spec``;
    cross-attention: ``cdiv(max_num_batched_tokens, block)`` whatever the length
    (``CrossAttentionSpec.max_memory_usage_bytes`` reads ``max_num_encoder_input_tokens``, which
    ``SchedulerConfig`` sets to ``max_num_batched_tokens``).
    """
    length = limits.max_model_len if max_model_len is None else max_model_len
    if isinstance(spec, MambaSpec):
        if spec.mamba_cache_mode == "all":
            return cdiv(length, spec.block_size) + spec.num_speculative_blocks
        if spec.mamba_cache_mode == "align":
            base = {LayerKind.MAMBA2: limits.mamba2_align_pages, LayerKind.GDN: limits.gdn_align_pages}.get(
                spec.layer_kind, 2
            )
            return base + spec.num_speculative_blocks + spec.num_prefill_checkpoint_blocks
        return 1 + spec.num_speculative_blocks
    if spec.layer_kind.is_sliding_window:
        assert spec.sliding_window is not None
        tokens = min(spec.sliding_window - 1 + limits.max_in_flight_tokens, length)
        return cdiv(tokens, spec.block_size) + 1
    if spec.layer_kind is LayerKind.CROSS:
        return cdiv(limits.max_num_batched_tokens, spec.block_size)
    if spec.layer_kind is LayerKind.CHUNKED:
        assert spec.attention_chunk_size is not None
        tokens = min(spec.attention_chunk_size + limits.max_in_flight_tokens, length)
        return cdiv(tokens, spec.block_size)
    return cdiv(cdiv(length, limits.decode_context_parallel_size), spec.block_size)


@dataclass(frozen=True)
class Capacity:
    """What vLLM computes from the groups and the KV budget.

    :param page_size_bytes: the unified page (for a uniform-type group, the sum of pages).
    :param group_size: layers per group (tensors in the pool).
    :param num_blocks: blocks in the pool (after ``--num-gpu-blocks-override``).
    :param blocks_per_request: per group, in group order.
    :param max_concurrency: ``num_blocks / sum(blocks_per_request)``.
    :param kv_cache_size_tokens: ``int(max_concurrency * max_model_len)``.
    :param request_bytes: bytes one ``max_model_len`` request needs.
    """

    available_bytes: int
    page_size_bytes: int
    group_size: int
    num_blocks: int
    blocks_per_request: tuple[int, ...]
    max_concurrency: float
    kv_cache_size_tokens: int
    max_model_len: int
    request_bytes: int
    log: tuple[str, ...]

    @property
    def total_blocks_per_request(self) -> int:
        return sum(self.blocks_per_request)


@dataclass(frozen=True)
class WorkerShare:
    """What one worker (pipeline stage) holds of the KV cache groups
    (``_project_kv_cache_groups_to_worker``): every group, with only this worker's layers.

    :param group_size: layers of its fullest projected group (tensors in its pool).
    :param pages: a uniform-type group: its own layers' pages (bytes), module order.
    """

    group_size: int
    pages: tuple[int, ...] = ()


def worker_shares(
    grouping: Grouping, stages: Sequence[frozenset[str]] | None = None, *, allow_empty: bool = False
) -> list[WorkerShare]:
    """One :class:`WorkerShare` per pipeline stage (``stages``: each stage's layer names;
    ``None``: one worker holding every layer). ``allow_empty``: a stage of no layer is kept as a
    share of ``group_size`` 0 (vLLM's auto-fit and memory check skip such a worker; building its
    KV cache config fails later: :func:`empty_stage_message`).

    :raises ValueError: a stage holds no layer of any group, unless ``allow_empty`` (vLLM asserts
        ``group_size > 0`` in ``get_kv_cache_config_from_groups``).
    """
    if stages is None:
        if grouping.path == "uniform-type":
            return [WorkerShare(1, grouping.uniform_pages)]
        return [WorkerShare(max(run.largest_group for run in grouping.runs))]
    shares = []
    for i, names in enumerate(stages):
        if grouping.path == "uniform-type":
            pages = tuple(
                p for n, p in zip(grouping.runs[0].members, grouping.uniform_pages, strict=True) if n in names
            )
            share = WorkerShare(1 if pages else 0, pages)
        else:
            share = WorkerShare(max(sum(1 for n in g.layer_names if n in names) for g in grouping.groups))
        if share.group_size == 0 and not allow_empty:
            raise ValueError(empty_stage_message(i))
        shares.append(share)
    return shares


def empty_stage_message(stage: int) -> str:
    """Why vLLM fails on pipeline stage ``stage`` holding no KV cache layer: once the other
    stages passed the auto-fit and the memory check (which skip it), building its KV cache config
    divides by its empty group (0.27-0.28 assert ``group_size > 0`` first)."""
    return (
        f"pipeline stage {stage} holds no KV cache layer (vLLM asserts group_size > 0, an AssertionError, or "
        "divides by the empty group, a ZeroDivisionError)"
    )


def pool_bytes_per_block(grouping: Grouping, share: WorkerShare | None = None) -> int:
    """Bytes one block takes across one worker's pool (``_pool_bytes_per_block``): the page
    times its fullest group's layers, or the sum of its pages of a uniform-type group, rounded up
    to ``grouping.pool_alignment`` (0.31.0's ``_get_kv_cache_bytes_per_block``)."""
    share = share or worker_shares(grouping)[0]
    pool = sum(share.pages) if grouping.path == "uniform-type" else grouping.page_size_bytes * share.group_size
    return cdiv(pool, grouping.pool_alignment) * grouping.pool_alignment


def _run_blocks(grouping: Grouping, limits: SchedulerLimits, length: int) -> list[int]:
    """Blocks per request of one group of each run."""
    return [blocks_per_request(run.spec, limits, length) for run in grouping.runs]


def request_bytes(grouping: Grouping, limits: SchedulerLimits, length: int, share: WorkerShare | None = None) -> int:
    """Bytes one request of ``length`` tokens needs on one worker
    (``_max_memory_usage_bytes_from_groups``): ``group_size * page * sum of every group's
    blocks``, or for a uniform-type group each of its layers' blocks times its own page."""
    if not grouping.runs:
        return 0
    share = share or worker_shares(grouping)[0]
    blocks = _run_blocks(grouping, limits, length)
    if grouping.path == "uniform-type":
        return blocks[0] * pool_bytes_per_block(grouping, share)
    return pool_bytes_per_block(grouping, share) * sum(
        b * run.num_groups for b, run in zip(blocks, grouping.runs, strict=True)
    )


def estimate_max_model_len(
    grouping: Grouping, limits: SchedulerLimits, available: int, share: WorkerShare | None = None
) -> int:
    """The largest length in [1, max_model_len] whose request fits ``available`` bytes,
    0 when even one token does not (binary search, as ``_estimate_max_model_len_from_groups``)."""

    def fits(length: int) -> bool:
        return request_bytes(grouping, limits, length, share) <= available

    return _largest(fits, limits.max_model_len)


def _largest(fits: Callable[[int], bool], upper: int) -> int:
    left, right = 1, upper
    if not fits(left):
        return 0
    result = 1
    while left <= right:
        mid = (left + right) // 2
        if fits(mid):
            result = mid
            left = mid + 1
        else:
            right = mid - 1
    return result


def format_gib(num_bytes: int) -> str:
    """GiB as ``vllm.utils.mem_utils.format_gib`` prints them: Python's ``round(x, 2)``
    (so 2 GiB is ``2.0`` and 6.076 GiB ``6.08``)."""
    return f"{round(num_bytes / GIB, 2)}"


class NotEnoughMemory(Exception):
    """vLLM's ValueError when one ``max_model_len`` request does not fit.

    :param needed: bytes one request needs; :param available: the KV budget (bytes);
    :param estimated_max_model_len: the largest length that fits (0: none).
    """

    def __init__(self, needed: int, available: int, max_model_len: int, estimated: int) -> None:
        self.needed = needed
        self.available = available
        self.max_model_len = max_model_len
        self.estimated_max_model_len = estimated
        if available <= 0:
            message = (
                "No available memory for the cache blocks. Try increasing `gpu_memory_utilization` "
                "when initializing the engine (this flag also controls CPU memory reservation on "
                "the CPU backend, despite its name). See "
                "https://docs.vllm.ai/en/latest/configuration/conserving_memory/ for more details."
            )
        else:
            est = (
                f"Based on the available memory, the estimated maximum model length is {estimated}. "
                if estimated > 0
                else ""
            )
            message = (
                f"To serve at least one request with the model's max seq len ({max_model_len}), "
                f"({format_gib(needed)} GiB KV cache is needed, which is larger than the "
                f"available KV cache memory ({format_gib(available)} GiB). {est}Try increasing "
                "`gpu_memory_utilization` (which also controls CPU memory on the CPU backend) or "
                "decreasing `max_model_len` when initializing the engine. See "
                "https://docs.vllm.ai/en/latest/configuration/conserving_memory/ for more details."
            )
        super().__init__(message)


class CannotAutoFit(NotEnoughMemory):
    """vLLM's ValueError when ``--max-model-len -1`` finds not even one token fits."""

    def __str__(self) -> str:
        return (
            "Cannot auto-fit max_model_len: not enough GPU memory available to serve even a single token. "
            "Try increasing `gpu_memory_utilization`."
        )


def auto_fit_max_model_len(
    grouping: Grouping,
    limits: SchedulerLimits,
    available: int,
    num_gpu_blocks_override: int | None = None,
    reserve_null_block: bool = False,
    kv_memory_wording: bool = False,
    shares: Sequence[WorkerShare] | None = None,
) -> tuple[int, str]:
    """``--max-model-len -1``/``auto``: the largest length that fits every worker
    (``_auto_fit_max_model_len``; ``shares``: one per pipeline stage, default one worker).
    ``--num-gpu-blocks-override`` already replaced the budget by that many blocks there.
    ``reserve_null_block`` (vLLM 0.29+): the block pool's null block is taken off the budget first.
    ``kv_memory_wording`` (vLLM 0.32+): the line names the KV cache memory the checks see (after
    the null block: ``_auto_fit_max_model_len`` is handed ``check_memory``).

    :returns: (length, vLLM's log line, naming the limiting worker's budget).
    :raises CannotAutoFit: when not even one token fits.
    """
    workers = list(shares or worker_shares(grouping))
    checked = []  # the budget the checks see, per worker
    for share in workers:
        pool = pool_bytes_per_block(grouping, share)
        budget = num_gpu_blocks_override * pool if num_gpu_blocks_override is not None else available
        checked.append(budget - pool if reserve_null_block else budget)
    fitted, limiting = limits.max_model_len, 0
    for i, (share, budget) in enumerate(zip(workers, checked, strict=True)):
        worker_max = estimate_max_model_len(grouping, limits, budget, share)
        if worker_max < fitted:
            fitted, limiting = worker_max, i
    available = checked[limiting]
    if fitted <= 0:
        raise CannotAutoFit(request_bytes(grouping, limits, 1, workers[limiting]), available, 1, 0)
    return auto_fit_result(limits.max_model_len, fitted, available, kv_memory_wording)


def override_line(computed: int, override: int) -> str:
    """vLLM's line where ``--num-gpu-blocks-override`` replaces the ``computed`` block count."""
    return f"Overriding num_gpu_blocks={computed} with num_gpu_blocks_override={override}"


def size_lines(tokens: int, max_model_len: int, concurrency: float, split_log: bool = False) -> tuple[str, ...]:
    """vLLM's ``GPU KV cache size`` and ``Maximum concurrency`` figures (``update_kv_cache_capacity``):
    one line, or two where the release logs them apart (``split_log``, vLLM 0.27.1)."""
    size = f"GPU KV cache size: {tokens:,} tokens"
    most = f"Maximum concurrency for {max_model_len:,} tokens per request: {concurrency:.2f}x"
    return (size, most) if split_log else (f"{size}, {most}",)


def auto_fit_result(upper: int, fitted: int, limiting: int, kv_memory_wording: bool) -> tuple[int, str]:
    """vLLM's auto-fit outcome and its line (``_auto_fit_max_model_len``): the full length ``upper``
    where ``fitted`` reaches it, else ``fitted``, with the budget (bytes) of the worker that limits
    it: 0.33.0 names it "available KV cache memory (X GiB GPU)" (``kv_memory_wording``), earlier
    releases "available GPU memory (X GiB available for KV cache)"."""
    if kv_memory_wording:
        where = f"available KV cache memory ({format_gib(limiting)} GiB GPU)"
        if fitted >= upper:
            return upper, f"Auto-fit max_model_len: full model context length {upper} fits in {where}"
        return fitted, f"Auto-fit max_model_len: reduced from {upper} to {fitted} to fit in {where}"
    if fitted >= upper:
        return upper, f"Auto-fit max_model_len: full model context length {upper} fits in available GPU memory"
    return fitted, (
        f"Auto-fit max_model_len: reduced from {upper} to {fitted} to fit in available GPU memory "
        f"({format_gib(limiting)} GiB available for KV cache)"
    )


def compute_capacity(
    grouping: Grouping,
    limits: SchedulerLimits,
    available: int,
    num_gpu_blocks_override: int | None = None,
    reserve_null_block: bool = False,
    shares: Sequence[WorkerShare] | None = None,
    split_log: bool = False,
) -> Capacity:
    """Blocks and concurrency for ``grouping`` with ``available`` bytes of KV budget per GPU.
    ``reserve_null_block`` (vLLM 0.29+): one request must fit the budget minus one pool block
    (the null block); the blocks are still counted from the whole budget. With pipeline stages
    (``shares``), each worker checks and counts its own pool and the engine keeps the smallest
    block count (``get_kv_cache_configs``); the figures of the first worker are reported.
    ``split_log`` (vLLM 0.27.1): the size and the concurrency are two log lines.

    :raises NotEnoughMemory: when one ``max_model_len`` request does not fit a worker (vLLM's
        ValueError).
    """
    log: list[str] = []
    workers = list(shares or worker_shares(grouping))
    pools = [pool_bytes_per_block(grouping, share) for share in workers]
    budgets = []
    for pool in pools:
        budget = available
        if num_gpu_blocks_override is not None:
            log.append(override_line(available // pool, num_gpu_blocks_override))
            budget = num_gpu_blocks_override * pool
        budgets.append(budget)
    needs = []
    for share, pool, budget in zip(workers, pools, budgets, strict=True):
        needed = request_bytes(grouping, limits, limits.max_model_len, share)
        check = budget - pool if reserve_null_block else budget
        if check <= 0 or needed > check:
            estimated = estimate_max_model_len(grouping, limits, check, share) if check > 0 else 0
            raise NotEnoughMemory(needed, check, limits.max_model_len, estimated)
        needs.append(needed)
    # each worker's pool holds budget // (page * its group size) blocks, or budget // the sum of its
    # pages for a uniform-type group; the engine keeps the fewest
    num_blocks = min(max(budget // pool, 0) for budget, pool in zip(budgets, pools, strict=True))
    uniform = grouping.path == "uniform-type"
    page = pools[0] if uniform else grouping.page_size_bytes
    group_size = 1 if uniform else workers[0].group_size
    available, needed = budgets[0], needs[0]
    if num_gpu_blocks_override is not None:
        num_blocks = num_gpu_blocks_override
    blocks = _run_blocks(grouping, limits, limits.max_model_len)
    per_group = tuple(b for b, run in zip(blocks, grouping.runs, strict=True) for _ in range(run.num_groups))
    concurrency = num_blocks / sum(per_group)
    tokens = int(concurrency * limits.max_model_len)
    log.extend(size_lines(tokens, limits.max_model_len, concurrency, split_log))
    return Capacity(
        available_bytes=available,
        page_size_bytes=page,
        group_size=group_size,
        num_blocks=num_blocks,
        blocks_per_request=per_group,
        max_concurrency=concurrency,
        kv_cache_size_tokens=tokens,
        max_model_len=limits.max_model_len,
        request_bytes=needed,
        log=tuple(log),
    )

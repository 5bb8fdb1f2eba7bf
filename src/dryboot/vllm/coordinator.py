"""The KV cache coordinator's invariants (``vllm/v1/core/kv_cache_coordinator.py``) and the
scheduler/hash block sizes it is built with (``resolve_kv_cache_block_sizes``)."""

from __future__ import annotations

from dataclasses import dataclass
from math import gcd, lcm

from dryboot.vllm.backends import AttentionBackend
from dryboot.vllm.engine_args import EngineArgs
from dryboot.vllm.kv_cache_interface import AttentionSpec, MambaSpec
from dryboot.vllm.kv_cache_utils.groups import Grouping
from dryboot.vllm.layer_set import LayerTable


@dataclass(frozen=True)
class Invariant:
    """One checked invariant: ``ok`` False means the engine crashes or corrupts memory.

    ``detail`` is ``template.format(*values)``, formatted when read."""

    name: str
    ok: bool
    template: str
    consequence: str = ""
    values: tuple[object, ...] = ()

    @property
    def detail(self) -> str:
        return self.template.format(*self.values) if self.values else self.template


def resolve_kv_cache_block_sizes(
    grouping: Grouping, args: EngineArgs, cache_block_size: int
) -> tuple[int, int, str | None]:
    """(scheduler block, hash block, error) as ``resolve_kv_cache_block_sizes`` computes them
    (tokens; the error is vLLM's ValueError text for a bad ``--prefix-match-unit``).

    LCM and GCD over the distinct group block sizes equal those over every group.
    """
    if grouping.num_groups <= 1:
        only = grouping.runs[0].spec if grouping.runs else None
        bs = only.block_size if only is not None and isinstance(only, MambaSpec) else cache_block_size
        return bs, bs, None
    specs = grouping.specs
    sizes = sorted({s.block_size for s in specs})
    scheduler = lcm(*sizes)
    if not args.enable_prefix_caching:
        return scheduler, scheduler, None
    if any(isinstance(s, MambaSpec) and s.mamba_cache_mode != "align" for s in specs):
        return scheduler, scheduler, None
    hash_block = args.prefix_match_unit if args.prefix_match_unit is not None else gcd(*sizes)
    if any(bs % hash_block for bs in sizes):
        every = [g.block_size for g in grouping.groups]
        return (
            scheduler,
            hash_block,
            (
                f"Invalid prefix_match_unit={hash_block}; all KV cache group block sizes must be "
                f"divisible by prefix_match_unit. Got group block sizes={every}."
            ),
        )
    return scheduler, hash_block, None


def check_invariants(
    grouping: Grouping,
    scheduler_block: int,
    hash_block: int,
    hash_error: str | None,
    table: LayerTable,
    backends: dict[str, AttentionBackend],
) -> list[Invariant]:
    """The invariants whose violation crashes the engine or corrupts memory: one page size
    across groups (``get_uniform_page_size``), every group block dividing the scheduler block
    and the hash block dividing it (``KVCacheCoordinator``), the prefix-match unit, and every
    attention block addressable by its backend's kernel (``supports_block_size``)."""
    out: list[Invariant] = []
    specs = grouping.specs
    if grouping.path == "hybrid":
        pages = {s.page_size_bytes for s in specs}
        if len(pages) == 1:
            out.append(Invariant("uniform-page-size", True, "every group's page is {:,} B", "", (min(pages),)))
        else:
            out.append(
                Invariant(
                    "uniform-page-size",
                    False,
                    "groups have pages {}",
                    "AssertionError in get_uniform_page_size",
                    (sorted(pages),),
                )
            )
    sizes = sorted({s.block_size for s in specs})
    divides = scheduler_block % hash_block == 0 and all(scheduler_block % b == 0 for b in sizes)
    consequence = "" if divides else "AssertionError in KVCacheCoordinator at engine start"
    if grouping.num_groups > 1:
        out.append(
            Invariant(
                "scheduler-block",
                divides,
                "scheduler block {} = LCM of group blocks {}; hash block {}",
                consequence,
                (scheduler_block, sizes, hash_block),
            )
        )
    else:
        out.append(
            Invariant(
                "scheduler-block",
                divides,
                "scheduler block {}, group block {}",
                consequence,
                (scheduler_block, sizes[0]),
            )
        )
    if hash_error is not None:
        out.append(Invariant("prefix-match-unit", False, hash_error, "ValueError at engine start"))
    bad: list[str] = []
    first_bad: int | None = None
    for spec, names in zip(table.unified.specs, table.unified.names, strict=True):
        name, count = names[0], len(names)
        if not isinstance(spec, AttentionSpec):
            continue
        be = backends[spec.backend]
        if not be.supports_block_size(spec.block_size):
            first_bad = spec.block_size if first_bad is None else first_bad
            more = f" (and {count - 1} more layers)" if count > 1 else ""
            bad.append(
                f"{name}{more}: block {spec.block_size} is not a multiple of "
                f"{'/'.join(str(k) for k in be.kernel_blocks)} ({be.name})"
            )
    out.append(
        Invariant(
            "kernel-block-size",
            not bad,
            # vLLM's words: prepare_kernel_block_sizes -> select_common_block_size
            # (v1/worker/utils.py, every release 0.27.1-0.33.0) when the worker initializes its KV
            # cache, after the engine core logged the KV cache size
            "every attention block is addressable by its backend's kernel"
            if not bad
            else f"No common block size for {first_bad}: "
            + "; ".join(bad[:3])
            + (f" (+{len(bad) - 3} more)" if len(bad) > 3 else ""),
            ""
            if not bad
            else "ValueError at engine start (the worker's select_common_block_size, after the KV "
            "cache size is logged)",
        )
    )
    return out

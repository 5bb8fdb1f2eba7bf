"""Sweep a space of geometries through the planner and classify every failure.

A *geometry* (:class:`Geometry`) is one point of a hybrid target (full attention + Gated
DeltaNet, the layout of ``docs/kv-geometry-rules.md`` section 7) with a speculative drafter: KV
heads and head dims of both, their KV dtypes (built-in, per-token-head, or a custom cache
with a kernel granularity of 16/32/64/128), the drafter's layer kind and starting block,
``num_speculative_tokens``, the GDN state size, the mamba SSM dtype, ``--block-size`` and
``--prefix-match-unit``. A :class:`Space` lists the values of every parameter; its points
are numbered in mixed radix, and a sweep plans a deterministic sample of them (all of them
when the space is small enough) under each :class:`Arm` (grouping + unification policy).

Failure kinds (:data:`KINDS`):

* ``kernel-block`` - an attention layer's block is not addressable by its backend
  (the plan's ``kernel-block-size`` invariant: ``supports_block_size`` per layer);
  vLLM's worker raises "No common block size for N" at engine start.
* ``scheduler`` - the scheduler LCM / hash-block invariants (``scheduler-block``,
  ``prefix-match-unit``); an error at engine start.
* ``unify-error`` - vLLM's ``NotImplementedError`` from page unification
  (``plan.unify_error``); the engine does not start.
* ``drafter-block-not-16`` - informational: a drafter attention layer ends with a block
  that is not a multiple of 16 (the issue's acceptance probe; for FLASH_ATTN/TRITON_ATTN
  drafters this is also a ``kernel-block`` failure).

Each (arm, kind) gets a count and one minimal counterexample. *Minimal* is defined over
the space: every parameter's values are listed simplest first (numbers ascending,
``None`` = "vLLM's default" first), a *step-down* moves one parameter to an earlier value
of its list, and :func:`shrink` greedily moves each parameter to the earliest value that
still fails, repeating until a whole pass changes nothing. The result fails, and no single
parameter can be moved to any earlier value (in particular its predecessor) and still fail.
Shrinking starts from the failing geometry with the smallest value indices (not the first
one a worker happened to see), so the output does not depend on ``jobs`` or chunking.

The module imports only the planner; :mod:`multiprocessing` and :mod:`rich` are imported
when a sweep actually runs.
"""

from __future__ import annotations

import os
import random
import signal
import sys
import threading
from collections.abc import Callable, Iterable, Iterator, Sequence
from dataclasses import asdict, dataclass, field, fields, replace
from functools import lru_cache
from typing import Any

from dryboot.errors import InputError
from dryboot.planner.plan import Drafter, Plan, Policies, plan
from dryboot.planner.policies import UNIFICATION_POLICIES
from dryboot.textout import wrap
from dryboot.vllm.config.hf import ModelGeometry
from dryboot.vllm.dtypes import CustomKVCacheDtype
from dryboot.vllm.engine_args import EngineArgs
from dryboot.vllm.gpus import DEFAULT_GPU_NAME, parse_gpu
from dryboot.vllm.kv_cache_interface import AttentionSpec
from dryboot.vllm.transformers_utils.config import geometry_from_config

KERNEL_BLOCK = "kernel-block"
SCHEDULER = "scheduler"
UNIFY_ERROR = "unify-error"
DRAFTER_NOT_16 = "drafter-block-not-16"

#: Failure kinds in report order.
KINDS: tuple[str, ...] = (KERNEL_BLOCK, SCHEDULER, UNIFY_ERROR, DRAFTER_NOT_16)

KIND_DESCRIPTIONS: dict[str, str] = {
    KERNEL_BLOCK: "a block its backend cannot address (kernel-block-size invariant)",
    SCHEDULER: "breaks the scheduler LCM / hash-block invariants",
    UNIFY_ERROR: "vLLM's NotImplementedError in page unification",
    DRAFTER_NOT_16: "a drafter block that is not a multiple of 16",
}

#: KV dtype choices of the space. ``bf16-custom``: a custom cache storing bf16 K and V
#: (``4*head_dim`` B per head per token) whose kernel needs blocks that are multiples of the
#: geometry's kernel granularity and reads padded pages. ``kvarn``: KVarN-like
#: (``210*head_dim//256`` B, kernel granularity as given, cannot take a padded page).
DTYPE_CHOICES: tuple[str, ...] = (
    "auto",
    "fp8",
    "int8_per_token_head",
    "fp8_per_token_head",
    "int4_per_token_head",
    "bf16-custom",
    "kvarn",
)

_CUSTOM_FORMULAS: dict[str, tuple[str, bool]] = {
    "bf16-custom": ("4*head_dim", True),
    "kvarn": ("210*head_dim//256", False),
}

#: Primary (attention) model length, batch tokens and layer window of every geometry.
MAX_MODEL_LEN = 65536
MAX_NUM_BATCHED_TOKENS = 2048
DRAFTER_WINDOW = 2048


@dataclass(frozen=True)
class Geometry:
    """One point of the space. Heads are totals (TP 1); dims and blocks in elements/tokens.

    ``*_kernel_block`` is the kernel granularity of a custom KV dtype (ignored for the
    built-in ones). ``drafter_start_block`` ``None`` means the version's rule (the drafter
    backend's smallest kernel block for sliding layers, the primary block for full ones).
    """

    target_kv_heads: int = 4
    target_head_dim: int = 256
    target_kv_dtype: str = "auto"
    target_kernel_block: int = 16
    drafter_kind: str = "sliding"
    drafter_kv_heads: int = 8
    drafter_head_dim: int = 128
    drafter_kv_dtype: str = "auto"
    drafter_kernel_block: int = 16
    drafter_start_block: int | None = None
    num_speculative_tokens: int = 7
    gdn_k_heads: int = 16
    gdn_v_heads: int = 48
    gdn_head_dim: int = 128
    mamba_ssm_dtype: str = "float16"
    block_size: int | None = None
    prefix_match_unit: int | None = None
    target_layers: int = 64
    drafter_layers: int = 5
    gpu: str = DEFAULT_GPU_NAME

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)

    def describe(self) -> str:
        """One line with every parameter (``name=value``)."""
        return " ".join(f"{k}={v}" for k, v in asdict(self).items())


PARAMS: tuple[str, ...] = tuple(f.name for f in fields(Geometry))


@dataclass(frozen=True)
class Space:
    """The values of each :class:`Geometry` parameter, simplest first."""

    target_kv_heads: tuple[int, ...] = (1, 2, 4, 8)
    target_head_dim: tuple[int, ...] = (64, 128, 256)
    target_kv_dtype: tuple[str, ...] = DTYPE_CHOICES
    target_kernel_block: tuple[int, ...] = (16, 32, 64, 128)
    drafter_kind: tuple[str, ...] = ("sliding", "full")
    drafter_kv_heads: tuple[int, ...] = (1, 2, 4, 8, 16)
    drafter_head_dim: tuple[int, ...] = (64, 128, 256)
    drafter_kv_dtype: tuple[str, ...] = DTYPE_CHOICES
    drafter_kernel_block: tuple[int, ...] = (16, 32, 64, 128)
    drafter_start_block: tuple[int | None, ...] = (None, 16, 32, 64, 128)
    num_speculative_tokens: tuple[int, ...] = tuple(range(17))
    gdn_k_heads: tuple[int, ...] = (8, 16)
    gdn_v_heads: tuple[int, ...] = (16, 32, 48, 64)
    gdn_head_dim: tuple[int, ...] = (64, 128)
    mamba_ssm_dtype: tuple[str, ...] = ("float16", "float32")
    block_size: tuple[int | None, ...] = (None, 16, 32, 64, 128)
    prefix_match_unit: tuple[int | None, ...] = (None, 16)
    target_layers: tuple[int, ...] = (64,)
    drafter_layers: tuple[int, ...] = (5,)
    gpu: tuple[str, ...] = (DEFAULT_GPU_NAME,)

    def values(self, param: str) -> tuple[Any, ...]:
        vals: tuple[Any, ...] = getattr(self, param)
        return vals

    @property
    def size(self) -> int:
        n = 1
        for p in PARAMS:
            n *= len(self.values(p))
        return n

    def point(self, index: int) -> Geometry:
        """The ``index``-th point (mixed radix, last parameter fastest)."""
        kwargs: dict[str, Any] = {}
        for p in reversed(PARAMS):
            vals = self.values(p)
            index, r = divmod(index, len(vals))
            kwargs[p] = vals[r]
        return Geometry(**kwargs)

    def rank(self, geometry: Geometry) -> tuple[int, ...]:
        """Each parameter's position in its value list (the shrink order key)."""
        return tuple(self.values(p).index(getattr(geometry, p)) for p in PARAMS)

    def sample(self, limit: int | None, seed: int = 0) -> list[int]:
        """Point indices to plan: every point when ``limit`` is ``None`` or covers the
        space, else ``limit`` distinct indices drawn with ``random.Random(seed)``, sorted.

        :raises InputError: when that is more than :data:`MAX_POINTS` points (it would not fit
            in memory nor finish).
        """
        size = self.size
        count = size if limit is None else min(limit, size)
        if count > MAX_POINTS:
            if limit is None:
                raise InputError(
                    "--all",
                    None,
                    f"this space has {size:,} geometries; a sweep plans at most {MAX_POINTS:,} (sample with --limit)",
                )
            raise InputError(
                "--limit",
                f"{limit:,}",
                f"a sweep plans at most {MAX_POINTS:,} geometries (this space has {size:,})",
            )
        if limit is None or limit >= size:
            return list(range(size))
        return sorted(random.Random(seed).sample(range(size), limit))

    def to_dict(self) -> dict[str, list[Any]]:
        return {p: list(self.values(p)) for p in PARAMS}


#: The most geometries one sweep plans (about an hour on one core, and their indices in memory).
MAX_POINTS = 20_000_000


@dataclass(frozen=True)
class Arm:
    """A grouping + unification policy pair to plan each geometry under."""

    unification: str
    grouping: str = "upstream"

    @property
    def label(self) -> str:
        return self.unification if self.grouping == "upstream" else f"{self.unification}+{self.grouping}"

    @property
    def policies(self) -> Policies:
        return Policies(grouping=self.grouping, unification=self.unification)


DEFAULT_ARMS: tuple[Arm, ...] = tuple(Arm(u) for u in UNIFICATION_POLICIES)


# --------------------------------------------------------------------------------------
# geometry -> planner inputs
# --------------------------------------------------------------------------------------


def _custom(choice: str, kernel: int) -> CustomKVCacheDtype | None:
    if choice not in _CUSTOM_FORMULAS:
        return None
    formula, can_pad = _CUSTOM_FORMULAS[choice]
    return CustomKVCacheDtype(f"{choice}-k{kernel}", formula, kernel, can_pad)


@lru_cache(maxsize=4096)
def _target_model(layers: int, heads: int, head_dim: int, gk: int, gv: int, gd: int) -> ModelGeometry:
    return geometry_from_config(
        {
            "architectures": ["Qwen3NextForCausalLM"],
            "model_type": "qwen3_next",
            "num_hidden_layers": layers,
            "full_attention_interval": 4,
            "num_attention_heads": 4 * heads,
            "num_key_value_heads": heads,
            "head_dim": head_dim,
            "hidden_size": 4096,
            "linear_num_key_heads": gk,
            "linear_num_value_heads": gv,
            "linear_key_head_dim": gd,
            "linear_value_head_dim": gd,
            "linear_conv_kernel_dim": 4,
            "max_position_embeddings": 262144,
            "torch_dtype": "bfloat16",
        },
        "<sweep target>",
    )


@lru_cache(maxsize=4096)
def _drafter_model(layers: int, kind: str, heads: int, head_dim: int) -> ModelGeometry:
    layer_type = "sliding_attention" if kind == "sliding" else "full_attention"
    return geometry_from_config(
        {
            "architectures": ["DFlashDraftModel"],
            "model_type": "qwen3",
            "num_hidden_layers": layers,
            "layer_types": [layer_type] * layers,
            "sliding_window": DRAFTER_WINDOW,
            "use_sliding_window": True,
            "dflash_config": {"mask_token_id": 0},  # vLLM's DFlash proposer needs one; no KV effect
            "num_attention_heads": 32,
            "num_key_value_heads": heads,
            "head_dim": head_dim,
            "max_position_embeddings": 262144,
            "torch_dtype": "bfloat16",
        },
        "<sweep drafter>",
    )


def planner_inputs(g: Geometry) -> tuple[ModelGeometry, EngineArgs, Drafter]:
    """The (target model, engine args, drafter) :func:`dryboot.planner.plan.plan` takes for ``g``."""
    target = _target_model(
        g.target_layers,
        g.target_kv_heads,
        g.target_head_dim,
        g.gdn_k_heads,
        g.gdn_v_heads,
        g.gdn_head_dim,
    )
    draft = _drafter_model(g.drafter_layers, g.drafter_kind, g.drafter_kv_heads, g.drafter_head_dim)
    customs: list[CustomKVCacheDtype] = []
    t_custom = _custom(g.target_kv_dtype, g.target_kernel_block)
    d_custom = _custom(g.drafter_kv_dtype, g.drafter_kernel_block)
    for c in (t_custom, d_custom):
        if c is not None and c not in customs:
            customs.append(c)
    args = EngineArgs(
        kv_cache_dtype=t_custom.name if t_custom else g.target_kv_dtype,
        block_size=g.block_size,
        mamba_ssm_cache_dtype=g.mamba_ssm_dtype,
        max_model_len=MAX_MODEL_LEN,
        max_num_batched_tokens=MAX_NUM_BATCHED_TOKENS,
        num_speculative_tokens=g.num_speculative_tokens,
        prefix_match_unit=g.prefix_match_unit,
        custom_kv_cache_dtypes=tuple(customs),
        gpu=parse_gpu(g.gpu),
    )
    drafter = Drafter(
        draft,
        method="dflash" if g.drafter_kind == "sliding" else "eagle",
        kv_cache_dtype=d_custom.name if d_custom else g.drafter_kv_dtype,
        block_size=g.drafter_start_block,
    )
    return target, args, drafter


def plan_geometry(g: Geometry, arm: Arm) -> Plan:
    """Plan ``g`` under ``arm``. :raises InputError: a geometry the planner rejects."""
    target, args, drafter = planner_inputs(g)
    return plan(target, args, drafter=drafter, policies=arm.policies)


def classify(p: Plan) -> frozenset[str]:
    """The failure kinds of one plan (see :data:`KINDS`)."""
    kinds: set[str] = set()
    if p.unify_error is not None:
        kinds.add(UNIFY_ERROR)
    for inv in p.invariants:
        if inv.ok:
            continue
        if inv.name == "kernel-block-size":
            kinds.add(KERNEL_BLOCK)
        elif inv.name in ("scheduler-block", "prefix-match-unit"):
            kinds.add(SCHEDULER)
    for lp in p.layers:
        if lp.role == "drafter" and isinstance(lp.spec, AttentionSpec) and lp.spec.block_size % 16:
            kinds.add(DRAFTER_NOT_16)
    return frozenset(kinds)


def drafter_blocks(p: Plan) -> tuple[int, ...]:
    """The distinct final blocks of the drafter's attention layers, ascending."""
    return tuple(
        sorted({lp.spec.block_size for lp in p.layers if lp.role == "drafter" and isinstance(lp.spec, AttentionSpec)})
    )


INVALID = "invalid"


def evaluate(g: Geometry, arm: Arm) -> frozenset[str]:
    """:func:`classify` of ``g`` under ``arm``, or ``{"invalid"}`` when the planner
    rejects the input."""
    try:
        return classify(plan_geometry(g, arm))
    except InputError:
        return frozenset({INVALID})


# --------------------------------------------------------------------------------------
# shrinking
# --------------------------------------------------------------------------------------


def shrink(g: Geometry, fails: Callable[[Geometry], bool], space: Space) -> Geometry:
    """The minimal failing geometry reachable from ``g`` by step-downs (module docstring).

    Deterministic: parameters are visited in :data:`PARAMS` order, earlier values first.
    :raises ValueError: when ``g`` itself does not fail.
    """
    if not fails(g):
        raise ValueError("shrink needs a failing geometry")
    changed = True
    while changed:
        changed = False
        for p in PARAMS:
            vals = space.values(p)
            cur = vals.index(getattr(g, p))
            for cand in vals[:cur]:
                trial = replace(g, **{p: cand})
                if fails(trial):
                    g = trial
                    changed = True
                    break
    return g


def step_downs(g: Geometry, space: Space) -> Iterator[Geometry]:
    """Every geometry one parameter step (its predecessor value) below ``g``."""
    for p in PARAMS:
        vals = space.values(p)
        cur = vals.index(getattr(g, p))
        if cur > 0:
            yield replace(g, **{p: vals[cur - 1]})


# --------------------------------------------------------------------------------------
# running
# --------------------------------------------------------------------------------------


def _work(task: tuple[Space, tuple[Arm, ...], Sequence[int]]) -> list[tuple[int, tuple[frozenset[str], ...]]]:
    space, arms, indices = task
    out: list[tuple[int, tuple[frozenset[str], ...]]] = []
    for i in indices:
        g = space.point(i)
        out.append((i, tuple(evaluate(g, arm) for arm in arms)))
    return out


def _chunks(items: Sequence[int], size: int) -> Iterator[Sequence[int]]:
    for start in range(0, len(items), size):
        yield items[start : start + size]


def _default_jobs() -> int:
    return len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else (os.cpu_count() or 1)


def _progress_enabled(progress: bool | None) -> bool:
    if progress is False:
        return False
    return bool(progress) or sys.stderr.isatty()


def _worker_signals() -> None:
    """A worker's signals as the interpreter's defaults, not its parent's: a forked worker
    inherits the CLI's SIGTERM handler (which raises, for the parent's clean exit), and the
    pool ends its workers with SIGTERM (on an error or an interrupt), each of which would then
    print a traceback. SIGINT (a Ctrl-C sent to the whole process group) is the parent's to
    handle: it ends the pool."""
    signal.signal(signal.SIGTERM, signal.SIG_DFL)
    signal.signal(signal.SIGINT, signal.SIG_IGN)


def plan_all(
    space: Space,
    arms: Sequence[Arm],
    indices: Sequence[int],
    *,
    jobs: int | None = None,
    chunk_size: int = 64,
    progress: bool | None = None,
) -> dict[int, tuple[frozenset[str], ...]]:
    """Evaluate every index under every arm, on ``jobs`` processes (default: all cores).

    :param progress: a rich progress bar on stderr; ``None``: only when stderr is a TTY.
    :returns: index -> one kind set per arm (in ``arms`` order).
    """
    arms_t = tuple(arms)
    jobs = jobs or _default_jobs()
    tasks = [(space, arms_t, chunk) for chunk in _chunks(indices, chunk_size)]
    results: dict[int, tuple[frozenset[str], ...]] = {}
    show = _progress_enabled(progress)

    def consume(parts: Iterable[list[tuple[int, tuple[frozenset[str], ...]]]], advance: Callable[[int], None]) -> None:
        for part in parts:
            results.update(part)
            advance(len(part))

    def run(advance: Callable[[int], None]) -> None:
        if jobs <= 1 or len(tasks) <= 1:
            consume(map(_work, tasks), advance)
            return
        import multiprocessing  # at call: only a parallel sweep needs it (13 ms of start-up)

        # fork copies a lock another thread holds (rich's refresh thread, a caller's threads)
        # into the child, which then waits on it forever: fork only a single-threaded process,
        # else start the workers from a clean fork server
        method = "fork" if threading.active_count() == 1 else "forkserver"
        with multiprocessing.get_context(method).Pool(jobs, initializer=_worker_signals) as pool:
            consume(pool.imap_unordered(_work, tasks), advance)
            pool.close()  # the work is done: the workers end on their own, none is terminated
            pool.join()

    if not show:
        run(lambda n: None)
        return results
    from rich.console import Console  # at call: only a progress bar needs rich (70 ms of start-up)
    from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeRemainingColumn

    with Progress(
        TextColumn("sweep"),
        BarColumn(),
        MofNCompleteColumn(),
        TimeRemainingColumn(),
        console=Console(stderr=True),
        transient=True,
    ) as bar:
        task_id = bar.add_task("sweep", total=len(indices))
        run(lambda n: bar.advance(task_id, n))
    return results


@dataclass(frozen=True)
class Finding:
    """One (arm, kind): how many geometries fail, and the shrunk counterexample."""

    arm: Arm
    kind: str
    count: int
    counterexample: Geometry
    detail: str

    def to_dict(self) -> dict[str, Any]:
        return {
            "policy": self.arm.unification,
            "grouping": self.arm.grouping,
            "kind": self.kind,
            "count": self.count,
            "counterexample": self.counterexample.to_dict(),
            "detail": self.detail,
        }


@dataclass(frozen=True)
class Comparison:
    """``promote-granular`` vs ``promote-kernel`` on the same geometries.

    ``count``: geometries where granular's plan has a ``kernel-block`` failure and kernel's
    plan boots clean (no ``kernel-block``, ``scheduler`` or ``unify-error``): kernel avoids
    the bad block. ``loose_count``: granular has ``kernel-block`` and kernel merely does not
    (it may instead fail to boot, e.g. a cache that cannot be padded at its small block).
    """

    grouping: str
    count: int
    counterexample: Geometry | None
    loose_count: int = 0
    granular_blocks: tuple[int, ...] = ()
    kernel_blocks: tuple[int, ...] = ()
    detail: str = ""

    def to_dict(self) -> dict[str, Any]:
        return {
            "grouping": self.grouping,
            "count": self.count,
            "loose_count": self.loose_count,
            "counterexample": self.counterexample.to_dict() if self.counterexample else None,
            "granular_drafter_blocks": list(self.granular_blocks),
            "kernel_drafter_blocks": list(self.kernel_blocks),
            "detail": self.detail,
        }


@dataclass(frozen=True)
class SweepResult:
    space: Space
    arms: tuple[Arm, ...]
    seed: int
    planned: int
    invalid: int
    findings: tuple[Finding, ...]
    clean: tuple[tuple[Arm, str], ...]
    comparisons: tuple[Comparison, ...] = field(default=())

    def count(self, unification: str, kind: str, grouping: str = "upstream") -> int:
        for f in self.findings:
            if f.arm == Arm(unification, grouping) and f.kind == kind:
                return f.count
        return 0

    def finding(self, unification: str, kind: str, grouping: str = "upstream") -> Finding | None:
        for f in self.findings:
            if f.arm == Arm(unification, grouping) and f.kind == kind:
                return f
        return None

    def to_dict(self) -> dict[str, Any]:
        return {
            "space": {**self.space.to_dict(), "size": self.space.size},
            "seed": self.seed,
            "arms": [{"policy": a.unification, "grouping": a.grouping} for a in self.arms],
            "geometries": self.planned,
            "invalid": self.invalid,
            "findings": [f.to_dict() for f in self.findings],
            "clean": [{"policy": a.unification, "grouping": a.grouping, "kind": k} for a, k in self.clean],
            "granular_vs_kernel": [c.to_dict() for c in self.comparisons],
        }


def _detail(g: Geometry, arm: Arm, kind: str) -> str:
    p = plan_geometry(g, arm)
    if kind == UNIFY_ERROR:
        return str(p.unify_error)
    if kind == DRAFTER_NOT_16:
        return f"primary block {p.block_size}, drafter block(s) {list(drafter_blocks(p))}"
    names = ("kernel-block-size",) if kind == KERNEL_BLOCK else ("scheduler-block", "prefix-match-unit")
    bad = [i.detail for i in p.invariants if i.name in names and not i.ok]
    return f"primary block {p.block_size}; " + "; ".join(bad)


def _smallest(space: Space, indices: Iterable[int]) -> Geometry:
    return min((space.point(i) for i in indices), key=space.rank)


def _boots_clean(kinds: frozenset[str]) -> bool:
    return not kinds & {KERNEL_BLOCK, SCHEDULER, UNIFY_ERROR, INVALID}


def compare_granular_kernel(
    space: Space,
    results: dict[int, tuple[frozenset[str], ...]],
    arms: Sequence[Arm],
) -> list[Comparison]:
    """For each grouping that has both ``promote-granular`` and ``promote-kernel`` arms:
    the geometries where granular emits a block its backend rejects and kernel does not."""
    out: list[Comparison] = []
    groupings = sorted({a.grouping for a in arms})
    for grouping in groupings:
        gran, kern = Arm("promote-granular", grouping), Arm("promote-kernel", grouping)
        if gran not in arms or kern not in arms:
            continue
        gi, ki = arms.index(gran), arms.index(kern)
        loose = [
            i
            for i in sorted(results)
            if KERNEL_BLOCK in results[i][gi] and KERNEL_BLOCK not in results[i][ki] and INVALID not in results[i][gi]
        ]
        hits = [i for i in loose if _boots_clean(results[i][ki])]
        if not hits:
            out.append(Comparison(grouping, 0, None, len(loose)))
            continue

        def fails(g: Geometry, gran: Arm = gran, kern: Arm = kern) -> bool:
            a = evaluate(g, gran)
            return KERNEL_BLOCK in a and INVALID not in a and _boots_clean(evaluate(g, kern))

        ex = shrink(_smallest(space, hits), fails, space)
        pg, pk = plan_geometry(ex, gran), plan_geometry(ex, kern)
        out.append(
            Comparison(
                grouping,
                len(hits),
                ex,
                len(loose),
                drafter_blocks(pg),
                drafter_blocks(pk),
                _detail(ex, gran, KERNEL_BLOCK),
            )
        )
    return out


def run_sweep(
    space: Space | None = None,
    arms: Sequence[Arm] = DEFAULT_ARMS,
    *,
    limit: int | None = 5000,
    seed: int = 0,
    jobs: int | None = None,
    progress: bool | None = None,
    chunk_size: int = 64,
) -> SweepResult:
    """Plan a sample of ``space`` under every arm, count failures per (arm, kind) and
    shrink one counterexample each. Output depends only on (space, arms, limit, seed)."""
    space = space or Space()
    arms_t = tuple(arms)
    indices = space.sample(limit, seed)
    results = plan_all(space, arms_t, indices, jobs=jobs, progress=progress, chunk_size=chunk_size)
    invalid = sum(1 for i in indices if any(INVALID in r for r in results[i]))
    findings: list[Finding] = []
    clean: list[tuple[Arm, str]] = []
    for ai, arm in enumerate(arms_t):
        for kind in KINDS:
            hits = [i for i in indices if kind in results[i][ai]]
            if not hits:
                clean.append((arm, kind))
                continue

            def fails(g: Geometry, arm: Arm = arm, kind: str = kind) -> bool:
                return kind in evaluate(g, arm)

            ex = shrink(_smallest(space, hits), fails, space)
            findings.append(Finding(arm, kind, len(hits), ex, _detail(ex, arm, kind)))
    comparisons = compare_granular_kernel(space, results, arms_t)
    return SweepResult(space, arms_t, seed, len(indices), invalid, tuple(findings), tuple(clean), tuple(comparisons))


def format_report(result: SweepResult, width: int | None = None) -> str:
    """The human report (deterministic: no timings), each line wrapped at spaces to ``width``
    columns when given (nothing is cut)."""
    lines = [
        f"Planned {result.planned:,} geometries (of a space of {result.space.size:,}, seed "
        f"{result.seed}) under {len(result.arms)} arm(s): " + ", ".join(a.label for a in result.arms),
    ]
    if result.invalid:
        lines.append(f"{result.invalid:,} geometries rejected as input (not counted as failures)")
    lines.append("")
    for arm in result.arms:
        lines.append(f"{arm.label}:")
        for kind in KINDS:
            f = result.finding(arm.unification, kind, arm.grouping)
            if f is None:
                lines.append(f"  {kind:<22} 0")
                continue
            lines.append(f"  {kind:<22} {f.count:,}  ({KIND_DESCRIPTIONS[kind]})")
            lines.append(f"    minimal: {_short(f.counterexample)}")
            lines.append(f"    {f.detail}")
    for c in result.comparisons:
        lines.append("")
        lines.append(
            f"promote-granular vs promote-kernel (grouping {c.grouping}): {c.count:,} "
            "geometries where granular picks a block the backend rejects and kernel boots clean "
            f"({c.loose_count:,} where kernel merely avoids the bad block)"
        )
        if c.counterexample is not None:
            lines.append(f"  minimal: {_short(c.counterexample)}")
            lines.append(
                f"  granular drafter block(s) {list(c.granular_blocks)}, kernel drafter block(s) "
                f"{list(c.kernel_blocks)}; {c.detail}"
            )
    if width is not None:
        wrapped: list[str] = []
        for line in lines:
            indent = " " * (len(line) - len(line.lstrip()))
            wrapped += wrap(line.strip(), width, indent, indent + "    ") if line else [""]
        lines = wrapped
    return "\n".join(lines)


def _short(g: Geometry) -> str:
    """Parameters that differ from their space's simplest value are the interesting ones,
    but every parameter is printed so the line is a complete reproduction."""
    return g.describe()

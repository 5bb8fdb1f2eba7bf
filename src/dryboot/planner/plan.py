"""Plan a vLLM engine's KV cache offline: the public entry point of the geometry engine.

:func:`plan` composes the rule modules in the order vLLM runs them at engine start:
block size (``platforms/interface.py``), per-layer specs (``v1/kv_cache_interface.py`` and
the attention/mamba layers' ``get_kv_cache_spec``), page unification and grouping
(``get_kv_cache_groups``), capacity (``get_kv_cache_configs``, ``update_kv_cache_capacity``)
and the scheduler's block-size invariants (``resolve_kv_cache_block_sizes``,
``KVCacheCoordinator``). It never raises for a boot failure: a failure is part of the plan
(``unify_error``, ``memory_error``, violated invariants). Bad input raises
:class:`~dryboot.errors.InputError`.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field, replace

from dryboot.errors import InputError
from dryboot.planner.policies.promotion import unify_layer_set_with_policy
from dryboot.vllm.backends import (
    DEEPSEEK_V32_INDEXER,
    MINIMAX_M3_SPARSE_INDEXER,
    AttentionBackend,
    AttentionSelectorConfig,
)
from dryboot.vllm.config.hf import LayerKind, ModelGeometry
from dryboot.vllm.config.resolve import MEMORY_FLAGS, Drafter, EngineConfig, create_engine_config, with_memory
from dryboot.vllm.coordinator import Invariant, check_invariants, resolve_kv_cache_block_sizes
from dryboot.vllm.distributed import (
    check_dcp_layers,
    check_drafter_pp,
    model_pp_refusal,
    pp_refused,
    pp_stage_ranges,
)
from dryboot.vllm.dtypes import dtype_bytes
from dryboot.vllm.engine_args import EngineArgs
from dryboot.vllm.gpus import gdn_prefill_alignment
from dryboot.vllm.kv_cache_interface import (
    AttentionSpec,
    LayerSpec,
    MambaSpec,
    state_bytes,
)
from dryboot.vllm.kv_cache_layout import check_layerless_stage_backend, check_mixed_page_sizes, check_stage_layouts
from dryboot.vllm.kv_cache_spec import MambaState, build_layers, flat_row_alignment, kv_layout, mamba_state
from dryboot.vllm.kv_cache_utils.capacity import (
    Capacity,
    NotEnoughMemory,
    SchedulerLimits,
    auto_fit_max_model_len,
    compute_capacity,
    empty_stage_message,
    worker_shares,
)
from dryboot.vllm.kv_cache_utils.groups import (
    Grouping,
    add_hidden_state_groups,
    full_allocation_fallback,
    group_layers,
    uniform_path,
    uniform_type_grouping,
)
from dryboot.vllm.kv_cache_utils.unify import Decision, UnifyError
from dryboot.vllm.layer_set import LayerSet, LayerTable
from dryboot.vllm.models.registry import family_of
from dryboot.vllm.platforms import (
    BlockSizeDecision,
    align_hybrid_block_size,
    preferred_block_size,
    preferred_block_size_for_backends,
)
from dryboot.vllm.versions import VersionRules

__all__ = ["Drafter", "Invariant", "LayerPlan", "LayerTable", "Plan", "Policies", "plan"]


@dataclass(frozen=True)
class Policies:
    """The planner rules a downstream patch stack may change (see :mod:`dryboot.planner.policies.promotion`).

    :param grouping: ``upstream`` | ``pad-sliding-window-buckets``.
    :param unification: ``upstream`` | ``promote-cover`` | ``promote-divisor`` |
        ``promote-granular`` | ``promote-kernel``.
    """

    grouping: str = "upstream"
    unification: str = "upstream"


@dataclass(frozen=True)
class LayerPlan:
    """One layer: its spec as built (``initial``) and after unification (``spec``)."""

    name: str
    role: str
    initial: LayerSpec
    spec: LayerSpec
    backend: str


@dataclass(frozen=True)
class Plan:
    """Everything a boot would compute about the KV cache. Sizes in bytes, blocks in tokens."""

    model: ModelGeometry
    args: EngineArgs
    rules: VersionRules
    policies: Policies
    model_dtype: str
    kv_cache_dtype: str
    backend: AttentionBackend
    block_size: int
    block_decision: BlockSizeDecision | None
    mamba_page_size_bytes: int | None
    max_model_len: int
    layer_table: LayerTable
    decisions: tuple[Decision, ...]
    grouping: Grouping | None
    unify_error: UnifyError | None
    capacity: Capacity | None
    memory_error: NotEnoughMemory | None
    scheduler_block_size: int | None
    hash_block_size: int | None
    invariants: tuple[Invariant, ...]
    log: tuple[str, ...]
    drafter: Drafter | None = None
    notes: tuple[str, ...] = field(default=())
    pipeline_stages: tuple[tuple[str, ...], ...] = ()
    #: why ``log`` holds no KV-cache line, or what vLLM does after it (the report prints it under
    #: "vLLM would log:" in parentheses); ``""``: nothing to say
    log_note: str = ""

    @property
    def ok(self) -> bool:
        """True when the engine boots and every invariant holds."""
        return all(i.ok for i in self.invariants)

    @property
    def page_size_bytes(self) -> int | None:
        """The unified page, or ``None`` when unification failed."""
        if self.grouping is None or not (self.grouping.runs or self.grouping.packed):
            return None
        return self.grouping.page_size_bytes

    @property
    def layers(self) -> tuple[LayerPlan, ...]:
        """Every layer with its spec as built and as unified, in module order (target first)."""
        t = self.layer_table
        initial = t.initial.pairs()
        unified = dict(t.unified.pairs())
        out = []
        for i, (name, spec0) in enumerate(initial):
            spec = unified[name]
            serving = spec.backend if isinstance(spec, AttentionSpec) else spec.mamba_cache_mode
            out.append(LayerPlan(name, "target" if i < t.num_target else "drafter", spec0, spec, serving))
        return tuple(out)

    def layer(self, name: str) -> LayerPlan:
        """The :class:`LayerPlan` of layer ``name``.

        :raises KeyError: no such layer.
        """
        for lp in self.layers:
            if lp.name == name:
                return lp
        raise KeyError(name)


# --------------------------------------------------------------------------------------
# building blocks
# --------------------------------------------------------------------------------------


# --------------------------------------------------------------------------------------
# the plan
# --------------------------------------------------------------------------------------


def plan(
    model: ModelGeometry,
    args: EngineArgs | None = None,
    *,
    drafter: Drafter | None = None,
    policies: Policies | None = None,
) -> Plan:
    """Plan the KV cache vLLM builds for ``model`` under ``args``: the engine-start steps in
    vLLM's order, each a stage below.

    :raises InputError: an impossible flag or a model the flags cannot serve (the message
        names the flag or config field).
    """
    policies = policies or Policies()
    args = args or EngineArgs()
    args.validate()  # the API's arguments, checked before any stage reads them
    cfg = create_engine_config(model, args, drafter)
    if cfg.kv_cache_layout == "repeat-packed":
        # the side caches' layers refuse while vLLM builds them, before any DCP capacity check
        family_of(cfg.model).side_cache_specs(cfg.model, cfg.args, cfg.rules, cfg.model_dtype, [])
    # DCP against the caches (vLLM's refusals at the first capacity figure), or dryboot's limit
    check_dcp_layers(cfg.model, cfg.args, cfg.backend.name, cfg.rules.dcp_backends)
    log = list(cfg.log)
    return _PLANNERS[cfg.kv_cache_layout](cfg, policies, log)


def _plan_grouped(cfg: EngineConfig, policies: Policies, log: list[str]) -> Plan:
    """The plan of a model whose caches take vLLM's KV cache groups: the state a mamba layer
    keeps, the block size, the specs, the groups, the capacity, the invariants."""
    return _grouped_plan(cfg, _grouped_layout(cfg, policies, log), log)


@dataclass(frozen=True)
class _Layout:
    """What a grouped plan holds before the capacity (nothing of it reads the KV budget)."""

    policies: Policies
    mamba: MambaState | None
    block_size: int
    decision: BlockSizeDecision | None
    layers: LayerSet
    stages: list[frozenset[str]] | None
    table: LayerTable
    decisions: tuple[Decision, ...]
    grouping: Grouping | None
    unify_error: UnifyError | None


def _grouped_layout(cfg: EngineConfig, policies: Policies, log: list[str]) -> _Layout:
    """The state a mamba layer keeps, the block size, the specs and the groups (their lines
    appended to ``log``).

    :raises InputError: what vLLM refuses while laying them out."""
    model = cfg.model  # as the release reads the config
    # the state a mamba layer would keep, from the config: a hybrid class aligns its attention
    # block to it even where this config gives it no mamba layer
    mamba = mamba_state(model, cfg.args, cfg.model_dtype, cfg.rules) if model.has_mamba_state else None
    without_spec = model.mamba.align_state_without_spec and not cfg.rules.mamba_align_state_with_spec
    if model.mamba.short_conv is not None and cfg.rules.short_conv_spec_rows:
        without_spec = True  # Lfm2's get_mamba_state_shape_from_config passes no num_spec
    # the state the model class sizes the hybrid block from (get_mamba_state_{shape,dtype}_from_config)
    align = (
        mamba_state(model, cfg.args, cfg.model_dtype, cfg.rules, speculative_rows=not without_spec, hybrid_sizing=True)
        if mamba is not None
        else None
    )
    stages: list[frozenset[str]] | None = None
    if cfg.args.pipeline_parallel_size > 1:
        block_size, decision, layers, stages = _pipeline_stages(cfg, mamba, align, log)
        num_target = len(layers.order)
    else:
        check_stages_hold_moe(model, [range(model.num_decoder_layers)])
        block_size, decision = _block_sizes(cfg, align, log)
        layers, num_target = _kv_cache_specs(cfg, block_size, decision, mamba)
    sided = family_of(model).grouped_side_caches(model, cfg.args, layers.pairs())
    if sided is not None and len(sided) != len(layers.order):
        # the caches the family's attention layers keep beside their KV (GLM-5.3-Flash's on 0.30.0 / 0.31.0)
        num_target += len(sided) - len(layers.order)
        layers = LayerSet.from_pairs(list(sided.items()))
        stages = None if stages is None else _with_side_caches(stages, sided)
    unified, decisions, grouping, unify_error = _kv_cache_groups(cfg, layers, block_size, policies, log)
    if grouping is not None and cfg.rules.sparse_mla_pool_row_aligned:
        # 0.31.0: the pool's bytes per block are a multiple of every layer's block_stride_alignment
        major = cfg.args.device.capability[0]
        row_align = math.lcm(1, *(flat_row_alignment(s, major) for s in unified.specs))
        grouping = replace(grouping, pool_alignment=row_align)
    if unify_error is not None and (promoted := full_allocation_fallback(layers)) is not None:
        # get_kv_cache_groups catches the NotImplementedError and allocates the sliding-window
        # layers as full attention, all layers in one uniform-type group
        unified, grouping, unify_error = promoted, uniform_type_grouping(promoted), None
        log.append(
            "KV cache pages cannot be unified: the sliding-window layers are allocated as full attention "
            "(every token of max_model_len), one KV cache group of every layer; their attention still uses "
            "the window (full-allocation fallback)"
        )
    if unify_error is not None and not cfg.rules.pad_requires_block_stride:
        # 0.29+: vLLM raises the NotImplementedError when its fallback declines; dryboot's
        # unification of 0.29+'s padding rule is not verified as an engine failure, so it refuses
        raise InputError(
            "--vllm-version",
            cfg.rules.version,
            f"{unify_error}; vLLM {cfg.rules.version}'s full-allocation KV cache fallback does not apply "
            "(it needs MLA layers beside sliding-window layers, one block size and no other kind)",
        )
    table = LayerTable(initial=layers, unified=unified, num_target=num_target)
    return _Layout(
        policies, mamba, block_size, decision, layers, stages, table, tuple(decisions), grouping, unify_error
    )


def _grouped_plan(cfg: EngineConfig, layout: _Layout, log: list[str]) -> Plan:
    """The plan of ``layout`` under ``cfg``'s KV budget: the capacity and the invariants."""
    grouping, unify_error, stages, block_size = layout.grouping, layout.unify_error, layout.stages, layout.block_size
    capacity, memory_error, max_model_len = _kv_cache_capacity(cfg, grouping, log, stages)
    scheduler_block = hash_block = None
    invariants: list[Invariant] = []
    if unify_error is not None:
        invariants.append(
            Invariant(
                "page-unification",
                False,
                str(unify_error),
                "NotImplementedError in get_kv_cache_groups: the engine does not start",
            )
        )
    if grouping is not None and grouping.runs:
        scheduler_block, hash_block, hash_error = resolve_kv_cache_block_sizes(grouping, cfg.args, block_size)
        invariants.extend(
            check_invariants(grouping, scheduler_block, hash_block, hash_error, layout.table, cfg.backends)
        )
    invariants.extend(_fit_invariant(capacity, memory_error, max_model_len))
    mamba = layout.mamba
    return Plan(
        model=cfg.model,
        args=cfg.args,
        rules=cfg.rules,
        policies=layout.policies,
        model_dtype=cfg.model_dtype,
        kv_cache_dtype=cfg.kv_cache_dtype,
        backend=cfg.backend,
        block_size=block_size,
        block_decision=layout.decision,
        mamba_page_size_bytes=state_bytes(mamba[1], mamba[2]) if mamba is not None else None,
        max_model_len=max_model_len,
        layer_table=layout.table,
        decisions=layout.decisions,
        grouping=grouping,
        unify_error=unify_error,
        capacity=capacity,
        memory_error=memory_error,
        scheduler_block_size=scheduler_block,
        hash_block_size=hash_block,
        invariants=tuple(invariants),
        log=tuple(log),
        drafter=cfg.drafter,
        notes=cfg.notes + _parallel_notes(cfg.args, stages),
        pipeline_stages=tuple(tuple(n for n in layout.layers.order if n in s) for s in stages or ()),
    )


def plans_by_memory(
    model: ModelGeometry,
    args: EngineArgs,
    *,
    drafter: Drafter | None = None,
    policies: Policies | None = None,
) -> Callable[..., Plan]:
    """``at(**memory)``: :func:`plan` of ``model`` under ``args.evolve(**memory)``, for memory
    flags (:data:`~dryboot.vllm.config.resolve.MEMORY_FLAGS`) given as keywords. The engine
    config and the layout (mamba state, block size, specs, groups) read no memory flag: they are
    resolved once, and each call computes the capacity (a KV budget's bounds, its pinned pool).

    :raises InputError: what :func:`plan` refuses whatever the memory (at once), or a memory
        flag it refuses (at the call)."""
    policies = policies or Policies()
    args.validate()
    bare = args.evolve(**dict.fromkeys(MEMORY_FLAGS))
    cfg = create_engine_config(model, bare, drafter)
    if cfg.kv_cache_layout != "grouped":

        def replan(**memory: int | None) -> Plan:
            return plan(model, args.evolve(**memory), drafter=drafter, policies=policies)

        return replan
    log = list(cfg.log)
    layout = _grouped_layout(cfg, policies, log)

    def at(**memory: int | None) -> Plan:
        given = args.evolve(**memory)
        given.validate()
        return _grouped_plan(with_memory(cfg, given), layout, list(log))

    return at


def _plan_packed(cfg: EngineConfig, policies: Policies, log: list[str]) -> Plan:
    """The packed plan (:mod:`dryboot.vllm.kv_cache_utils.packed`, DeepSeek-V4's caches): the sparse SWA
    backend's cache block (``--block-size`` or 256 tokens), every cache's spec, the packed groups,
    then blocks and concurrency per pipeline stage.

    :raises InputError: what the release planned refuses (a KV cache dtype other than fp8 where
        it asserts one, a block below 128 tokens, ...) or what was not verified against it
        (:func:`dryboot.vllm.kv_cache_utils.packed.check_engine_config`).
    """
    from dryboot.vllm.kv_cache_utils import packed as P  # at call: only DeepSeek-V4 plans load it (~8 ms)

    model, args = cfg.model, cfg.args
    caches = P.packed_caches(model)
    block, layout, mla = P.check_engine_config(cfg, log)
    num_mtp, hidden = P.drafter_layers(cfg, block)
    pairs = P.layer_specs(caches, block, num_mtp, layout, mla) + hidden
    specs = dict(pairs)
    try:
        groups = P.group_specs(specs, hidden_apart=cfg.rules.version in P.POOLED)
    except ValueError as exc:
        raise InputError("--model", model.source, f"{model.architecture}: {exc}") from None
    stage_names = P.stage_layers(pairs, len(caches.compress_ratios), num_mtp, args)
    P.check_stage_layouts(cfg, stage_names)
    workers: list[frozenset[str] | None] = [None] if stage_names is None else list(stage_names)
    kv_groups = P.kv_groups(groups, specs)
    stride = P.block_stride(P.worker_groups(groups, workers[0]), specs, P.pool_rules(cfg))
    grouping = Grouping(
        runs=(),
        group_size=max(len(g) for g in groups.groups),
        path="packed",
        log=(),
        packed=kv_groups,
        packed_stride=stride,
    )
    capacity, memory_error, max_model_len = P.engine_capacity(cfg, groups, specs, workers, log)
    layer_set = LayerSet.from_pairs(pairs)
    table = LayerTable(
        initial=layer_set, unified=layer_set, num_target=len(P.layer_specs(caches, block, 0, layout, mla))
    )
    hash_block = min(g.block_size for g in kv_groups) if args.enable_prefix_caching else block
    fit = _CacheFit(block, max_model_len, capacity, memory_error, hash_block)
    return _own_backend_plan(cfg, policies, mla.kv_cache_dtype, P.SPARSE_SWA, table, grouping, fit, log, stage_names)


def _plan_repeat_packed(cfg: EngineConfig, policies: Policies, log: list[str]) -> Plan:
    """The repeat-pattern packed plan (:mod:`dryboot.vllm.kv_cache_utils.repeat_packed`, vLLM
    0.33.0's ``_get_packed_kv_cache_groups``): the family's layers (its ``packed_layers`` hook:
    Step5's DSA caches, Dots3-Note's sliding-window and padded sparse MLA), then the pool's blocks
    and concurrency per pipeline stage.

    :raises InputError: what the release refuses of the caches or was not verified against it
        (the family's hook).
    """
    from dryboot.vllm.kv_cache_utils import repeat_packed as R  # at call: only these families load it

    family = family_of(cfg.model)
    if not family.has_packed_layers():
        # a hybrid model whose attention layers keep caches beside their KV (Qwen4-Exp's QSA layers)
        return _plan_hybrid_repeat_packed(cfg, policies, log)
    packed: R.PackedLayers = family.packed_layers(cfg, log)
    specs, groups = packed.specs, packed.groups
    workers: list[frozenset[str] | None] = [None] if packed.stages is None else list(packed.stages)
    grouping, max_model_len, capacity, memory_error = _repeat_packed_pools(cfg, groups, specs, workers, log)
    layer_set = LayerSet.from_pairs(list(specs.items()))
    table = LayerTable(initial=layer_set, unified=layer_set, num_target=packed.num_target)
    fit = _CacheFit(packed.block, max_model_len, capacity, memory_error, packed.hash_block or packed.block)
    return _own_backend_plan(
        cfg, policies, packed.kv_cache_dtype, packed.backend, table, grouping, fit, log, packed.stages
    )


def _repeat_packed_pools(
    cfg: EngineConfig,
    groups: tuple[tuple[str, ...], ...],
    specs: Mapping[str, LayerSpec],
    workers: list[frozenset[str] | None],
    log: list[str],
) -> tuple[Grouping, int, Capacity | None, NotEnoughMemory | None]:
    """The packed grouping, then each pipeline stage's pool (``workers``: its layers, ``None`` for
    every layer) sized as vLLM 0.33.0 sizes them: ``--max-model-len -1``'s auto-fit, the blocks and
    concurrency, or the memory error (the plan reports it)."""
    from dryboot.vllm.kv_cache_utils import repeat_packed as R  # at call: only repeat-packed plans load it

    args = cfg.args
    in_flight = args.resolved_max_num_batched_tokens() * cfg.max_concurrent_batches
    pools = [
        R.Pool(groups, specs, in_flight, cfg.rules.reserve_null_block, cfg.rules.autofit_log_kv_memory, own)
        for own in workers
    ]
    grouping = Grouping(
        runs=(),
        group_size=max(len(g) for g in groups),
        path="packed",
        log=(),
        packed=R.kv_groups(groups, specs),
        packed_stride=pools[0].stride,
    )
    max_model_len = cfg.max_model_len
    available = args.available_kv_bytes()
    override = args.num_gpu_blocks_override
    capacity: Capacity | None = None
    memory_error: NotEnoughMemory | None = None
    if available is not None:
        try:
            if args.max_model_len == -1:
                max_model_len, line = R.auto_fit(pools, max_model_len, available, override)
                log.append(line)
            capacity = R.capacity(pools, max_model_len, available, override)
            log.extend(capacity.log)
        except NotEnoughMemory as exc:
            memory_error = exc
    return grouping, max_model_len, capacity, memory_error


def _plan_hybrid_repeat_packed(cfg: EngineConfig, policies: Policies, log: list[str]) -> Plan:
    """The repeat-pattern packed plan of a hybrid model whose attention layers keep caches beside
    their KV (Qwen4-Exp's QSA layers, vLLM 0.33.0): the block and the Gated DeltaNet states as the
    hybrid alignment lays them out (the grouped layout), the family's side caches
    (``Family.side_cache_specs``), then 0.33.0's packed groups and the pool's blocks and concurrency
    (:mod:`dryboot.vllm.kv_cache_utils.repeat_packed`).

    :raises InputError: what the release refuses of the side caches, or was not verified."""
    from dryboot.vllm.kv_cache_utils import repeat_packed as R  # at call: only repeat-packed plans load it

    model, args = cfg.model, cfg.args
    family = family_of(model)
    layout_log: list[str] = []
    layout = _grouped_layout(cfg, policies, layout_log)
    # get_kv_cache_groups returns the packed groups before the uniform-page grouping: its "Add N padding
    # layers" lines are never logged
    grouping_lines = set(layout.grouping.log) if layout.grouping is not None else set()
    log.extend(line for line in layout_log if line not in grouping_lines)
    pairs = layout.layers.pairs()
    if _gdn_checkpoints(cfg):  # one checkpoint page a request per GDN state (as gdn_align_pages counts)
        pairs = [(n, _with_checkpoint(s)) for n, s in pairs]
    specs = family.side_cache_specs(model, args, cfg.rules, cfg.model_dtype, pairs)
    # under pipeline parallelism the groups span every stage's layers and each stage's worker sizes its
    # own pool from the layers it holds (the side caches beside its decoder layers' own)
    stages = None if layout.stages is None else _with_side_caches(layout.stages, specs)
    groups = family.own_groups(model, specs, stages) or R.group_specs(specs)
    workers: list[frozenset[str] | None] = [None] if stages is None else list(stages)
    grouping, max_model_len, capacity, memory_error = _repeat_packed_pools(cfg, groups, specs, workers, log)
    layer_set = LayerSet.from_pairs(list(specs.items()))
    table = LayerTable(initial=layer_set, unified=layer_set, num_target=len(specs))
    block = layout.block_size
    if cfg.rules.engine_block_all_groups:  # 0.29.0: the ring's block too sets the engine's
        block = min(block, *(g.block_size for g in grouping.packed))
    fit = _CacheFit(block, max_model_len, capacity, memory_error, block)
    mamba = layout.mamba
    plan = _own_backend_plan(cfg, policies, cfg.kv_cache_dtype, cfg.backend, table, grouping, fit, log, stages)
    # the scheduler's and the prefix-cache hash block: the lcm of every group's block (a Mamba group
    # without prefix caching keeps max_model_len tokens a block: 24,576 for 8,192, 4 and 48; recorded)
    lcm = math.lcm(*(g.block_size for g in grouping.packed))
    return replace(
        plan,
        block_decision=layout.decision,
        mamba_page_size_bytes=state_bytes(mamba[1], mamba[2]) if mamba is not None else None,
        scheduler_block_size=lcm,
        hash_block_size=lcm,
    )


def _with_side_caches(stages: list[frozenset[str]], specs: Mapping[str, LayerSpec]) -> list[frozenset[str]]:
    """Each pipeline stage's cache layers: its own, and every side cache of a decoder layer it holds
    (a name sharing that layer's ``<prefix>.layers.<i>.`` path, GLM-5.3-Flash's indexer caches)."""
    held = {_decoder_path(n): s for s, names in enumerate(stages) for n in names}
    out = [set(names) for names in stages]
    for name in specs:
        path = _decoder_path(name)
        if path is not None and path in held:
            out[held[path]].add(name)
    return [frozenset(names) for names in out]


def _decoder_path(name: str) -> str | None:
    """``<prefix>.layers.<i>`` of a layer name, ``None`` when it names no decoder layer."""
    head, sep, tail = name.partition(".layers.")
    index = tail.split(".", 1)[0]
    return f"{head}{sep}{index}" if sep and index.isdigit() else None


def _with_checkpoint(spec: LayerSpec) -> LayerSpec:
    """A Gated DeltaNet state with its prefill checkpoint page (one a request), else ``spec``."""
    if isinstance(spec, MambaSpec) and spec.layer_kind is LayerKind.GDN:
        return replace(spec, num_prefill_checkpoint_blocks=1)
    return spec


@dataclass(frozen=True)
class _CacheFit:
    """What a packed planner computed: the cache block (tokens, the scheduler's too), the length
    planned, the capacity or vLLM's memory error, and the prefix-cache hash block (tokens)."""

    block: int
    max_model_len: int
    capacity: Capacity | None
    memory_error: NotEnoughMemory | None
    hash_block: int


def _own_backend_plan(
    cfg: EngineConfig,
    policies: Policies,
    kv_cache_dtype: str,
    backend: AttentionBackend,
    table: LayerTable,
    grouping: Grouping,
    fit: _CacheFit,
    log: list[str],
    stage_names: list[frozenset[str]] | None,
) -> Plan:
    """The :class:`Plan` of a model whose layers pick their backend and cache layout themselves
    (the packed and repeat-packed planners): no hybrid block decision, no mamba page, no unifying
    step; the generic ``--attention-backend`` note does not apply. ``stage_names``: each pipeline
    stage's layers (``None``: one stage)."""
    order = table.initial.order
    return Plan(
        model=cfg.model,
        args=cfg.args,
        rules=cfg.rules,
        policies=policies,
        model_dtype=cfg.model_dtype,
        kv_cache_dtype=kv_cache_dtype,
        backend=backend,
        block_size=fit.block,
        block_decision=None,
        mamba_page_size_bytes=None,
        max_model_len=fit.max_model_len,
        layer_table=table,
        decisions=(),
        grouping=grouping,
        unify_error=None,
        capacity=fit.capacity,
        memory_error=fit.memory_error,
        scheduler_block_size=fit.block,
        hash_block_size=fit.hash_block,
        invariants=tuple(_fit_invariant(fit.capacity, fit.memory_error, fit.max_model_len)),
        log=tuple(log),
        drafter=cfg.drafter,
        notes=tuple(n for n in cfg.notes if "--attention-backend" not in n) + _parallel_notes(cfg.args, stage_names),
        pipeline_stages=tuple(tuple(n for n in order if n in st) for st in stage_names or ()),
    )


#: the planner of each ``EngineConfig.kv_cache_layout`` (``repeat-packed``:
#: :data:`dryboot.vllm.kv_cache_utils.repeat_packed.POLICY`)
_PLANNERS = {"grouped": _plan_grouped, "packed": _plan_packed, "repeat-packed": _plan_repeat_packed}


def _parallel_notes(args: EngineArgs, stages: list[frozenset[str]] | None) -> tuple[str, ...]:
    """What the figures mean under pipeline and data parallelism."""
    notes = []
    if stages:
        sizes = ", ".join(str(len(s)) for s in stages)
        notes.append(
            f"pipeline parallelism: {len(stages)} stages holding {sizes} KV cache layers; each stage's GPUs have "
            "the whole budget for their own layers and the engine keeps the fewest blocks of any stage "
            "(groups are counted over every layer, their layer lists are stage 0's in vLLM's log)"
        )
    if args.data_parallel_size > 1:
        notes.append(
            f"data parallelism: {args.data_parallel_size} engines, each planning this same KV cache; "
            "blocks, tokens and concurrency are per engine"
        )
    return tuple(notes)


def _gdn_checkpoints(cfg: EngineConfig) -> bool:
    """vLLM 0.33 on SM90: Gated DeltaNet layers in mamba ``align`` mode take FlashInfer's GDN
    prefill, which keeps prefill checkpoints every ``gdn_align_sm90`` tokens: the hybrid block
    is rounded to a multiple of it and each request holds one checkpoint page per GDN group
    (``qwen_gdn_linear_attn.py`` ``_checkpoint_alignment``, ``get_kv_cache_spec``)."""
    gdn = cfg.model.mamba.gdn
    if gdn is None or not gdn.prefill_checkpoints or cfg.mamba_cache_mode != "align":
        return False
    return bool(gdn_prefill_alignment(cfg.rules.gdn_align_sm90, cfg.args.device, gdn.head_k_dim))


def _block_sizes(cfg: EngineConfig, mamba: MambaState | None, log: list[str]) -> tuple[int, BlockSizeDecision | None]:
    """(attention block, hybrid alignment): the backend's block
    (``update_block_size_for_backend``) then, for attention + mamba models, the hybrid block and
    mamba padding (``Platform._align_hybrid_block_size``)."""
    model, args = cfg.model, cfg.args
    drafter_attention = cfg.drafter is not None and any(k.is_attention for k in cfg.drafter.model.kinds)
    if not (drafter_attention or any(k.is_attention for k in model.kinds)):
        # no attention layer on this worker (a pipeline stage of only mamba layers, an
        # attention-free model): Platform._find_non_ssm_backend finds no backend, and
        # update_block_size_for_backend returns before either phase: the block stays
        # --block-size or CacheConfig.DEFAULT_BLOCK_SIZE (16 tokens)
        return args.block_size or 16, None
    names = "/".join(cfg.backends) if cfg.rules.block_size_log_backends else None
    # Platform._find_non_ssm_backend: the backend of the first attention layer built (a sparse
    # MLA model's first layer is usually its indexer's key cache)
    first = next((k for k in model.layer_kinds if k is not LayerKind.NONE), None)
    phase1 = DEEPSEEK_V32_INDEXER if first is LayerKind.MLA_INDEXER else cfg.backend
    if first is LayerKind.MM3_INDEXER:
        # a MiniMax-M3 sparse layer's indexer cache registers first (a pipeline stage that
        # starts at a sparse layer): its backend addresses 128-token pages only
        phase1 = MINIMAX_M3_SPARSE_INDEXER
    own = family_of(model).block_backends(model, args, cfg.backend)
    if own and cfg.drafter is not None and cfg.drafter_backend is not None and cfg.drafter_backend not in own:
        # the drafter's layers are built after the target's (extract_hidden_states: CACHE_ONLY_ATTN)
        own = [*own, cfg.drafter_backend]
    if own and not cfg.rules.block_size_log_backends:
        # the family's layers bring their own backends (GLM-5.3-Flash's indexer and tail ring): before 0.31
        # the first one built (Platform._find_non_ssm_backend) picks the block and its kernel blocks align it
        phase1 = own[0]
        block_size, phase1_log = preferred_block_size(phase1, args.block_size)
    elif own:
        # 0.31+: a block every one addresses; the hybrid alignment takes the first's kernel blocks
        block_size, phase1_log = preferred_block_size_for_backends(own, args.block_size)
        phase1 = own[0]
    elif LayerKind.MM3_INDEXER in model.kinds and cfg.rules.block_size_log_backends:
        # 0.31+: a block every backend addresses (MiniMax-M3's own backends take 128-token pages;
        # checked against vLLM 0.33.0 for this model only); 0.28.0 keeps the first layer's preference
        block_size, phase1_log = preferred_block_size_for_backends(list(cfg.backends.values()), args.block_size)
    elif names is not None and cfg.drafter_backend is not None and cfg.drafter_backend.name != cfg.backend.name:
        # 0.31+: a block every backend addresses, the drafter's among them (its FlashAttention layers
        # beside FA4's head-256 kernel prefer the kernel's pages whatever the target's backend)
        block_size, phase1_log = preferred_block_size_for_backends(list(cfg.backends.values()), args.block_size)
    else:
        block_size, phase1_log = preferred_block_size(phase1, args.block_size, all_backends=names)
    log.extend(phase1_log)
    if mamba is None or not model.is_hybrid:
        # alignment needs a hybrid model class (ModelConfig.is_hybrid)
        return block_size, None
    mla = model.use_mla or model.attn.mla_config  # vLLM's ModelConfig.use_mla
    full = model.attention(LayerKind.MLA if mla else LayerKind.FULL)
    quant, torch_dtype, content = kv_layout(
        cfg.kv_cache_dtype,
        cfg.model_dtype,
        full.head_dim,
        0 if mla else full.head_dim_v,
        args.custom_dtype(cfg.kv_cache_dtype),
    )
    if mla and quant.is_per_token_head:
        # _align_hybrid_block_size sizes an MLA model's token as MLAAttentionSpec does: the latent's
        # elements in the cache dtype's torch dtype (uint8 / int8), no per-token-head packing or scales
        content = full.head_dim * dtype_bytes(torch_dtype)
    heads = model.kv_heads_per_rank(LayerKind.MLA if mla else LayerKind.FULL, args.tensor_parallel_size)
    decision = align_hybrid_block_size(
        block_size=block_size,
        attn_page_size_1_token=heads * content,
        # the larger of the model class's Mamba pages (get_mamba_specs_from_config: Qwen4-Exp's PLE state)
        mamba_page_size=max(
            (state_bytes(mamba[1], mamba[2]), *family_of(model).alignment_mamba_pages(model, args, mamba[2][0]))
        ),
        backend=phase1 if own else cfg.backend,
        mamba_cache_mode=cfg.mamba_cache_mode,
        use_mla=mla,
        mamba_chunk_size=model.mamba.mamba_chunk_size,
        # get_mamba_prefill_checkpoint_alignment reads this worker's own mamba layers: a pipeline
        # stage without Gated DeltaNet layers takes no checkpoint alignment (0.33 aligns per worker)
        extra_kernel_alignments=(cfg.rules.gdn_align_sm90,)
        if _gdn_checkpoints(cfg) and cfg.rules.gdn_align_sm90 and LayerKind.GDN in model.kinds
        else tuple(b.smallest_kernel_block for b in own if b.kernel_blocks),
        max_model_len=cfg.max_model_len,
        indexer_alignment=family_of(model).indexer_block_alignment(model, args),
    )
    log.extend(decision.log)
    return decision.block_size, decision


def _stage_without_moe(model: ModelGeometry, ranges: list[range]) -> int | None:
    """The first pipeline stage (its decoder layers ``ranges[s]``) that builds no MoE block of a
    model class that needs one on every stage (``ParallelTraits.first_moe_layer`` /
    ``moe_layers``), or ``None``."""
    first_moe, moe = model.parallel.first_moe_layer, model.parallel.moe_layers
    for s, r in enumerate(ranges):
        if moe is not None and not set(r).intersection(moe):
            return s
        if moe is None and first_moe is not None and (not r or r[-1] < first_moe):
            return s
    return None


def check_stages_hold_moe(model: ModelGeometry, ranges: list[range]) -> None:
    """What an MoE model class's ``set_moe_parameters`` (``Qwen3MoeForCausalLM``,
    ``MixtralForCausalLM``, ``Glm4MoeForCausalLM``, ``Lfm2MoeForCausalLM``, ...) raises while each
    pipeline stage (its decoder layers ``ranges[s]``; one stage of every layer without pipeline
    parallelism) is built: a stage without an MoE block, an empty one included.

    :raises InputError: naming ``--pipeline-parallel-size``, the stage and vLLM's RuntimeError
        (``ParallelTraits.no_moe_layer``)."""
    dense_stage = _stage_without_moe(model, ranges)
    if dense_stage is None:
        return
    r = ranges[dense_stage]
    held = "no decoder layer" if not r else f"only dense layers ({r.start} to {r[-1]})"
    words = model.parallel.no_moe_layer
    raise InputError(
        "--pipeline-parallel-size",
        str(len(ranges)),
        f"pipeline stage {dense_stage} holds {held}: vLLM's {model.architecture} finds no MoE layer on that stage "
        f"(RuntimeError{': ' + words if words else ''})",
    )


def _pipeline_stages(
    cfg: EngineConfig, mamba: MambaState | None, align: MambaState | None, log: list[str]
) -> tuple[int, BlockSizeDecision | None, LayerSet, list[frozenset[str]]]:
    """(stage 0's block, its hybrid alignment, every stage's layers merged, each stage's layer
    names): each pipeline stage is a worker that builds only its layers
    (``get_pp_indices``; the drafter's layers on the last stage) and aligns its own block to them
    (``update_block_size_for_backend`` runs per worker: a stage without attention layers keeps the
    plain block); the engine merges the workers' specs (``get_kv_cache_configs``).

    :raises InputError: a bad ``VLLM_PP_LAYER_PARTITION``.
    """

    model, args = cfg.model, cfg.args
    pp = args.pipeline_parallel_size
    check_drafter_pp(pp, cfg.drafter.method if cfg.drafter else None, cfg.rules.pp_draft_models)
    ranges = pp_stage_ranges(model.num_decoder_layers, pp, args.pp_layer_partition)
    stage_of = {i: s for s, r in enumerate(ranges) for i in r}
    refusal = model_pp_refusal(model, cfg.rules)
    if refusal is not None:
        raise pp_refused(pp, model.architecture, refusal)
    check_stages_hold_moe(model, ranges)
    levels = model.parallel.deepstack_levels
    if levels and any(r.start < levels for r in ranges[1:]):
        # CohereCompassForConditionalGeneration: every later stage adds no deepstack input
        raise InputError(
            "--pipeline-parallel-size",
            str(pp),
            f"a later stage starts before layer {levels} ({levels} deepstack levels): vLLM's "
            f"{model.architecture} asserts start_layer >= its deepstack levels (AssertionError)",
        )
    unbuildable = model.naming.unbuildable
    for layer, target in model.kv_sharing:
        if unbuildable is not None and unbuildable[0] < layer:
            break  # the stages build their layers in order: an unbuildable one fails first
        if stage_of[layer] != stage_of[target]:
            raise InputError(
                "--pipeline-parallel-size",
                str(pp),
                f"Specified KV sharing target layer for layer {layer} is not valid: target layer {target} is on "
                f"pipeline stage {stage_of[target]}, not {stage_of[layer]} (not a valid Attention layer there)",
            )
    if unbuildable is not None:
        raise InputError(model.source, unbuildable[1], unbuildable[2])
    pairs: list[tuple[str, LayerSpec]] = []
    stages: list[frozenset[str]] = []
    stage_backends: list[set[str]] = []
    blocks: list[int] = []
    first: tuple[int, BlockSizeDecision | None] | None = None
    for s, layers_of_stage in enumerate(ranges):
        kinds = tuple(
            k if model.decoder_layer(i) in layers_of_stage else LayerKind.NONE for i, k in enumerate(model.layer_kinds)
        )
        # the whole drafter sits on the last stage (GPUModelRunner: "the entire draft model on
        # the last PP rank")
        drafter = cfg.drafter if s == len(ranges) - 1 else None
        stage_cfg = replace(cfg, model=replace(model, layer_kinds=kinds), drafter=drafter)
        stage_log: list[str] = []
        block, decision = _block_sizes(stage_cfg, align, stage_log)
        blocks.append(block)
        stage_layers, _ = _kv_cache_specs(stage_cfg, block, decision, mamba)
        if first is None:
            first = (block, decision)
            log.extend(stage_log)
        else:
            # every stage's worker logs its own block lines: a later stage's that differ (a stage
            # without a sparse indexer names only its MLA backend) are printed too, each once
            log.extend(line for line in stage_log if line not in log)
        pairs.extend(stage_layers.pairs())
        stages.append(frozenset(stage_layers.order))
        # a worker without any layer falls back to the default attention backend's declaration
        # (get_current_attn_backends); one of mamba layers only declares nothing
        if not stage_layers.order:
            attention_free = (
                not any(k.is_attention for k in model.kinds) and args.custom_dtype(cfg.kv_cache_dtype) is None
            )
            check_layerless_stage_backend(
                args.attention_backend,
                cfg.backend,
                cfg.kv_cache_dtype,
                cfg.rules,
                model.source,
                AttentionSelectorConfig(
                    0, cfg.kv_cache_dtype, capability=args.device.capability, cubin=args.flashinfer_cubin
                )
                if attention_free
                else None,
            )
        stage_backends.append(
            {s.backend for s in stage_layers.specs if isinstance(s, AttentionSpec)}
            if stage_layers.order
            else {cfg.backend.name}
        )
    assert first is not None
    check_stage_layouts(stage_backends, args.device.capability, cfg.rules)
    return first[0], first[1], LayerSet.from_pairs(pairs), stages


def _kv_cache_specs(
    cfg: EngineConfig, block_size: int, decision: BlockSizeDecision | None, mamba: MambaState | None
) -> tuple[LayerSet, int]:
    """Every layer's spec, target then drafter (``GPUModelRunner.get_kv_cache_spec``), and the
    number of target layers."""
    model, args = cfg.model, cfg.args
    if decision is not None:
        mamba_block, mamba_padded = decision.mamba_block_size, decision.mamba_page_size_padded
    else:
        # MambaModelConfig: with prefix caching (align or all) the mamba block is the cache block
        mamba_block = block_size if cfg.mamba_cache_mode in ("align", "all") else cfg.max_model_len
        mamba_padded = None
    layers = build_layers(
        model,
        args,
        kv_cache_dtype=cfg.kv_cache_dtype,
        model_dtype=cfg.model_dtype,
        backend=cfg.backend,
        block_size=block_size,
        mamba=mamba,
        mamba_block=mamba_block,
        mamba_mode=cfg.mamba_cache_mode,
        mamba_padded=mamba_padded,
        rules=cfg.rules,
        side_states=family_of(model).side_mamba_states(model, args, mamba[2][0]) if mamba is not None else None,
        # a PLE layer exports a prefill checkpoint where the Gated DeltaNet layers do (the
        # scheduler's alignment is set only when every mamba layer has one)
        side_checkpoints=1 if _gdn_checkpoints(cfg) else 0,
    )
    num_target = len(layers.order)
    d = cfg.drafter
    if d is not None and cfg.drafter_backend is not None and cfg.drafter_kv_cache_dtype and cfg.drafter_model_dtype:
        d_layers = build_layers(
            d.model,
            args,
            kv_cache_dtype=cfg.drafter_kv_cache_dtype,
            model_dtype=cfg.drafter_model_dtype,
            backend=cfg.drafter_backend,
            block_size=d.block_size or block_size,
            mamba=None,
            mamba_block=block_size,
            mamba_mode=cfg.mamba_cache_mode,
            mamba_padded=None,
            rules=cfg.rules,
            sliding_block=d.block_size,
            prefix=d.layer_prefix,
        )
        if cfg.rules.kernel_block_stride_alignment and cfg.drafter_backend.name != cfg.backend.name:
            # 0.32+: each backend records its fixed kernel blocks in its layers' specs, which then differ
            layers = kernel_stride_aligned(layers, cfg.backend)
            d_layers = kernel_stride_aligned(d_layers, cfg.drafter_backend)
        layers = LayerSet.concat([layers, d_layers])
    return layers, num_target


def kernel_stride_aligned(layers: LayerSet, backend: AttentionBackend) -> LayerSet:
    """``layers`` as ``backend`` customizes their specs (vLLM 0.32+: ``v1/worker/utils.py``
    ``customize_attention_spec``): an attention spec with no block stride alignment of its own, whose layer
    the backend serves with fixed kernel blocks only (:meth:`AttentionBackend.for_head`), records the largest
    as its ``block_stride_alignment`` (``MultipleOf``, tokens), which spec equality compares. Applied where
    a drafter's backend is not the target's (the same backend records the same alignment on every layer)."""
    pairs: list[tuple[str, LayerSpec]] = []
    for name, spec in layers.pairs():
        if isinstance(spec, AttentionSpec) and spec.block_stride_alignment is None and spec.block_stride_bytes is None:
            blocks = backend.for_head(spec.head_size).kernel_blocks
            if blocks and not any(kb.multiple_of for kb in blocks):
                spec = replace(spec, block_stride_alignment=max(kb.size for kb in blocks))
        pairs.append((name, spec))
    return LayerSet.from_pairs(pairs)


def _kv_cache_groups(
    cfg: EngineConfig, layers: LayerSet, block_size: int, policies: Policies, log: list[str]
) -> tuple[LayerSet, list[Decision], Grouping | None, UnifyError | None]:
    """(unified layers, unification decisions, groups, unification failure):
    ``get_kv_cache_groups`` under the chosen policies."""

    grouping = uniform_path(layers)
    if grouping is not None:
        return layers, [], grouping, None
    # hidden-state cache layers stay out of page unification and grouping, then join aligned
    hidden: list[tuple[str, AttentionSpec]] = []
    rest = layers
    if any(isinstance(s, AttentionSpec) and s.layer_kind is LayerKind.HIDDEN_STATE for s in layers.specs):
        pairs = layers.pairs()
        hidden = [(n, s) for n, s in pairs if isinstance(s, AttentionSpec) and s.layer_kind is LayerKind.HIDDEN_STATE]
        rest = LayerSet.from_pairs([(n, s) for n, s in pairs if s.layer_kind is not LayerKind.HIDDEN_STATE])
    try:
        unified, decisions = unify_layer_set_with_policy(
            rest, policies.unification, cfg.rules, primary_block=block_size, backends=cfg.backends
        )
        grouping = group_layers(unified, policies.grouping)
    except UnifyError as exc:
        return layers, [], None, exc
    # a promotion policy's own line, as the patched tree logs it while unifying
    log.extend(d.message for d in decisions if d.action == "promote")
    if hidden:
        try:
            grouping, scaled, aligned = add_hidden_state_groups(
                grouping, hidden, cfg.rules.hidden_state_min_page, cfg.rules.hidden_state_block_divides
            )
        except ValueError as exc:  # a hidden-state token larger than the common page
            return layers, [], None, UnifyError(hidden[0][0], str(exc))
        unified = LayerSet.from_pairs([*((n, scaled.get(s, s)) for n, s in unified.pairs()), *aligned])
        # 0.30+ scales the others' blocks for the hidden states; a page left unpadded then differs
        check_mixed_page_sizes(
            (s.page_size_bytes for s in unified.specs),
            grouping.num_groups,
            cfg.backends,
            cfg.args.device.capability,
            cfg.rules,
            "--speculative-config",
        )
    log.extend(grouping.log)
    return unified, decisions, grouping, None


def _kv_cache_capacity(
    cfg: EngineConfig, grouping: Grouping | None, log: list[str], stages: list[frozenset[str]] | None = None
) -> tuple[Capacity | None, NotEnoughMemory | None, int]:
    """(capacity, not-enough-memory failure, final max_model_len): auto-fit, blocks and
    concurrency (``get_kv_cache_configs``, ``_auto_fit_max_model_len``), each pipeline stage
    (``stages``: its layer names) with its own share of the groups and the same budget.

    :raises InputError: a pipeline stage holds no KV cache layer.
    """
    args = cfg.args
    available = args.available_kv_bytes()
    max_model_len = cfg.max_model_len
    if grouping is None or not grouping.runs or available is None:
        return None, None, max_model_len
    # a stage of no layer: some releases' auto-fit and memory check skip it, and building its KV
    # cache config fails after them (get_kv_cache_configs); the others fail on it first
    try:
        # the memory check alone skips it: with --num-gpu-blocks-override or an auto-fit length the
        # empty stage fails first on every release (recorded: test_releases pp3-empty-lowmem-*)
        after = args.num_gpu_blocks_override is None and args.max_model_len != -1
        every = worker_shares(grouping, stages, allow_empty=after and cfg.rules.empty_stage_after_memory_check)
    except ValueError as exc:
        raise InputError("--pipeline-parallel-size", str(args.pipeline_parallel_size), str(exc)) from None
    empty = [i for i, share in enumerate(every) if share.group_size == 0]
    shares = [share for share in every if share.group_size]
    limits = SchedulerLimits(
        max_model_len=max_model_len,
        max_num_batched_tokens=args.resolved_max_num_batched_tokens(),
        max_concurrent_batches=cfg.max_concurrent_batches,
        mamba2_align_pages=cfg.rules.mamba2_align_pages,
        gdn_align_pages=3 if _gdn_checkpoints(cfg) else 2,
        decode_context_parallel_size=args.decode_context_parallel_size,
    )
    try:
        if args.max_model_len == -1:
            rules = cfg.rules
            max_model_len, line = auto_fit_max_model_len(
                grouping,
                limits,
                available,
                args.num_gpu_blocks_override,
                rules.reserve_null_block,
                rules.autofit_log_kv_memory,
                shares,
            )
            log.append(line)
            limits = replace(limits, max_model_len=max_model_len)
        capacity = compute_capacity(
            grouping,
            limits,
            available,
            args.num_gpu_blocks_override,
            cfg.rules.reserve_null_block,
            shares,
            split_log=cfg.rules.capacity_log_split,
        )
    except NotEnoughMemory as exc:
        return None, exc, max_model_len
    if empty:
        raise InputError("--pipeline-parallel-size", str(args.pipeline_parallel_size), empty_stage_message(empty[0]))
    log.extend(capacity.log)
    return capacity, None, max_model_len


def _fit_invariant(capacity: Capacity | None, error: NotEnoughMemory | None, max_model_len: int) -> list[Invariant]:
    if error is not None:
        return [Invariant("one-request-fits", False, str(error), "ValueError at engine start")]
    if capacity is None:
        return []
    detail = f"one {max_model_len:,}-token request needs {capacity.request_bytes:,} B of {capacity.available_bytes:,} B"
    return [Invariant("one-request-fits", True, detail)]

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

from dataclasses import dataclass, field, replace

from dryboot.errors import InputError
from dryboot.layers import LayerSet
from dryboot.vllm.backends import AttentionBackend
from dryboot.vllm.config.hf import LayerKind, ModelGeometry
from dryboot.vllm.config.resolve import Drafter, EngineConfig, create_engine_config
from dryboot.vllm.coordinator import Invariant, check_invariants, resolve_kv_cache_block_sizes
from dryboot.vllm.engine_args import EngineArgs
from dryboot.vllm.kv_cache_interface import (
    AttentionSpec,
    LayerSpec,
    state_bytes,
)
from dryboot.vllm.kv_cache_spec import MambaState, build_layers, kv_layout, mamba_state
from dryboot.vllm.kv_cache_utils.capacity import (
    Capacity,
    NotEnoughMemory,
    SchedulerLimits,
    auto_fit_max_model_len,
    compute_capacity,
)
from dryboot.vllm.kv_cache_utils.groups import Grouping, group_layers, uniform_path
from dryboot.vllm.kv_cache_utils.unify import Decision, UnifyError
from dryboot.vllm.platforms import BlockSizeDecision, align_hybrid_block_size, preferred_block_size
from dryboot.vllm.versions import VersionRules

__all__ = ["Drafter", "Invariant", "LayerPlan", "LayerTable", "Plan", "Policies", "plan"]


@dataclass(frozen=True)
class Policies:
    """The planner rules a downstream patch stack may change (see :mod:`dryboot.policies.promotion`).

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
class LayerTable:
    """Every layer, as built (``initial``) and as unified; the first ``num_target`` layers (in
    module order) are the target model's, the rest the drafter's."""

    initial: LayerSet
    unified: LayerSet
    num_target: int


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

    @property
    def ok(self) -> bool:
        """True when the engine boots and every invariant holds."""
        return all(i.ok for i in self.invariants)

    @property
    def page_size_bytes(self) -> int | None:
        """The unified page, or ``None`` when unification failed."""
        if self.grouping is None or not self.grouping.runs:
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
    cfg = create_engine_config(model, args or EngineArgs(), drafter)
    model = cfg.model  # as the release reads the config
    log = list(cfg.log)
    # the state a mamba layer would keep, from the config: a hybrid class aligns its attention
    # block to it even where this config gives it no mamba layer
    mamba = mamba_state(model, cfg.args, cfg.model_dtype) if model.has_mamba_state else None
    block_size, decision = _block_sizes(cfg, mamba, log)
    layers, num_target = _kv_cache_specs(cfg, block_size, decision, mamba)
    unified, decisions, grouping, unify_error = _kv_cache_groups(cfg, layers, block_size, policies, log)
    if unify_error is not None and not cfg.rules.pad_requires_block_stride:
        # 0.29+: get_kv_cache_groups catches the NotImplementedError and retries with a
        # full-allocation fallback (unify_kv_cache_spec_page_size), which is not modelled
        raise InputError(
            "--vllm-version",
            cfg.rules.version,
            f"{unify_error}; vLLM {cfg.rules.version} then retries with a full-allocation KV cache fallback, "
            "which dryboot does not model",
        )
    table = LayerTable(initial=layers, unified=unified, num_target=num_target)
    capacity, memory_error, max_model_len = _kv_cache_capacity(cfg, grouping, log)
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
        invariants.extend(check_invariants(grouping, scheduler_block, hash_block, hash_error, table, cfg.backends))
    invariants.extend(_fit_invariant(capacity, memory_error, max_model_len))
    return Plan(
        model=model,
        args=cfg.args,
        rules=cfg.rules,
        policies=policies,
        model_dtype=cfg.model_dtype,
        kv_cache_dtype=cfg.kv_cache_dtype,
        backend=cfg.backend,
        block_size=block_size,
        block_decision=decision,
        mamba_page_size_bytes=state_bytes(mamba[1], mamba[2]) if mamba is not None else None,
        max_model_len=max_model_len,
        layer_table=table,
        decisions=tuple(decisions),
        grouping=grouping,
        unify_error=unify_error,
        capacity=capacity,
        memory_error=memory_error,
        scheduler_block_size=scheduler_block,
        hash_block_size=hash_block,
        invariants=tuple(invariants),
        log=tuple(log),
        drafter=cfg.drafter,
        notes=cfg.notes,
    )


def _gdn_checkpoints(cfg: EngineConfig) -> bool:
    """vLLM 0.33 on SM90: Gated DeltaNet layers in mamba ``align`` mode take FlashInfer's GDN
    prefill, which keeps prefill checkpoints every ``gdn_align_sm90`` tokens: the hybrid block
    is rounded to a multiple of it and each request holds one checkpoint page per GDN group
    (``qwen_gdn_linear_attn.py`` ``_checkpoint_alignment``, ``get_kv_cache_spec``)."""
    return bool(cfg.rules.gdn_align_sm90) and cfg.model.gdn is not None and cfg.mamba_cache_mode == "align"


def _block_sizes(cfg: EngineConfig, mamba: MambaState | None, log: list[str]) -> tuple[int, BlockSizeDecision | None]:
    """(attention block, hybrid alignment): the backend's block
    (``update_block_size_for_backend``) then, for attention + mamba models, the hybrid block and
    mamba padding (``Platform._align_hybrid_block_size``)."""
    model, args = cfg.model, cfg.args
    names = "/".join(cfg.backends) if cfg.rules.block_size_log_backends else None
    block_size, phase1_log = preferred_block_size(cfg.backend, args.block_size, all_backends=names)
    log.extend(phase1_log)
    drafter_attention = cfg.drafter is not None and any(k.is_attention for k in cfg.drafter.model.kinds)
    if mamba is None or not model.is_hybrid or not (drafter_attention or any(k.is_attention for k in model.kinds)):
        # alignment needs a hybrid model class and some attention layer (target or drafter)
        # to take a backend from (Platform._find_non_ssm_backend)
        return block_size, None
    full = model.attention(LayerKind.MLA if model.use_mla else LayerKind.FULL)
    _, _, content = kv_layout(
        cfg.kv_cache_dtype,
        cfg.model_dtype,
        full.head_dim,
        0 if model.use_mla else full.head_dim_v,
        args.custom_dtype(cfg.kv_cache_dtype),
    )
    heads = model.kv_heads_per_rank(LayerKind.MLA if model.use_mla else LayerKind.FULL, args.tensor_parallel_size)
    decision = align_hybrid_block_size(
        block_size=block_size,
        attn_page_size_1_token=heads * content,
        mamba_page_size=state_bytes(mamba[1], mamba[2]),
        backend=cfg.backend,
        mamba_cache_mode=cfg.mamba_cache_mode,
        use_mla=model.use_mla,
        mamba_chunk_size=model.mamba_chunk_size,
        extra_kernel_alignments=(cfg.rules.gdn_align_sm90,)
        if cfg.rules.gdn_align_sm90 is not None and _gdn_checkpoints(cfg)
        else (),
        max_model_len=cfg.max_model_len,
    )
    log.extend(decision.log)
    return decision.block_size, decision


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
        layers = LayerSet.concat([layers, d_layers])
    return layers, num_target


def _kv_cache_groups(
    cfg: EngineConfig, layers: LayerSet, block_size: int, policies: Policies, log: list[str]
) -> tuple[LayerSet, list[Decision], Grouping | None, UnifyError | None]:
    """(unified layers, unification decisions, groups, unification failure):
    ``get_kv_cache_groups`` under the chosen policies."""
    from dryboot.policies.promotion import unify_layer_set_with_policy  # local: keeps import graph acyclic

    grouping = uniform_path(layers)
    if grouping is not None:
        return layers, [], grouping, None
    try:
        unified, decisions = unify_layer_set_with_policy(
            layers, policies.unification, cfg.rules, primary_block=block_size, backends=cfg.backends
        )
        grouping = group_layers(unified, policies.grouping)
    except UnifyError as exc:
        return layers, [], None, exc
    log.extend(grouping.log)
    return unified, decisions, grouping, None


def _kv_cache_capacity(
    cfg: EngineConfig, grouping: Grouping | None, log: list[str]
) -> tuple[Capacity | None, NotEnoughMemory | None, int]:
    """(capacity, not-enough-memory failure, final max_model_len): auto-fit, blocks and
    concurrency (``get_kv_cache_configs``, ``_auto_fit_max_model_len``)."""
    args = cfg.args
    available = args.available_kv_bytes()
    max_model_len = cfg.max_model_len
    if grouping is None or not grouping.runs or available is None:
        return None, None, max_model_len
    limits = SchedulerLimits(
        max_model_len=max_model_len,
        max_num_batched_tokens=args.resolved_max_num_batched_tokens(),
        max_concurrent_batches=args.max_concurrent_batches,
        mamba2_align_pages=cfg.rules.mamba2_align_pages,
        gdn_align_pages=3 if _gdn_checkpoints(cfg) else 2,
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
            )
            log.append(line)
            limits = replace(limits, max_model_len=max_model_len)
        capacity = compute_capacity(
            grouping,
            limits,
            available,
            args.num_gpu_blocks_override,
            cfg.rules.reserve_null_block,
            split_log=cfg.rules.capacity_log_split,
        )
    except NotEnoughMemory as exc:
        return None, exc, max_model_len
    log.extend(capacity.log)
    return capacity, None, max_model_len


def _fit_invariant(capacity: Capacity | None, error: NotEnoughMemory | None, max_model_len: int) -> list[Invariant]:
    if error is not None:
        return [Invariant("one-request-fits", False, str(error), "ValueError at engine start")]
    if capacity is None:
        return []
    detail = f"one {max_model_len:,}-token request needs {capacity.request_bytes:,} B of {capacity.available_bytes:,} B"
    return [Invariant("one-request-fits", True, detail)]

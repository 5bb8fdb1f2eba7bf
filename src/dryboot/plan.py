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

from dryboot.layers import LayerSet
from dryboot.vllm.backends import AttentionBackend
from dryboot.vllm.config.hf import LayerKind, ModelGeometry
from dryboot.vllm.config.resolve import (
    Drafter,
    backend_for,
    check_tensor_parallel,
    derive_max_model_len,
    model_dtype_of,
    mtp_drafter,
    resolve_mamba_cache_mode,
)
from dryboot.vllm.coordinator import Invariant, check_invariants, resolve_kv_cache_block_sizes
from dryboot.vllm.engine_args import EngineArgs
from dryboot.vllm.kv_cache_interface import (
    AttentionSpec,
    LayerSpec,
    state_bytes,
)
from dryboot.vllm.kv_cache_spec import MAMBA_KINDS, build_layers, kv_layout, mamba_state
from dryboot.vllm.kv_cache_utils.capacity import (
    Capacity,
    NotEnoughMemory,
    SchedulerLimits,
    auto_fit_max_model_len,
    compute_capacity,
)
from dryboot.vllm.kv_cache_utils.groups import Grouping, group_layers, uniform_path
from dryboot.vllm.kv_cache_utils.unify import Decision, UnifyError
from dryboot.vllm.models.registry import family_for
from dryboot.vllm.platforms import BlockSizeDecision, align_hybrid_block_size, preferred_block_size
from dryboot.vllm.versions import VersionRules, rules_for

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
    """Plan the KV cache vLLM builds for ``model`` under ``args``.

    :raises InputError: an impossible flag or a model the flags cannot serve (the message
        names the flag or config field).
    """
    from dryboot.policies.promotion import unify_layer_set_with_policy  # local: keeps import graph acyclic

    args = args or EngineArgs()
    policies = policies or Policies()
    args.validate()
    rules = rules_for(args.vllm_version)
    log: list[str] = []
    notes: list[str] = list(args.assumptions())
    if rules.version != args.vllm_version and rules.version != f"{args.vllm_version}.0":
        notes.append(
            f"vLLM {args.vllm_version} is planned with the rules of {rules.version}, the newest known "
            "version at or before it (only 0.28.0 is verified against vLLM itself)"
        )

    check_tensor_parallel(model, args.tensor_parallel_size)
    family_for(model.architecture, model.source).verify(model, args.tensor_parallel_size)
    if drafter is not None:
        check_tensor_parallel(drafter.model, args.tensor_parallel_size)
        family_for(drafter.model.architecture, drafter.model.source).verify(drafter.model, args.tensor_parallel_size)
    if drafter is None and args.speculative_method is not None and args.speculative_method.endswith("mtp"):
        drafter = mtp_drafter(model, args.speculative_method)
    model_dtype = model_dtype_of(model, args)
    kv_dtype = args.kv_cache_dtype
    if kv_dtype == "auto" and model.quant_kv_cache_dtype is not None:
        kv_dtype = model.quant_kv_cache_dtype
    backend = backend_for(args.attention_backend, kv_dtype, model, args, "--attention-backend")
    max_model_len = derive_max_model_len(model, args)
    has_mamba = not MAMBA_KINDS.isdisjoint(model.kinds)
    mamba_mode = resolve_mamba_cache_mode(model, args, rules, log) if has_mamba else "none"

    block_size, phase1_log = preferred_block_size(backend, args.block_size)
    log.extend(phase1_log)
    mamba = mamba_state(model, args, model_dtype) if has_mamba else None
    mamba_page: int | None = None
    decision: BlockSizeDecision | None = None
    mamba_padded: int | None = None
    mamba_block = block_size
    if mamba is not None:
        mamba_page = state_bytes(mamba[1], mamba[2])
    if model.is_hybrid and mamba_page is not None:
        full = model.attention(LayerKind.MLA if model.use_mla else LayerKind.FULL)
        _, _, content = kv_layout(
            kv_dtype, model_dtype, full.head_dim, 0 if model.use_mla else full.head_dim_v, args.custom_dtype(kv_dtype)
        )
        heads = 1 if model.use_mla else max(1, full.num_kv_heads // args.tensor_parallel_size)
        decision = align_hybrid_block_size(
            block_size=block_size,
            attn_page_size_1_token=heads * content,
            mamba_page_size=mamba_page,
            backend=backend,
            mamba_cache_mode=mamba_mode,
            use_mla=model.use_mla,
            mamba_chunk_size=model.mamba2.chunk_size if model.mamba2 else None,
            max_model_len=max_model_len,
        )
        block_size = decision.block_size
        mamba_padded = decision.mamba_page_size_padded
        mamba_block = decision.mamba_block_size
        log.extend(decision.log)
    elif mamba_page is not None:
        mamba_block = block_size if mamba_mode == "align" else max_model_len

    layers = build_layers(
        model,
        args,
        kv_cache_dtype=kv_dtype,
        model_dtype=model_dtype,
        backend=backend,
        block_size=block_size,
        mamba=mamba,
        mamba_block=mamba_block,
        mamba_mode=mamba_mode,
        mamba_padded=mamba_padded,
        rules=rules,
    )
    num_target = len(layers.order)
    drafter_backend: AttentionBackend | None = None
    if drafter is not None:
        d_dtype = drafter.kv_cache_dtype or kv_dtype
        d_backend_name = drafter.attention_backend or (
            args.attention_backend if drafter.kv_cache_dtype is None else None
        )
        drafter_backend = backend_for(
            d_backend_name, d_dtype, drafter.model, args, "--speculative-config attention_backend"
        )
        d_model_dtype = model_dtype_of(drafter.model, args)
        d_layers = build_layers(
            drafter.model,
            args,
            kv_cache_dtype=d_dtype,
            model_dtype=d_model_dtype,
            backend=drafter_backend,
            block_size=drafter.block_size or block_size,
            mamba=None,
            mamba_block=block_size,
            mamba_mode=mamba_mode,
            mamba_padded=None,
            rules=rules,
            sliding_block=drafter.block_size,
            prefix=drafter.layer_prefix,
        )
        layers = LayerSet.concat([layers, d_layers])

    backends_by_name = {backend.name: backend}
    if drafter_backend is not None:
        backends_by_name.setdefault(drafter_backend.name, drafter_backend)
    grouping = uniform_path(layers)
    unified = layers
    decisions: list[Decision] = []
    unify_error: UnifyError | None = None
    if grouping is None:
        try:
            unified, decisions = unify_layer_set_with_policy(
                layers,
                policies.unification,
                rules,
                primary_block=block_size,
                backends=backends_by_name,
            )
            grouping = group_layers(unified, policies.grouping)
            log.extend(grouping.log)
        except UnifyError as exc:
            unify_error = exc
    layer_table_ = LayerTable(initial=layers, unified=unified, num_target=num_target)

    capacity: Capacity | None = None
    memory_error: NotEnoughMemory | None = None
    available = args.available_kv_bytes()
    limits = SchedulerLimits(
        max_model_len=max_model_len,
        max_num_batched_tokens=args.resolved_max_num_batched_tokens(),
        max_concurrent_batches=args.max_concurrent_batches,
        mamba2_align_pages=rules.mamba2_align_pages,
    )
    if grouping is not None and grouping.runs and available is not None:
        try:
            if args.max_model_len == -1:
                fitted, line = auto_fit_max_model_len(grouping, limits, available, args.num_gpu_blocks_override)
                log.append(line)
                limits = replace(limits, max_model_len=fitted)
                max_model_len = fitted
            capacity = compute_capacity(grouping, limits, available, args.num_gpu_blocks_override)
            log.extend(capacity.log)
        except NotEnoughMemory as exc:
            memory_error = exc
    if args.kv_cache_memory_bytes is not None and args.gpu_memory_bytes is not None:
        notes.append(
            "--kv-cache-memory-bytes is the KV budget; --gpu-memory and --non-kv-memory are ignored (as vLLM does)"
        )
    if available is None:
        notes.append(
            "No KV budget given (--kv-cache-memory-bytes, or --gpu-memory with --non-kv-memory): "
            "blocks and concurrency not computed."
        )

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
        scheduler_block, hash_block, hash_error = resolve_kv_cache_block_sizes(grouping, args, block_size)
        invariants.extend(
            check_invariants(grouping, scheduler_block, hash_block, hash_error, layer_table_, backends_by_name)
        )
    if memory_error is not None:
        invariants.append(
            Invariant(
                "one-request-fits",
                False,
                str(memory_error),
                "ValueError at engine start",
            )
        )
    elif capacity is not None:
        invariants.append(
            Invariant(
                "one-request-fits",
                True,
                f"one {max_model_len:,}-token request needs {capacity.request_bytes:,} B of "
                f"{capacity.available_bytes:,} B",
            )
        )

    return Plan(
        model=model,
        args=args,
        rules=rules,
        policies=policies,
        model_dtype=model_dtype,
        kv_cache_dtype=kv_dtype,
        backend=backend,
        block_size=block_size,
        block_decision=decision,
        mamba_page_size_bytes=mamba_page,
        max_model_len=max_model_len,
        layer_table=layer_table_,
        decisions=tuple(decisions),
        grouping=grouping,
        unify_error=unify_error,
        capacity=capacity,
        memory_error=memory_error,
        scheduler_block_size=scheduler_block,
        hash_block_size=hash_block,
        invariants=tuple(invariants),
        log=tuple(log),
        drafter=drafter,
        notes=tuple(notes),
    )

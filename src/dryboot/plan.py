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

import os
from dataclasses import dataclass, field, replace
from functools import lru_cache

from dryboot.errors import InputError
from dryboot.layers import LayerSet
from dryboot.vllm.backends import BACKENDS, AttentionBackend, custom_backend, default_backend
from dryboot.vllm.config.hf import LayerKind, ModelGeometry
from dryboot.vllm.coordinator import Invariant, check_invariants, resolve_kv_cache_block_sizes
from dryboot.vllm.dtypes import CustomKVCacheDtype, KVQuantMode, kv_quant_mode, torch_dtype_of
from dryboot.vllm.engine_args import EngineArgs
from dryboot.vllm.kv_cache_interface import (
    AttentionSpec,
    LayerSpec,
    MambaSpec,
    attention_content_bytes,
    gdn_state_shapes,
    mamba1_state_shapes,
    mamba2_state_shapes,
    state_bytes,
)
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


@dataclass(frozen=True)
class Drafter:
    """A speculative-decoding draft model whose layers join the KV cache.

    :param model: the drafter's geometry (its ``config.json``).
    :param method: vLLM's ``--speculative-config`` ``method`` (``dflash``, ``eagle``, ``mtp``...).
    :param kv_cache_dtype: the drafter's KV cache dtype (``None``: the target's).
    :param attention_backend: its backend (``None``: the target's, or the dtype's default).
    :param block_size: its layers' starting block (``None``: the version's rule).
    :param layer_prefix: the module prefix of its layers in reports (``drafter.layers``).
    """

    model: ModelGeometry
    method: str = "draft_model"
    kv_cache_dtype: str | None = None
    attention_backend: str | None = None
    block_size: int | None = None
    layer_prefix: str = "drafter.layers"


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


def kv_heads_per_rank(model: ModelGeometry, tp: int) -> int:
    """KV heads one rank holds: ``max(1, total // TP)`` (``ModelConfig.get_num_kv_heads``);
    MLA keeps its single latent head."""
    return 1 if model.use_mla else max(1, model.num_kv_heads // tp)


def check_tensor_parallel(model: ModelGeometry, tp: int, flag: str = "--tensor-parallel-size") -> None:
    """The head splits vLLM requires: attention heads divisible by TP
    (``ModelConfig.verify_with_parallel_config``) and KV heads either divisible by TP or
    dividing it (replicated; ``QKVParallelLinear``). MLA keeps one latent head.

    :raises InputError: naming the flag, the model file and the heads that do not split.
    """
    if tp == 1:
        return
    heads = model.num_attention_heads
    if heads and heads % tp:
        raise InputError(
            flag,
            str(tp),
            f"{model.source}: total number of attention heads ({heads}) must be divisible by the "
            f"tensor parallel size ({tp})",
        )
    kv = model.num_kv_heads
    if not model.use_mla and any(k.is_attention for k in model.kinds) and (kv % tp if kv >= tp else tp % kv):
        raise InputError(
            flag,
            str(tp),
            f"{model.source}: {kv} KV heads can neither be split across nor replicated over {tp} ranks",
        )


def _model_dtype(model: ModelGeometry, args: EngineArgs) -> str:
    """``--dtype`` resolved: ``auto`` takes the config's dtype, float32 served as bfloat16."""
    if args.dtype == "auto":
        return "bfloat16" if model.dtype == "float32" else model.dtype
    return torch_dtype_of(args.dtype, model.dtype)


def _backend_for(
    name: str | None, kv_cache_dtype: str, model: ModelGeometry, args: EngineArgs, flag: str
) -> AttentionBackend:
    return _resolve_backend(name, kv_cache_dtype, model.use_mla, model.source, args.custom_dtype(kv_cache_dtype), flag)


@lru_cache(maxsize=1024)
def _resolve_backend(
    name: str | None, kv_cache_dtype: str, use_mla: bool, source: str, custom: CustomKVCacheDtype | None, flag: str
) -> AttentionBackend:
    """The backend serving a KV cache dtype (``--attention-backend`` or the default).

    :raises InputError: unknown backend, MLA mismatch, or a per-token-head cache on a backend
        that does not serve it.
    """
    chosen = name or default_backend(kv_cache_dtype, use_mla)
    if chosen not in BACKENDS:
        raise InputError(flag, chosen, f"unknown attention backend (known: {', '.join(BACKENDS)})")
    backend = BACKENDS[chosen]
    if backend.is_mla != use_mla:
        what = "an MLA" if use_mla else "a non-MLA"
        raise InputError(flag, chosen, f"{source} is {what} model; pick a matching backend")
    if custom is not None:
        return custom_backend(custom, backend)
    if kv_quant_mode(kv_cache_dtype).is_per_token_head and not backend.per_token_head:
        raise InputError(flag, chosen, f"{kv_cache_dtype} is served only by TRITON_ATTN in vLLM 0.28")
    if not backend.supports_kv_cache_dtype(kv_cache_dtype):
        if name is None:
            raise InputError(
                "--kv-cache-dtype",
                kv_cache_dtype,
                f"{chosen}, the backend dryboot assumes, does not serve it, and vLLM's automatic choice "
                "of another backend is not modelled: give --attention-backend",
            )
        raise InputError(
            flag,
            chosen,
            f"Selected backend AttentionBackendEnum.{chosen} is not valid for this configuration. "
            f"Reason: ['kv_cache_dtype not supported'] ({kv_cache_dtype})",
        )
    return backend


@lru_cache(maxsize=1024)
def _kv_layout(
    kv_cache_dtype: str, model_dtype: str, head_dim: int, head_dim_v: int, custom: CustomKVCacheDtype | None
) -> tuple[KVQuantMode, str, int]:
    """(quant mode, torch dtype, bytes per head per token) of a KV cache dtype at a head size.

    :raises InputError: a custom formula that does not evaluate.
    """
    if custom is not None:
        try:
            content = custom.content_bytes(head_dim)
        except ValueError as exc:
            raise InputError("--custom-kv-cache-dtype", custom.name, str(exc)) from None
        return KVQuantMode.CUSTOM, "uint8", content
    quant = kv_quant_mode(kv_cache_dtype)
    torch_dtype = torch_dtype_of(kv_cache_dtype, model_dtype)
    return quant, torch_dtype, attention_content_bytes(head_dim, head_dim_v, torch_dtype, quant)


def _attention_spec(
    kind: str,
    model: ModelGeometry,
    args: EngineArgs,
    kv_cache_dtype: str,
    model_dtype: str,
    backend: AttentionBackend,
    block_size: int,
) -> AttentionSpec:
    geo = model.attention(_LAYER_KIND[kind])
    heads = 1 if model.use_mla else max(1, geo.num_kv_heads // args.tensor_parallel_size)
    head_v = 0 if kind == "mla" else geo.head_dim_v
    quant, torch_dtype, content = _kv_layout(
        kv_cache_dtype, model_dtype, geo.head_dim, head_v, args.custom_dtype(kv_cache_dtype)
    )
    return AttentionSpec(
        kind=kind,  # type: ignore[arg-type]
        block_size=block_size,
        num_kv_heads=heads,
        head_size=geo.head_dim,
        head_size_v=head_v,
        torch_dtype=torch_dtype,
        kv_cache_dtype=kv_cache_dtype,
        quant_mode=quant,
        content_bytes=content,
        backend=backend.name,
        indexes_kv_by_block_stride=backend.indexes_kv_by_block_stride,
        sliding_window=model.sliding_window if kind == "sliding" else None,
        attention_chunk_size=model.attention_chunk_size if kind == "chunked" else None,
    )


def _mamba_dtypes(model: ModelGeometry, args: EngineArgs, model_dtype: str) -> tuple[str, str]:
    """(conv dtype, SSM/temporal dtype) as ``MambaStateDtypeCalculator`` resolves them,
    after the model's config hook (Qwen3.5 ``mamba_ssm_dtype``, Nemotron-H float32)."""
    conv = torch_dtype_of(args.mamba_cache_dtype, model_dtype)
    ssm_flag = args.mamba_ssm_cache_dtype
    if ssm_flag == "auto" and model.hf_ssm_dtype is not None:
        ssm_flag = model.hf_ssm_dtype
    ssm = conv if ssm_flag == "auto" else torch_dtype_of(ssm_flag, model_dtype)
    return conv, ssm


def _mamba_state(
    model: ModelGeometry, args: EngineArgs, model_dtype: str
) -> tuple[str, tuple[tuple[int, ...], ...], tuple[str, ...]] | None:
    tp = args.tensor_parallel_size
    k = args.num_speculative_tokens
    conv, ssm = _mamba_dtypes(model, args, model_dtype)
    try:
        if model.gdn is not None:
            g = model.gdn
            shapes: tuple[tuple[int, ...], ...] = gdn_state_shapes(
                tp, g.num_k_heads, g.num_v_heads, g.head_k_dim, g.head_v_dim, g.conv_kernel, k
            )
            return "gdn", shapes, (conv, ssm)
        if model.mamba2 is not None:
            m = model.mamba2
            shapes = mamba2_state_shapes(tp, m.num_heads, m.head_dim, m.n_groups, m.state_size, m.conv_kernel, k)
            return "mamba2", shapes, (conv, ssm)
        if model.mamba1 is not None:
            m1 = model.mamba1
            return "mamba1", mamba1_state_shapes(tp, m1.d_inner, m1.d_state, m1.d_conv), (conv, ssm)
    except ValueError as exc:
        raise InputError("--tensor-parallel-size", str(tp), f"{model.source}: {exc}") from None
    return None


def _mtp_drafter(model: ModelGeometry, method: str) -> Drafter:
    """The MTP module of ``model`` as a drafter: its ``num_mtp_layers`` layers, each of the
    target's ``mtp_kind`` with the target's heads (``SpeculativeConfig.hf_config_override``
    and the family's ``*_mtp.py``).

    :raises InputError: the checkpoint carries no MTP layers.
    """
    if not model.num_mtp_layers or model.mtp_kind is None:
        raise InputError(
            "--speculative-config",
            f"method={method}",
            f"{model.source} has no multi-token-prediction layers ({model.architecture})",
        )
    mtp = replace(model, layer_kinds=(model.mtp_kind,) * model.num_mtp_layers, layer_prefix="mtp.layers")
    return Drafter(model=mtp, method=method, layer_prefix="mtp.layers")


def _max_model_len(model: ModelGeometry, args: EngineArgs) -> int:
    derived = model.max_position_embeddings
    requested = args.max_model_len
    if requested is None or requested == -1:
        if derived is None:
            raise InputError(model.source, "max_position_embeddings", "missing; give --max-model-len")
        return derived
    if (
        derived is not None
        and requested > derived
        and os.environ.get("VLLM_ALLOW_LONG_MAX_MODEL_LEN", "0") not in ("1", "true", "True")
    ):
        raise InputError(
            "--max-model-len",
            str(requested),
            f"greater than the derived max_model_len (max_position_embeddings={derived} in "
            f"{model.source}); vLLM refuses it unless VLLM_ALLOW_LONG_MAX_MODEL_LEN=1",
        )
    return requested


def _mamba_cache_mode(model: ModelGeometry, args: EngineArgs, rules: VersionRules, log: list[str]) -> str:
    """``MambaModelConfig.verify_and_update_config``: prefix caching on -> ``align`` unless
    set; off -> ``none``."""
    mode = args.mamba_cache_mode or "none"
    if mode == "all" and not rules.mamba_mode_all:
        raise InputError("--mamba-cache-mode", "all", f"removed in vLLM {rules.version}")
    if args.enable_prefix_caching:
        if mode == "none":
            mode = "align"
            log.append(
                f"Mamba cache mode is set to 'align' for {model.architecture} by default when prefix caching is enabled"
            )
        if mode == "all" and model.gdn is not None:
            # Gated DeltaNet models do not implement SupportsMambaPrefixCaching.
            mode = "align"
            log.append(
                "Hybrid or mamba-based model detected without support for prefix caching with Mamba cache "
                "'all' mode: falling back to 'align' mode."
            )
    elif mode != "none":
        mode = "none"
        log.append("Mamba cache mode is set to 'none' when prefix caching is disabled")
    return mode


def _sliding_start_block(backend: AttentionBackend, primary_block: int, rules: VersionRules) -> int:
    """Where a sliding-window layer's block starts (version switch)."""
    if rules.sliding_window_start == "largest-fitting":
        return backend.largest_block_at_most(primary_block)
    return backend.smallest_listed_block


_MAMBA_KINDS = frozenset({LayerKind.GDN, LayerKind.MAMBA2, LayerKind.MAMBA1})
_ATTENTION_KIND = {
    LayerKind.FULL: "full",
    LayerKind.SLIDING: "sliding",
    LayerKind.CHUNKED: "chunked",
    LayerKind.MLA: "mla",
}
_LAYER_KIND = {v: k for k, v in _ATTENTION_KIND.items()}


def build_layers(
    model: ModelGeometry,
    args: EngineArgs,
    *,
    kv_cache_dtype: str,
    model_dtype: str,
    backend: AttentionBackend,
    block_size: int,
    mamba: tuple[str, tuple[tuple[int, ...], ...], tuple[str, ...]] | None,
    mamba_block: int,
    mamba_mode: str,
    mamba_padded: int | None,
    rules: VersionRules,
    sliding_block: int | None = None,
    prefix: str | None = None,
) -> LayerSet:
    """Every layer's spec as its ``get_kv_cache_spec`` builds it: one spec per layer kind."""
    sw_block = sliding_block or _sliding_start_block(backend, block_size, rules)
    kinds, names, order = model.layers_by_kind(prefix)
    specs: list[LayerSpec] = []
    for kind in kinds:
        if kind in _MAMBA_KINDS:
            assert mamba is not None
            mamba_type, shapes, dtypes = mamba
            specs.append(
                MambaSpec(
                    mamba_type=mamba_type,
                    block_size=mamba_block,
                    shapes=shapes,
                    torch_dtypes=dtypes,
                    mamba_cache_mode=mamba_mode,
                    num_speculative_blocks=args.num_speculative_tokens,
                    page_size_padded=mamba_padded,
                )
            )
        else:
            attn_kind = _ATTENTION_KIND[kind]
            block = sw_block if kind is LayerKind.SLIDING else block_size
            specs.append(_attention_spec(attn_kind, model, args, kv_cache_dtype, model_dtype, backend, block))
    return LayerSet(tuple(specs), names, order)


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
        drafter = _mtp_drafter(model, args.speculative_method)
    model_dtype = _model_dtype(model, args)
    kv_dtype = args.kv_cache_dtype
    if kv_dtype == "auto" and model.quant_kv_cache_dtype is not None:
        kv_dtype = model.quant_kv_cache_dtype
    backend = _backend_for(args.attention_backend, kv_dtype, model, args, "--attention-backend")
    max_model_len = _max_model_len(model, args)
    has_mamba = not _MAMBA_KINDS.isdisjoint(model.kinds)
    mamba_mode = _mamba_cache_mode(model, args, rules, log) if has_mamba else "none"

    block_size, phase1_log = preferred_block_size(backend, args.block_size)
    log.extend(phase1_log)
    mamba = _mamba_state(model, args, model_dtype) if has_mamba else None
    mamba_page: int | None = None
    decision: BlockSizeDecision | None = None
    mamba_padded: int | None = None
    mamba_block = block_size
    if mamba is not None:
        mamba_page = state_bytes(mamba[1], mamba[2])
    if model.is_hybrid and mamba_page is not None:
        full = model.attention(LayerKind.MLA if model.use_mla else LayerKind.FULL)
        _, _, content = _kv_layout(
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
        drafter_backend = _backend_for(
            d_backend_name, d_dtype, drafter.model, args, "--speculative-config attention_backend"
        )
        d_model_dtype = _model_dtype(drafter.model, args)
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

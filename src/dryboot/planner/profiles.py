"""Launcher profiles and arms: plan every profile under every arm and compare arms.

A profiles file is TOML::

    [defaults]                      # engine flags every profile starts from (vLLM names)
    model = "models/Qwen3.5-27B.config.json"
    mamba-ssm-cache-dtype = "float16"
    gpu = "RTX 3090"                # the GPU (--gpu; default an H200); with no
                                    # kv-cache-memory-bytes / non-kv-memory the KV budget is
                                    # predicted from gpu-memory-utilization (dryboot.planner.budget)

    [custom-kv-cache-dtypes.kvarn]  # out-of-tree caches
    bytes-per-head-token = "210*head_dim//256"
    kernel-block = 128
    pad = false

    [drafter]                       # vLLM's --speculative-config keys (+ kv_cache_dtype,
    method = "dflash"               #  attention_backend, block_size)
    model = "models/dflash2-drafter-sw5.config.json"

    [profiles."CTX=fast"]
    num-speculative-tokens = 7
    max-model-len = 65536
    kv-cache-memory-bytes = 5583457484
    drafter = { block_size = 128 }  # per-profile drafter overrides (false: no drafter)

    [arms.main]
    vllm-version = "0.28.0"
    grouping = "pad-sliding-window-buckets"
    unification = "promote-divisor"
    gpu = "B200"                    # optional: this arm's GPU (wins over the profiles')

Paths are relative to the file. Unknown keys are errors naming the table and key.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any, TypeVar

from dryboot.errors import InputError
from dryboot.inputs import read_toml
from dryboot.planner.budget import (
    budget_note,
    drafter_weights_term,
    plan_with_budget,
    wants_budget,
    weights_max_model_len,
)
from dryboot.planner.flags import (
    FLAGS_BY_NAME,
    apply_flags,
    check_speculative_config,
    parse_speculative_config,
    parse_value,
    resolve_path,
)
from dryboot.planner.plan import Drafter, Plan, Policies, plan
from dryboot.planner.policies import GROUPING_POLICIES, UNIFICATION_POLICIES
from dryboot.planner.report import summary
from dryboot.vllm.config.hf import ModelGeometry
from dryboot.vllm.dtypes import CustomKVCacheDtype, parse_custom_kv_cache_dtype
from dryboot.vllm.engine_args import EngineArgs
from dryboot.vllm.gpus import GPU
from dryboot.vllm.model_executor.model_loader.loader import model_weights, serving_gpu, weights_as_served
from dryboot.vllm.transformers_utils.config import load_config_json, load_model
from dryboot.vllm.versions import resolve_version, rules_for

_T = TypeVar("_T")


@dataclass(frozen=True)
class Profile:
    """One launcher profile: a model, engine flags and an optional drafter.

    ``flags`` (vLLM flag names -> the file's values, ``model`` and ``drafter`` included, paths
    relative to ``base``) is what the launcher passes, kept for running the arm's own code
    (``dryboot profiles --boot``); ``drafter_spec`` the merged drafter table (``None``: none).
    """

    name: str
    model: ModelGeometry
    args: EngineArgs
    drafter: Drafter | None
    flags: Mapping[str, Any] = field(default_factory=dict, compare=False, hash=False)
    drafter_spec: Mapping[str, Any] | None = field(default=None, compare=False, hash=False)
    base: Path = field(default=Path("."), compare=False, hash=False)


@dataclass(frozen=True)
class Arm:
    """One arm: a vLLM version and a set of policies, and optionally its own code: a ``tree``
    (a directory holding ``vllm/``) or a patch ``series`` directory on the pristine release
    ``base`` (both resolved against the file's directory; read by ``dryboot profiles --boot``)."""

    name: str
    vllm_version: str
    policies: Policies
    tree: str | None = None
    series: str | None = None
    base: str | None = None
    gpu: GPU | None = None


@dataclass(frozen=True)
class ProfileSet:
    source: str
    profiles: tuple[Profile, ...]
    arms: tuple[Arm, ...]

    def arm(self, name: str) -> Arm:
        for a in self.arms:
            if a.name == name:
                return a
        raise InputError(self.source, f"arms.{name}", f"no such arm (have: {', '.join(a.name for a in self.arms)})")


def _table(data: Mapping[str, Any], key: str, source: str) -> dict[str, Any]:
    value = data.get(key, {})
    if not isinstance(value, dict):
        raise InputError(source, key, "must be a table")
    return value


def _entry(value: object, source: str, where: str, allowed: frozenset[str] | None = None) -> dict[str, Any]:
    """A sub-table ``where`` of the file: must be a table, with only ``allowed`` keys."""
    if not isinstance(value, dict):
        raise InputError(source, where, "must be a table")
    if allowed is not None:
        unknown = sorted(set(value) - allowed)
        if unknown:
            raise InputError(source, f"{where}.{unknown[0]}", f"unknown key ({', '.join(sorted(allowed))})")
    return value


def _customs(data: Mapping[str, Any], source: str) -> tuple[CustomKVCacheDtype, ...]:
    out = []
    for name, body in _table(data, "custom-kv-cache-dtypes", source).items():
        where = f"custom-kv-cache-dtypes.{name}"
        spec = _entry(body, source, where, frozenset({"bytes-per-head-token", "kernel-block", "pad"}))
        if "bytes-per-head-token" not in spec:
            raise InputError(source, f"{where}.bytes-per-head-token", "required")
        text = f"{name}:{spec['bytes-per-head-token']}"
        if "kernel-block" in spec:
            text += f":kernel_block={spec['kernel-block']}"
        if "pad" in spec:
            if not isinstance(spec["pad"], bool):
                raise InputError(source, f"{where}.pad", "must be true or false")
            text += f":pad={'yes' if spec['pad'] else 'no'}"
        out.append(parse_custom_kv_cache_dtype(text, f"{source}: {where}"))
    return tuple(out)


def _within(source: str, where: str, fn: Callable[..., _T], *args: Any) -> _T:
    """Run ``fn``; an :class:`InputError` about another source is re-raised naming this file
    and ``where`` first (``p.toml: profiles.X.model: models/nope.json: no such file``)."""
    try:
        return fn(*args)
    except InputError as exc:
        if exc.source == source:
            raise
        raise InputError(source, where, exc.line()) from None


def _drafter(spec: Mapping[str, Any], base: Path, source: str, where: str, args: EngineArgs) -> tuple[Drafter, int]:
    spec_source = f"{source}: {where}"
    try:
        cfg = parse_speculative_config(dict(spec), spec_source)
        check_speculative_config(cfg, args, spec_source, "[custom-kv-cache-dtypes]")
    except InputError as exc:
        if exc.source != spec_source:
            raise
        # name the key as the file spells it: profiles.X.drafter.kv_cache_dtype
        raise InputError(source, f"{where}.{exc.where}" if exc.where else where, exc.reason) from None
    if cfg.model is None:
        raise InputError(source, f"{where}.model", "the drafter's config.json is required")
    model = load_model(resolve_path(cfg.model, base))
    return Drafter(
        model, cfg.method, cfg.kv_cache_dtype, cfg.attention_backend, cfg.block_size
    ), cfg.num_speculative_tokens


def load_profiles(path: str | Path) -> ProfileSet:
    """Read a profiles TOML file.

    :raises InputError: unreadable TOML (line named), unknown keys, bad values, bad paths.
    """
    p = Path(path)
    source = str(p)
    data = read_toml(p, source)
    unknown = set(data) - {"defaults", "custom-kv-cache-dtypes", "drafter", "profiles", "arms"}
    if unknown:
        raise InputError(source, sorted(unknown)[0], "unknown table")
    base = p.parent
    customs = _customs(data, source)
    defaults = dict(_table(data, "defaults", source))
    apply_flags(EngineArgs(), {k: v for k, v in defaults.items() if k not in ("model", "drafter")}, source, "defaults.")
    default_drafter = _table(data, "drafter", source)
    profiles_t = _table(data, "profiles", source)
    if not profiles_t:
        raise InputError(source, "profiles", "no profiles defined")
    profiles = []
    for name, body in profiles_t.items():
        where = f"profiles.{name}"
        own = _entry(body, source, where)
        merged = {**defaults, **own}
        drafter_spec: Any = merged.pop("drafter", None)
        model_path = merged.pop("model", None)
        if not isinstance(model_path, str):
            raise InputError(source, f"{where}.model", "required (a config.json path), here or in [defaults]")
        # a path the profile inherits is named where the file spells it
        model_key = f"{where}.model" if "model" in own else "defaults.model"
        model = _within(source, model_key, load_model, resolve_path(model_path, base))
        args = apply_flags(EngineArgs(custom_kv_cache_dtypes=customs), merged, source, f"{where}.")
        drafter = None
        if drafter_spec is not False and (default_drafter or drafter_spec):
            if drafter_spec is not None and not isinstance(drafter_spec, dict):
                raise InputError(source, f"{where}.drafter", "must be a table or false")
            drafter, k = _within(
                source,
                f"{where}.drafter",
                _drafter,
                {**default_drafter, **(drafter_spec or {})},
                base,
                source,
                f"{where}.drafter",
                args,
            )
            if k:
                args = replace(args, num_speculative_tokens=k)
            if not args.num_speculative_tokens:
                raise InputError(source, f"{where}.num-speculative-tokens", "required with a drafter")
        _within(source, where, args.validate)
        spec = None if drafter is None else {**default_drafter, **(drafter_spec or {})}
        profiles.append(Profile(name, model, args, drafter, {**merged, "model": model_path}, spec, base))
    arms = []
    arms_t = _table(data, "arms", source) or {"upstream": {}}
    for name, raw in arms_t.items():
        where = f"arms.{name}"
        body = _entry(
            raw, source, where, frozenset({"vllm-version", "grouping", "unification", "tree", "series", "base", "gpu"})
        )
        policies = arm_policies(body, source, where)
        code = _arm_code(body, base, source, where)
        default_version = code[2] or "0.28.0"
        version = resolve_version(str(body.get("vllm-version", default_version)), f"{source}: {where}.vllm-version")
        rules_for(version, f"{source}: {where}.vllm-version")
        gpu = None
        if "gpu" in body:
            gpu = parse_value(FLAGS_BY_NAME["gpu"], body["gpu"], source, f"{where}.gpu")
        arms.append(Arm(name, version, policies, *code, gpu=gpu))
    return ProfileSet(source, tuple(profiles), tuple(arms))


def arm_policies(body: Mapping[str, Any], source: str, where: str) -> Policies:
    """An arm table's ``grouping`` and ``unification`` (default ``upstream`` each).

    :raises InputError: a policy :mod:`dryboot.planner.policies` does not name (the known ones listed).
    """
    grouping = body.get("grouping", "upstream")
    unification = body.get("unification", "upstream")
    if grouping not in GROUPING_POLICIES:
        raise InputError(source, f"{where}.grouping", f"unknown policy {grouping!r} ({', '.join(GROUPING_POLICIES)})")
    if unification not in UNIFICATION_POLICIES:
        raise InputError(
            source, f"{where}.unification", f"unknown policy {unification!r} ({', '.join(UNIFICATION_POLICIES)})"
        )
    return Policies(grouping, unification)


def _arm_code(
    body: Mapping[str, Any], base: Path, source: str, where: str
) -> tuple[str | None, str | None, str | None]:
    """An arm's ``tree`` / ``series`` + ``base`` (paths resolved against ``base``)."""
    for key in ("tree", "series", "base"):
        if key in body and not isinstance(body[key], str):
            raise InputError(source, f"{where}.{key}", "must be a string")
    tree, series, release = body.get("tree"), body.get("series"), body.get("base")
    if tree is not None and (series is not None or release is not None):
        raise InputError(source, f"{where}.tree", "give tree, or series with base, not both")
    if (series is None) != (release is None):
        missing = "base" if release is None else "series"
        raise InputError(source, f"{where}.{missing}", "series and base go together (a series on a pristine release)")
    return (
        None if tree is None else str((base / tree).resolve()),
        None if series is None else str((base / series).resolve()),
        release,
    )


def plan_profile(profile: Profile, arm: Arm, source: str = "<profiles>") -> Plan:
    """Plan one profile under one arm.

    :raises InputError: a flag the model cannot take, named as ``<file>: profiles.<name>: ...``.
    """
    args = replace(profile.args, vllm_version=arm.vllm_version, gpu=arm.gpu or profile.args.gpu)
    try:
        if wants_budget(args) and isinstance(profile.flags.get("model"), str):
            return _plan_with_budget(profile, args, arm.policies)
        return plan(profile.model, args, drafter=profile.drafter, policies=arm.policies)
    except InputError as exc:
        raise InputError(source, f"profiles.{profile.name} (arm {arm.name})", exc.line()) from None


def _plan_with_budget(profile: Profile, args: EngineArgs, policies: Policies) -> Plan:
    """A profile with ``gpu`` (+ ``gpu-memory-utilization``) and no pinned budget: planned at
    vLLM's predicted ``Available KV cache memory`` (:func:`dryboot.planner.budget.plan_with_budget`),
    the budget, its interval, the tokens at both bounds and the verdict in a note."""
    config_path = resolve_path(str(profile.flags["model"]), profile.base)
    _, config = load_config_json(config_path)

    def walk(language_model_only: bool) -> Any:
        return model_weights(
            Path(config_path),
            tp=args.tensor_parallel_size,
            pp=args.pipeline_parallel_size,
            dtype=args.dtype,
            language_model_only=language_model_only,
            limit_mm_per_prompt=args.mm_limits,
            max_num_batched_tokens=args.resolved_max_num_batched_tokens(),
            max_num_seqs=args.resolved_max_num_seqs(),
            num_speculative_tokens=args.num_speculative_tokens or 0,
            **serving_gpu(args.device, args.vllm_version),
            kv_cache_dtype=args.kv_cache_dtype,
            attention_backend=args.attention_backend,
            flashinfer_cubin=args.flashinfer_cubin,
            mm_encoder_tp_mode=args.mm_encoder_tp_mode,
            max_model_len=weights_max_model_len(profile.model, args, profile.drafter),
        )

    weights = weights_as_served(
        walk,
        profile.model.architecture,
        args.tensor_parallel_size,
        args.vllm_version,
        args.language_model_only,
        args.mm_encoder_tp_mode,
    )
    stage0 = weights.stages[0].loaded_bytes if weights.stages and not weights.refused else None
    drafter_weights, drafter_refused = drafter_weights_term(profile.drafter, args, config)
    bp = plan_with_budget(
        profile.model,
        args,
        config=config,
        weights_bytes=stage0,
        weights_refused=weights.refused,
        drafter=profile.drafter,
        policies=policies,
        source=str(config_path),
        stage_weights_bytes=tuple(w.loaded_bytes for w in weights.stages) if not weights.refused else (),
        drafter_weights=drafter_weights,
        drafter_weights_refused=drafter_refused,
    )
    if bp.budget is None and (bp.verdict is None or bp.verdict.word == "undetermined"):
        return bp.plan  # its first note already says why the budget was not estimated
    return replace(bp.plan, notes=(*bp.plan.notes, budget_note(bp)))


def with_gpu(profile_set: ProfileSet, gpu: GPU) -> ProfileSet:
    """``profile_set`` with ``gpu`` for every profile that names none (``dryboot profiles --gpu``;
    a profile's ``gpu`` and an arm's win)."""
    profiles = tuple(
        p if p.args.gpu is not None else replace(p, args=replace(p.args, gpu=gpu)) for p in profile_set.profiles
    )
    return replace(profile_set, profiles=profiles)


def run(profile_set: ProfileSet, arms: list[str] | None = None) -> list[tuple[Profile, Arm, Plan]]:
    """Plan every profile under the named arms (all arms when ``None``)."""
    chosen = [profile_set.arm(a) for a in arms] if arms else list(profile_set.arms)
    return [(p, a, plan_profile(p, a, profile_set.source)) for p in profile_set.profiles for a in chosen]


#: Figures compared between arms, with their labels.
COMPARED = (
    ("attention_block_size", "attention block"),
    ("drafter_block_size", "drafter block"),
    ("mamba_padding_pct", "mamba pad %"),
    ("page_size_bytes", "page B"),
    ("num_groups", "groups"),
    ("group_size", "group size"),
    ("num_blocks", "blocks"),
    ("blocks_per_request", "blocks/request"),
    ("kv_cache_size_tokens", "KV cache tokens"),
    ("max_concurrency", "concurrency"),
    ("estimated_max_model_len", "max model length that fits"),
    ("violations", "violations"),
)


def format_figure(value: object) -> str:
    """A summary figure as a person reads it: ``1,725,423``, ``6.58``, ``-`` for none."""
    if value is None:
        return "-"
    if isinstance(value, bool):
        return "ok" if value else "VIOLATED"
    if isinstance(value, int):
        return f"{value:,}"
    if isinstance(value, float):
        return f"{value:.2f}"
    if isinstance(value, list):
        return ", ".join(str(v) for v in value) or "none"
    return str(value)


def compare(a: Plan, b: Plan) -> list[str]:
    """Each figure that differs between two plans of one profile, as ``label: a -> b``;
    empty when identical to the token."""
    sa, sb = summary(a), summary(b)
    return [
        f"{label}: {format_figure(sa[key])} -> {format_figure(sb[key])}"
        for key, label in COMPARED
        if sa[key] != sb[key]
    ]

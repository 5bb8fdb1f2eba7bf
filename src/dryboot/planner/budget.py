"""The KV budget beside a plan: with a GPU named (``--gpu`` / ``--gpu-memory``) and neither
``--kv-cache-memory-bytes`` nor ``--non-kv-memory``, vLLM's ``Available KV cache memory`` is
predicted (:func:`dryboot.vllm.worker.budget.estimate_budget`) and fed into the existing capacity
step as ``--non-kv-memory = requested - estimate`` (vLLM's ``C + A``), so blocks, tokens and
concurrency are vLLM's own at the estimate; the low and high bounds are planned the same way."""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any

from dryboot.errors import InputError
from dryboot.planner.flags import MODEL_FREE_METHODS
from dryboot.planner.plan import Drafter, Plan, Policies, plans_by_memory
from dryboot.vllm.config.hf import ModelGeometry
from dryboot.vllm.config.resolve import derive_max_model_len
from dryboot.vllm.coordinator import Invariant
from dryboot.vllm.engine_args import EngineArgs
from dryboot.vllm.gpus import GPU
from dryboot.vllm.worker.budget import (
    DEFAULT_MARGIN_BYTES,
    Budget,
    KvEstimate,
    Verdict,
    budget_verdict,
    estimate_budget,
    free_memory,
    load_verdict,
    request_memory,
    safe_kv_cache_memory_bytes,
)
from dryboot.vllm.worker.profile_run import ForwardShape, forward_shape

__all__ = [
    "EXIT_CODES",
    "BudgetPlan",
    "PlanVerdict",
    "Start",
    "budget_note",
    "gpu_named",
    "plan_verdict",
    "plan_with_budget",
    "wants_budget",
    "weights_check",
    "with_load_failure",
    "with_weights_check",
]

#: the note :func:`~dryboot.vllm.config.resolve` gives a plan without a budget (replaced where
#: the budget was wanted but not estimated)
_NO_BUDGET_NOTE = "No KV budget given"


@dataclass(frozen=True)
class Start:
    """One of vLLM's two budgets for the same command line: the first start (``cold``: the
    torch.compile cache is empty, inductor compiles and autotunes inside the profile run) or the
    later starts (``warm``), with the KV cache tokens at its low, estimate and high."""

    compile_cache: str
    budget: Budget
    tokens: tuple[int | None, int | None, int | None]

    @property
    def name(self) -> str:
        return "first start (cold compile cache)" if self.compile_cache == "cold" else "later starts (warm cache)"

    def to_dict(self) -> dict[str, Any]:
        return {
            "start": "first" if self.compile_cache == "cold" else "later",
            "compile_cache": self.compile_cache,
            "available_kv_cache_bytes": self.budget.available_kv_cache_bytes.to_dict(),
            "activation_bytes": self.budget.activation_bytes.to_dict(),
            "kv_cache_size_tokens": dict(zip(("low", "estimate", "high"), self.tokens, strict=True)),
        }


@dataclass(frozen=True)
class BudgetPlan:
    """The budget, the plan at its estimate (``plan``), the tokens at the low and high bounds,
    the verdict and the safe pinned pool; or ``refused``: one line naming the term that cannot
    be bounded (then only ``plan``, without capacity, is given).

    ``starts``: the first and the later starts' budgets (one where nothing is compiled);
    ``budget`` is the one that decides (the worse, the first start's, unless the compile cache
    is said to be warm). ``safe_kv_cache_memory_bytes`` is offered only where vLLM accepts it
    (one ``max_model_len`` request fits it, and the weights and it fit the GPU); otherwise
    ``safe_refused`` says why and ``max_model_len_fits`` is the largest length that fits it
    (vLLM's ``estimate_max_model_len``; 0: none)."""

    plan: Plan
    budget: Budget | None = None
    verdict: Verdict | None = None
    safe_kv_cache_memory_bytes: int | None = None
    margin_bytes: int = DEFAULT_MARGIN_BYTES
    tokens: tuple[int | None, int | None, int | None] = (None, None, None)
    refused: str | None = None
    starts: tuple[Start, ...] = ()
    safe_refused: str | None = None
    max_model_len_fits: int | None = None
    refused_pool_bytes: int | None = None

    def to_dict(self) -> dict[str, Any]:
        if self.budget is None:
            out0: dict[str, Any] = {"refused": self.refused}
            if self.verdict is not None:
                out0["verdict"] = self.verdict.to_dict()
            return out0
        out = self.budget.to_dict(self.verdict, self.safe_kv_cache_memory_bytes)
        if self.verdict is not None and self.verdict.fails_in == "load_model":
            out["available_kv_cache_bytes"] = None  # vLLM never computes it
        out["safe_margin_bytes"] = self.margin_bytes
        out["kv_cache_size_tokens"] = dict(zip(("low", "estimate", "high"), self.tokens, strict=True))
        out["starts"] = [s.to_dict() for s in self.starts]
        if self.safe_refused is not None:
            out["safe_kv_cache_memory_refused"] = self.safe_refused
            out["refused_pool_bytes"] = self.refused_pool_bytes
            out["max_model_len_fits"] = self.max_model_len_fits
        return out


#: ``dryboot plan``'s exit status per verdict word (docs/plan.md); 2 stays bad input.
EXIT_CODES = {"fits": 0, "OK": 0, "won't": 1, "VIOLATED": 1, "undetermined": 3, "tight": 4}


@dataclass(frozen=True)
class PlanVerdict:
    """The plan's one verdict, geometry and budget together: ``word`` is ``fits``, ``tight``,
    ``won't`` or ``undetermined`` where a GPU is named, ``OK`` where none is (the geometry on the
    assumed GPU), ``VIOLATED`` for an invariant of the geometry; ``exit_code`` from
    :data:`EXIT_CODES`."""

    word: str
    reason: str

    @property
    def exit_code(self) -> int:
        return EXIT_CODES[self.word]

    def line(self) -> str:
        return f"verdict: {self.word} (exit {self.exit_code}): {self.reason}"

    def to_dict(self) -> dict[str, Any]:
        return {"word": self.word, "exit_code": self.exit_code, "reason": self.reason}


#: the invariants whose failure means vLLM refuses the memory (``won't``), not the geometry
_MEMORY_INVARIANTS = ("one-request-fits", "weights-fit-the-gpu")


def plan_verdict(
    p: Plan, bp: BudgetPlan | None, args: EngineArgs, *, weights_refused: str | None = None
) -> PlanVerdict:
    """The one verdict of ``dryboot plan`` (see :class:`PlanVerdict`): a failing invariant first
    (``won't`` for the memory ones, else ``VIOLATED``), then the budget's verdict where one was
    predicted, else, with a GPU named and a pinned ``--kv-cache-memory-bytes``, ``undetermined``
    when the weights per rank are not known (``weights_refused``: why), ``fits`` when they and
    the pool fit; ``OK`` when no GPU is named."""
    failing = [i for i in p.invariants if not i.ok]
    if failing:
        word = "won't" if all(i.name in _MEMORY_INVARIANTS for i in failing) else "VIOLATED"
        return PlanVerdict(word, "; ".join(f"{i.name}: {i.detail}" for i in failing))
    if bp is not None and bp.verdict is not None:
        return PlanVerdict(bp.verdict.word, bp.verdict.reason)
    if not gpu_named(args):
        return PlanVerdict("OK", f"the geometry (every invariant holds) on the assumed {args.device.name}")
    if args.kv_cache_memory_bytes is not None and weights_refused is not None:
        return PlanVerdict(
            "undetermined",
            f"the weights per rank are not known ({weights_refused}): whether they and the pinned "
            f"--kv-cache-memory-bytes fit the {args.device.name} is undetermined",
        )
    given = "--kv-cache-memory-bytes" if args.kv_cache_memory_bytes is not None else "--non-kv-memory"
    return PlanVerdict("fits", f"one request fits the KV budget given ({given}) and the weights fit the GPU")


def gpu_named(args: EngineArgs) -> bool:
    """``--gpu`` or ``--gpu-memory`` was given (the default H200 is only an assumption)."""
    return args.gpu is not None or args.gpu_memory_bytes is not None


def wants_budget(args: EngineArgs) -> bool:
    """A GPU is named and no budget is given: the budget is estimated."""
    return gpu_named(args) and args.kv_cache_memory_bytes is None and args.non_kv_memory_bytes is None


def weights_check(args: EngineArgs, weights_bytes: int) -> Verdict | None:
    """:func:`~dryboot.vllm.worker.budget.load_verdict` for the largest rank's weights
    (``weights_bytes``) on ``args``' GPU (``--gpu-memory`` or the table's CUDA total), with
    ``--kv-cache-memory-bytes`` where pinned; ``None`` when they leave room for a KV cache."""
    gpu = args.device
    total = args.gpu_memory_bytes or gpu.cuda_total_bytes
    return load_verdict(
        weights_bytes,
        total_bytes=total,
        requested_bytes=request_memory(total, args.gpu_memory_utilization),
        free=free_memory(gpu, total, args.tensor_parallel_size, args.pipeline_parallel_size),
        kv_cache_memory_bytes=args.kv_cache_memory_bytes,
    )


def with_load_failure(p: Plan, verdict: Verdict) -> Plan:
    """``p`` with ``verdict`` (a ``won't`` from :func:`weights_check`) as a failing invariant
    (``weights-fit-the-gpu``); where vLLM fails loading the model, the KV lines it never reaches
    (the log, the ``ValueError``) are dropped and the report says why."""
    inv = Invariant("weights-fit-the-gpu", False, verdict.reason, _consequence(verdict))
    invariants = (*p.invariants, inv)
    if verdict.fails_in == "load_model":
        kept = tuple(i for i in p.invariants if i.name != "one-request-fits")
        note = "nothing about the KV cache: vLLM runs out of CUDA memory loading the weights (load_model)"
        notes = tuple(n for n in p.notes if not n.startswith(_NO_BUDGET_NOTE))
        return replace(p, log=(), memory_error=None, invariants=(*kept, inv), log_note=note, notes=notes)
    if verdict.fails_in == "initialize_kv_cache":
        then = "then torch.OutOfMemoryError allocating the KV cache (initialize_kv_cache)"
        return replace(p, invariants=invariants, log_note=then)
    return replace(p, invariants=invariants)


def with_weights_check(p: Plan, args: EngineArgs, weights_bytes: int) -> Plan:
    """``p`` planned with a given budget (``--kv-cache-memory-bytes``, ``--non-kv-memory``, or
    none), checked against the heaviest rank's weights (``weights_bytes``) by
    :func:`weights_check`: with a GPU named, a failing ``weights-fit-the-gpu`` invariant
    (:func:`with_load_failure`) when they (or they and the pinned pool) leave no room on it;
    without one (the assumed H200), a note only. ``p`` itself when they fit."""
    verdict = weights_check(args, weights_bytes)
    if verdict is None:
        return p
    if gpu_named(args):
        return with_load_failure(p, verdict)
    note = (
        f"no GPU named (--gpu): on the assumed {args.device.name}, {verdict.reason.split(': vLLM')[0]}; "
        "name the GPU for a verdict"
    )
    return replace(p, notes=(*p.notes, note))


def _consequence(verdict: Verdict) -> str:
    if verdict.fails_in == "load_model":
        return "torch.OutOfMemoryError in load_model"
    if verdict.fails_in == "initialize_kv_cache":
        return "torch.OutOfMemoryError in initialize_kv_cache"
    return "ValueError: No available memory for the cache blocks"


def _undetermined(p: Plan, reason: str) -> Plan:
    """``p`` (planned without a budget) saying first why the budget was not estimated."""
    notes = tuple(n for n in p.notes if not n.startswith(_NO_BUDGET_NOTE))
    line = f"KV budget not estimated: {reason}; whether it fits is undetermined"
    return replace(p, notes=(line, *notes), log_note="no KV cache line predicted: KV budget not estimated (see below)")


def _tokens(p: Plan) -> int | None:
    return p.capacity.kv_cache_size_tokens if p.capacity is not None else None


def _request_bytes(p: Plan) -> int | None:
    if p.capacity is not None:
        return p.capacity.request_bytes
    if p.memory_error is not None:
        return p.memory_error.needed
    return None


def with_processor_sizes(shape: ForwardShape, source: str, *, audio_seq_length_given: bool = False) -> ForwardShape:
    """``shape`` with the largest image and video sizes of the checkpoint's
    ``preprocessor_config.json`` / ``video_preprocessor_config.json`` beside ``source`` (the
    config.json), as vLLM's processors read them; unchanged for a model without a bounded vision
    tower or without those files (the published defaults then apply, and the term says so).
    Gemma-4 with audio: ``processor_config.json``'s ``audio_seq_length`` unless
    ``--mm-processor-kwargs`` gave one (``audio_seq_length_given``).

    :raises InputError: an unreadable or malformed processor config (named)."""
    from dryboot.vllm.transformers_utils.config import load_config_json  # at call: I/O at the edge
    from dryboot.vllm.worker.encoder_profile import (
        GLM4V_PROCESSOR,
        GLM4V_WRAPPERS,
        LLAMA4_VISION_TYPE,
        kimi_k25_sized,
        kimi_vl_in_token_limit,
        llama4_max_patches,
        llama4_tile_refusal,
        minicpmv4_6_processing,
        processor_max_pixels,
        with_audio_seq_length,
    )

    tower = shape.vision_tower
    if tower is None:
        return shape
    folder = Path(source).parent
    if tower.audio_item_tokens and not audio_seq_length_given and (folder / "processor_config.json").is_file():
        # Gemma-4's audio_seq_length: --mm-processor-kwargs wins over the checkpoint's processor config
        tower = with_audio_seq_length(tower, load_config_json(folder / "processor_config.json")[1])
        shape = replace(shape, vision_tower=tower)
    found = [folder / n for n in ("preprocessor_config.json", "video_preprocessor_config.json")]
    image, video = (load_config_json(p)[1] if p.is_file() else None for p in found)
    if tower.minicpmv is not None and (folder / "processor_config.json").is_file():
        nested = load_config_json(folder / "processor_config.json")[1]
        if any(k in nested for k in ("image_processor", "video_processor")):  # transformers 5 reads these first
            why = "processor_config.json nests the processors' sizes: not read, not bounded"
            return replace(shape, vision_tower=None, vision_refusal=why)
    if tower.model_type == LLAMA4_VISION_TYPE and (why := llama4_tile_refusal(tower, image)):
        return replace(shape, vision_tower=None, vision_refusal=why)
    if image is None and video is None:
        return shape
    if tower.model_type in GLM4V_WRAPPERS.values():  # GLM-4.1V: only Glm4vProcessor's count is modelled
        # vLLM's get_processor_config: the first of these files that names a processor_class
        cls = None
        for name in ("processor_config.json", "preprocessor_config.json", "tokenizer_config.json"):
            named = folder / name
            held = load_config_json(named)[1] if named.is_file() else None
            if held and "processor_class" in held:
                cls = held["processor_class"]
                break
        if cls != GLM4V_PROCESSOR:
            why = (
                f"processor_class {cls!r}: vLLM counts its video by the tokenizer's timestamp tokens, not bounded"
                if cls
                else "no processor_class in the processor configs: vLLM's count is not known, not bounded"
            )
            return replace(shape, vision_tower=None, vision_refusal=why)
    if tower.minicpmv is not None:  # MiniCPM-V 4.6 / 4.7: the processors' slices size the items
        return replace(shape, vision_tower=minicpmv4_6_processing(tower, image, video))
    if tower.model_type == "kimi_k25_vision":  # Kimi-K2.5: media_proc_cfg sizes the item
        return shape if image is None else replace(shape, vision_tower=kimi_k25_sized(tower, image))
    if tower.model_type == "moonvit":  # Kimi-VL: its in_token_limit, not a side, sizes the item
        return replace(shape, image_max_pixels=kimi_vl_in_token_limit(image, tower))
    if tower.model_type == LLAMA4_VISION_TYPE:  # its tiles, not a side, size the item
        return replace(shape, image_max_pixels=llama4_max_patches(image))
    image_px, video_px = processor_max_pixels(image, video)
    return replace(shape, image_max_pixels=image_px, video_max_pixels=video_px)


def plan_with_budget(
    model: ModelGeometry,
    args: EngineArgs,
    *,
    config: Mapping[str, Any],
    weights_bytes: int | None,
    weights_refused: str | None = None,
    drafter: Drafter | None = None,
    policies: Policies | None = None,
    compile_cache: str = "unknown",
    margin: int = DEFAULT_MARGIN_BYTES,
    source: str = "config.json",
    stage_weights_bytes: tuple[int, ...] = (),
    language_model_only: bool = False,
    drafter_weights: tuple[int, int, str] | None = None,
    drafter_weights_refused: str | None = None,
) -> BudgetPlan:
    """Plan ``model`` with vLLM's KV budget predicted for ``args``' GPU (see the module text).

    :param config: the model's ``config.json`` (the forward's widths).
    :param weights_bytes: the rank's weights, or ``None`` with ``weights_refused`` saying why.
    :param stage_weights_bytes: under pipeline parallelism, each stage's rank's weights: every
        stage's budget is estimated (the last one runs the sampler) and the smallest estimate is
        planned for every stage, which never overstates the engine's blocks (vLLM keeps each
        stage's own budget and the fewest blocks of any stage).
    :param language_model_only: ``--language-model-only``: no encoder profiling.
    :param drafter_weights: the drafter's own weights per rank of the last stage (low, high
        allocated bytes, how decided); a speculative method that loads a model (anything but
        ``ngram`` / ``suffix``) without them is undetermined, ``drafter_weights_refused`` saying why.
    :raises InputError: bad flags or model (as :func:`~dryboot.planner.plan.plan`).
    """
    # the engine config and the layout resolved once; each plan below differs in its KV budget
    plan_at = plans_by_memory(model, args, drafter=drafter, policies=policies)
    base = plan_at()
    method = args.speculative_method or (drafter.method if drafter is not None else None)
    if weights_bytes is not None and drafter_weights is None and method and method not in MODEL_FREE_METHODS:
        weights_bytes, weights_refused = (
            None,
            (f"speculative decoding ({method}): the drafter's weights: {drafter_weights_refused or 'not given'}"),
        )
    if weights_bytes is None:
        reason = f"weights: {weights_refused or 'not given'}"
        return BudgetPlan(_undetermined(base, reason), refused=reason, verdict=Verdict("undetermined", None, reason))
    gpu: GPU = args.device
    stages = stage_weights_bytes if len(stage_weights_bytes) == args.pipeline_parallel_size else (weights_bytes,)
    # the drafter loads on the last stage, inside its Model loading took (its low bound checked)
    loaded = [*stages[:-1], stages[-1] + (drafter_weights[0] if drafter_weights else 0)]
    heaviest = max((weights_bytes, *loaded))
    load = weights_check(args, heaviest)

    def estimate(cache: str) -> Budget:
        budgets = [
            estimate_budget(
                base.model,
                base.args,
                weights_bytes=w,
                gpu=gpu,
                rules=base.rules,
                drafter=drafter,
                shape=shape,
                backend=base.backend.name,
                compile_cache=cache,
                pp_rank=i if len(stages) > 1 else 0,
                language_model_only=language_model_only,
                drafter_weights=drafter_weights,
            )
            for i, w in enumerate(stages)
        ]
        chosen = min(budgets, key=lambda b: b.available_kv_cache_bytes.estimate)
        return _smallest(chosen, budgets) if len(budgets) > 1 else chosen

    try:
        shape = with_processor_sizes(
            forward_shape(
                config,
                source,
                args.dtype if args.dtype != "auto" else base.model_dtype,
                dict(args.mm_processor_kwargs or ()),
            ),
            source,
            audio_seq_length_given="audio_seq_length" in dict(args.mm_processor_kwargs or ()),
        )
        cold, warm = estimate("cold"), estimate("warm")
    except InputError as e:
        why = e.line()
        if load is not None:
            return BudgetPlan(with_load_failure(_undetermined(base, why), load), verdict=load, refused=why)
        return BudgetPlan(_undetermined(base, why), refused=why, verdict=Verdict("undetermined", None, why))
    compiled = cold.available_kv_cache_bytes != warm.available_kv_cache_bytes
    budget = warm if compile_cache == "warm" or not compiled else cold
    if load is not None and load.fails_in == "load_model" and budget.startup_gate.passes is not False:
        return BudgetPlan(plan=with_load_failure(base, load), budget=budget, verdict=load, margin_bytes=margin)

    def at(b: Budget) -> dict[str, Plan]:
        kv = b.available_kv_cache_bytes
        return {
            name: plan_at(non_kv_memory_bytes=b.requested_bytes - value)
            for name, value in (("estimate", kv.estimate), ("low", kv.low), ("high", kv.high))
        }

    def tokens(plans: dict[str, Plan]) -> tuple[int | None, int | None, int | None]:
        return _tokens(plans["low"]), _tokens(plans["estimate"]), _tokens(plans["high"])

    plans = at(budget)
    starts = tuple(
        Start(cache, b, tokens(plans) if b is budget else tokens(at(b)))
        for cache, b in (("cold", cold), ("warm", warm))
        if compiled or cache == "warm"
    )
    request = _request_bytes(plans["estimate"])
    verdict = budget_verdict(budget, request) if request is not None else None
    estimate_plan = plans["estimate"]
    if load is not None and budget.startup_gate.passes is not False:
        verdict = replace(load, request_bytes=request)
        return BudgetPlan(
            plan=with_load_failure(estimate_plan, load),
            budget=budget,
            verdict=verdict,
            margin_bytes=margin,
            tokens=tokens(plans),
            starts=starts,
            safe_refused="the weights alone exceed the requested share",
        )
    safe = safe_kv_cache_memory_bytes(budget, margin)
    refused, max_len = _pool_refused(plan_at, args, safe, heaviest)
    if refused is not None and verdict is not None and verdict.word == "fits":
        verdict = Verdict(
            "tight",
            request,
            f"{verdict.reason}, but not within the safe pinned pool ({refused}); vLLM fits it only where the "
            "transients stay below their high bounds",
        )
    return BudgetPlan(
        plan=estimate_plan,
        budget=budget,
        verdict=verdict,
        safe_kv_cache_memory_bytes=None if refused is not None else safe,
        margin_bytes=margin,
        tokens=tokens(plans),
        starts=starts,
        safe_refused=refused,
        max_model_len_fits=max_len,
        refused_pool_bytes=safe if refused is not None else None,
    )


def _pool_refused(
    plan_at: Callable[..., Plan], args: EngineArgs, pool: int, weights_bytes: int
) -> tuple[str | None, int | None]:
    """Whether vLLM accepts ``pool`` as ``--kv-cache-memory-bytes`` (the plan of that pool: one
    ``max_model_len`` request fits it, vLLM's ``check_enough_kv_cache_memory``, and the weights
    and it fit the GPU, :func:`weights_check`): ``(None, None)`` when it does, else why not and
    the largest ``max_model_len`` that fits it (vLLM's ``estimate_max_model_len``; 0: none).
    ``plan_at``: the model's plans by memory flags (:func:`~dryboot.planner.plan.plans_by_memory`)."""
    if pool <= 0:
        return "no room is left for a pinned pool: won't at any max length", 0
    pinned_args = args.evolve(kv_cache_memory_bytes=pool)
    pinned = plan_at(kv_cache_memory_bytes=pool)
    err = pinned.memory_error
    if err is not None:
        longest = err.estimated_max_model_len
        fits = f"the largest that fits: {longest:,}" if longest > 0 else "not even one token fits"
        return (
            f"one {err.max_model_len:,}-token request needs "
            f"{err.needed / (1 << 30):.2f} GiB, above the safe pool {pool / (1 << 30):.2f} GiB: won't at this max "
            f"length pinned ({fits}, vLLM's estimate_max_model_len)",
            longest,
        )
    if weights_check(pinned_args, weights_bytes) is not None or not pinned.ok:
        return "vLLM refuses the pinned pool (see its plan)", None
    return None, None


def _smallest(chosen: Budget, budgets: list[Budget]) -> Budget:
    """``chosen`` (the stage with the smallest estimate) with each bound the smallest of any stage."""
    kv = KvEstimate(
        min(b.available_kv_cache_bytes.low for b in budgets),
        chosen.available_kv_cache_bytes.estimate,
        min(b.available_kv_cache_bytes.high for b in budgets),
    )
    each = ", ".join(f"{b.available_kv_cache_bytes.estimate / (1 << 30):.2f}" for b in budgets)
    note = f"pipeline stages' estimates {each} GiB: the smallest is planned for every stage (never more blocks)"
    return replace(chosen, available_kv_cache_bytes=kv, notes=(*chosen.notes, note))


def budget_note(bp: BudgetPlan) -> str:
    """One line: the predicted budget, its interval, the tokens at both bounds and the verdict
    (or why no budget was estimated)."""
    if bp.budget is None:
        word = "undetermined" if bp.verdict is None else bp.verdict.word
        why = "" if bp.verdict is None or word == "undetermined" else f": {bp.verdict.reason}"
        return f"KV budget not estimated: {bp.refused}; verdict {word}{why}"
    if bp.verdict is not None and bp.verdict.fails_in == "load_model":
        return f"KV budget not reached (vLLM {bp.budget.release}): verdict won't: {bp.verdict.reason}"
    kv = bp.budget.available_kv_cache_bytes
    lo, est, hi = bp.tokens
    gib = 1 << 30
    at = ["none fit" if n is None else f"{n:,}" for n in (lo, hi)]
    tokens = "" if est is None else f"; KV cache tokens {est:,} ({at[0]} .. {at[1]})"
    verdict = "" if bp.verdict is None else f"; verdict {bp.verdict.word}"
    pool = bp.safe_kv_cache_memory_bytes
    safe = "" if pool is None else f"; safe --kv-cache-memory-bytes={pool}"
    return (
        f"KV budget predicted (vLLM {bp.budget.release}, util {bp.budget.gpu_memory_utilization}): "
        f"Available KV cache memory {kv.estimate / gib:.2f} GiB ({kv.low / gib:.2f} .. {kv.high / gib:.2f}){tokens}"
        f"{verdict}{safe}"
    )


def drafter_weights_term(
    drafter: Drafter | None, args: EngineArgs, config: Mapping[str, Any]
) -> tuple[tuple[int, int, str] | None, str | None]:
    """The drafter's own weights per rank of the last stage as (low, high allocated bytes, how)
    for :func:`plan_with_budget`, or ``None`` and why (``None, None`` without speculative
    decoding); ``model_loader.loader.drafter_model_weights`` reads the drafter's config and
    safetensors headers."""
    method = drafter.method if drafter is not None else args.speculative_method
    if not method or method in MODEL_FREE_METHODS:
        return None, None
    # at call: only a budget with a drafter reads the drafter's files
    from dryboot.vllm.model_executor.model_loader.loader import drafter_model_weights

    try:
        source = drafter.model.source if drafter is not None else args.speculative_model_path
        dw = drafter_model_weights(
            Path(str(source)) if source is not None else None,
            config,
            method,
            tp=args.tensor_parallel_size,
            pp=args.pipeline_parallel_size,
            # the drafter's rotary table spans at least the target's max_model_len (the derived
            # one: max_position_embeddings, when not given)
            max_model_len=args.max_model_len
            if args.max_model_len and args.max_model_len > 0
            else int((config.get("text_config") or config).get("max_position_embeddings") or 0),
            dtype=args.dtype,
            num_speculative_tokens=args.num_speculative_tokens or None,
            vllm_version=args.vllm_version,
        )
    except InputError as e:
        return None, e.line()
    return (dw.low.loaded_bytes, dw.high.loaded_bytes, dw.how), None


def weights_max_model_len(model: ModelGeometry, args: EngineArgs, drafter: Drafter | None) -> int | None:
    """The ``max_model_len`` vLLM builds the model with, for a rotary table spanning it (Cohere
    Compass's text layers: ``model_weights(max_model_len=)``): the given or derived length
    (:func:`derive_max_model_len`; ``-1`` builds at the derived one, fitted later); ``None`` with a
    drafter (its limit may lower the length) or where the length is refused (the weights walk then
    refuses such a model by name)."""
    if drafter is not None:
        return None
    try:
        return derive_max_model_len(model, args)
    except InputError:
        return None

"""``check_log``: read a vLLM boot log, rebuild the boot's flags, predict its KV lines, compare.

The flags come from the logged ``non-default args`` (:mod:`dryboot.checklog.argmap`), completed by
what the log itself says when the args are silent: ``Using max model len N`` and ``Chunked prefill
is enabled with max_num_batched_tokens=N``. The KV budget is ``kv_cache_memory_bytes`` when the
args give it (exact), else the ``Available KV cache memory: X GiB`` lines (each worker's, the
interval X rounds from; vLLM keeps the fewest blocks of all workers, so the smallest worker's
budget decides), else the GiB the not-enough-memory error or the auto-fit line prints.
"""

from __future__ import annotations

import itertools
import math
import re
import sys
from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any, BinaryIO

from dryboot.checklog.argmap import LoggedArgs, map_args, validate_logged
from dryboot.checklog.compare import (
    GIB,
    Budget,
    Candidate,
    Comparison,
    Inputs,
    block_stride,
    budget_interval_anywhere,
    compare,
    describe_budget,
    figures_agree,
    gib_interval,
    predicted_lines,
)
from dryboot.checklog.facts import Fact, first_of
from dryboot.checklog.literal import parse_args_prefix
from dryboot.checklog.locate import Located, find_config
from dryboot.checklog.memory import MemoryReport, check_memory
from dryboot.checklog.parse import (
    Kind,
    KVLine,
    LogFacts,
    LogLine,
    iter_boots,
    iter_numbered_log_lines,
    iter_relevant_lines,
    kv_figures,
    read_log,
)
from dryboot.errors import InputError
from dryboot.inputs import open_regular
from dryboot.planner.budget import weights_check
from dryboot.planner.flags import add_custom_dtypes
from dryboot.planner.plan import Drafter, Policies, plan
from dryboot.planner.runner import load_drafter_and_k
from dryboot.vllm.engine_args import EngineArgs
from dryboot.vllm.gpus import GPU, gpu_table, parse_gpu
from dryboot.vllm.model_executor.model_loader.loader import model_weights
from dryboot.vllm.models.registry import ARCHITECTURES
from dryboot.vllm.transformers_utils.config import load_model
from dryboot.vllm.versions import DEFAULT_VERSION, VERSIONS, rules_for

_SPEC_KEYS_READ = ("method", "model", "num_speculative_tokens", "kv_cache_dtype", "attention_backend", "block_size")
_VERSION = re.compile(r"^v?(\d+)\.(\d+)(?:\.(\d+))?")


@dataclass(frozen=True)
class CheckReport:
    """Everything ``dryboot check-log`` reports."""

    source: str
    facts: LogFacts
    logged: LoggedArgs
    config: Located
    architecture: str
    version: str
    candidate: Candidate
    args: EngineArgs
    speculative: dict[str, object] | None
    budget: Budget | None
    comparison: Comparison
    notes: tuple[str, ...] = field(default=())
    search: Search | None = None
    memory: MemoryReport | None = None  # the memory lines against the budget (not in the exit code)

    @property
    def ok(self) -> bool:
        return not self.comparison.differs


def _rules_version(requested: str | None, logged: str | None, notes: list[str], source: str) -> str:
    if requested is not None:
        return rules_for(requested).version
    if logged is None:
        notes.append(f"the log names no vLLM version: vLLM {DEFAULT_VERSION}'s rules")
        return DEFAULT_VERSION
    m = _VERSION.match(logged)
    if m is None:
        raise InputError(source, "version", f"cannot read the logged vLLM version {logged!r}; pass --vllm-version")
    plain = f"{m[1]}.{m[2]}.{m[3] or 0}"
    oldest = next(iter(VERSIONS))
    if tuple(int(x) for x in plain.split(".")) < tuple(int(x) for x in oldest.split(".")):
        notes.append(
            f"the log is from vLLM {logged}, older than any release dryboot models: checked against vLLM "
            f"{oldest}'s rules, the nearest (pass --vllm-version to choose)"
        )
        plain = oldest
    version = rules_for(plain, source=f"{source}: vLLM version").version
    if version != plain:
        notes.append(
            f"the log is from vLLM {logged}: planned with vLLM {version}'s rules, the newest dryboot knows before it"
        )
    if version != DEFAULT_VERSION:
        notes.append(f"vLLM {version}'s rules are modelled from release notes; only {DEFAULT_VERSION} is verified")
    return version


def _budget(facts: LogFacts, args: EngineArgs, source: str) -> tuple[Budget | None, str]:
    """(budget, why there is none)."""
    if args.kv_cache_memory_bytes is not None:
        return Budget(args.kv_cache_memory_bytes, args.kv_cache_memory_bytes, "kv_cache_memory_bytes in the args"), ""
    if facts.available:
        intervals = []
        for a in facts.available:
            interval = gib_interval(a.gib)
            if interval is None:
                raise InputError(source, a.line.where, f"'Available KV cache memory: {a.gib} GiB' is not a GiB figure")
            intervals.append((interval, a))
        lo = min(i[0][0] for i in intervals)
        hi = min(i[0][1] for i in intervals)
        shown = ", ".join(f"{a.gib} GiB" + (f" ({a.line.process})" if a.line.process else "") for _, a in intervals)
        what = "Available KV cache memory: " + shown
        if len(intervals) > 1:
            what += "; vLLM keeps the fewest blocks of all workers"
        if lo <= 0:  # a failed boot: vLLM's KV sizing refuses any budget <= 0
            what += f"; {FAILED_BOOT}, planned at 0 B"
            return Budget(max(lo, 0), max(hi, 0), what), ""
        return Budget(lo, hi, what), ""
    for line in facts.kv_lines:
        gib = line.figures.get("available_gib") or line.figures.get("gib") or line.figures.get("full_gib")
        if gib and (interval := gib_interval(gib)):
            return Budget(interval[0], interval[1], f"{gib} GiB in the {line.kind.value} line, {line.where}"), ""
    return None, "the log has no 'Available KV cache memory' line and the args no kv_cache_memory_bytes"


#: What vLLM does with a KV budget of 0 B or less (``_check_enough_kv_cache_memory``).
FAILED_BOOT = "at most 0 B: vLLM raises 'No available memory for the cache blocks'"


def failed_boot_reason(facts: LogFacts, options: dict[str, object] | None = None) -> str | None:
    """Why a boot without KV lines failed, when its own lines say so: a worker's ``Available KV
    cache memory`` at or below 0 GiB, or torch's CUDA out-of-memory error (with the stage its
    traceback names, checked against dryboot's prediction when a config is given: see
    :func:`_predicted_failure`); ``None`` otherwise."""
    negative = next((a for a in facts.available if a.gib.startswith("-") or float(a.gib) == 0), None)
    oom = first_of(facts.stated, "failure")
    if negative is None and oom is not None:
        stage = first_of(facts.stated, "failure_stage")
        where = f" in {stage.value} ({stage.line.where})" if stage else " (the traceback names no stage dryboot reads)"
        said = f"the boot failed: {oom.said!r} ({oom.line.where}){where}"
        return said + _predicted_failure(facts, stage.value if stage else None, options or {})
    if negative is None:
        return None
    return (
        f"the boot failed: 'Available KV cache memory: {negative.gib} GiB' ({negative.line.where}) is {FAILED_BOOT} "
        "for any model (its KV sizing, before a block is allocated); the log ends before that error"
    )


def _predicted_failure(facts: LogFacts, stage: str | None, options: dict[str, object]) -> str:
    """dryboot's prediction of a failure in ``load_model`` (the weights per rank against the
    GPU the log names, :func:`dryboot.planner.budget.weights_check`), as a clause of the reason;
    empty without a config or a GPU."""
    model_path = options.get("model_path")
    if stage != "load_model" or not isinstance(model_path, str):
        return ""
    notes: list[str] = []
    gpu = _gpu_from_log(facts, options.get("gpu"), options.get("gpu_memory_bytes"), notes)  # type: ignore[arg-type]
    if gpu is None:
        return "; name the GPU (--gpu) for dryboot's prediction of it"
    try:
        args = EngineArgs(gpu=gpu)
        weights = model_weights(Path(find_config(model_path, None, source="log").path))
    except InputError as exc:
        return f"; dryboot cannot predict it ({exc.reason})"
    if weights.refused or not weights.stages:
        return f"; dryboot cannot predict it (weights: {weights.refused or 'not modelled'})"
    verdict = weights_check(args, weights.stages[0].loaded_bytes)
    if verdict is not None and verdict.fails_in == "load_model":
        return f"; dryboot predicts it on the {gpu.label()}: {verdict.reason}"
    gib = weights.stages[0].loaded_bytes / GIB
    return (
        f"; dryboot does not predict it on the {gpu.label()} at vLLM's defaults ({gib:.2f} GiB of weights "
        "per rank fit): the boot's flags (TP, quantization) or another process's memory differ"
    )


#: Flags a missing or cut args line leaves unknown that change the logged figures, searched in
#: this order (values tried: see :func:`_dimensions`).
SEARCHED = ("kv_cache_dtype", "enable_prefix_caching", "speculative_config", "tensor_parallel_size")
#: Speculative tokens tried: an MTP-capable model's when the args are unknown, a drafter's whose
#: ``num_speculative_tokens`` the args hide (vLLM accepts any positive count; 16 is the most a
#: posted boot used).
SPEC_TOKENS = tuple(range(1, 17))
#: Tensor-parallel sizes tried (those the rank prefixes and the model's heads allow).
TP_SIZES = tuple(range(1, 9))
#: ``--kv-cache-dtype`` values with their own page layout, tried when the KV dtype is unknown
#: (the release's others share a layout with one of them: :data:`SAME_KV_LAYOUT`).
SEARCHED_KV_DTYPES = (
    "auto",
    "fp8",
    "int8_per_token_head",
    "fp8_per_token_head",
    "int4_per_token_head",
    "nvfp4",
    "nvfp4_4over6",
    "fp8_ds_mla",
)
#: Values that give the same KV pages as the searched one (said in the report, not planned again).
SAME_KV_LAYOUT = {"fp8": ("fp8_e4m3", "fp8_e5m2"), "auto": ("bfloat16", "float16")}
#: At most this many flag combinations are planned in full for one boot (about a second); the
#: values of each flag are first told apart (:func:`_classes`) and, when the log states a budget
#: and a capacity, KV dtype x TP pairs far from the logged capacity dropped (:func:`_near_pairs`).
MAX_COMBINATIONS = 160
#: At most this many combinations get a search of the one KV budget that gives their lines (a
#: log that states no budget: each such search plans about twenty budgets).
MAX_JOINT_SEARCHES = 24


def _describe_value(key: str, value: object) -> str:
    if key == "speculative_config":
        return "no speculative decoding" if value is None else f"MTP k={value}"
    if key == "enable_prefix_caching":
        if isinstance(value, tuple):
            on, mode = value
            return "prefix caching " + ("on" if on else "off") + (f" (mamba cache mode {mode})" if mode else "")
        return "prefix caching " + ("on" if value else "off")
    if key == "kv_cache_dtype":
        return f"--kv-cache-dtype {value}"
    if key == "tensor_parallel_size":
        return f"TP {value}"
    if key == "num_speculative_tokens":
        return f"num_speculative_tokens {value}"
    return f"{key} {value}"


@dataclass(frozen=True)
class Combination:
    """One set of values for the flags the log does not give."""

    values: tuple[tuple[str, object], ...]

    def describe(self) -> str:
        return ", ".join(_describe_value(k, v) for k, v in self.values) or "the logged flags"


@dataclass(frozen=True)
class Search:
    """The flags the log leaves unknown and every combination of values that explains its lines.

    :param tried: combinations planned in full.
    :param space: the values searched, per flag, in words.
    :param same: per flag value searched, the values that give the same KV lines (planned once).
    :param nearest: when none explains: the combination that comes nearest (most lines matching,
        then the capacity figure nearest the logged one), in words.
    :param not_planned: combinations neither screened nor planned, beyond the search's limits
        (:data:`MAX_SCREENED`, :data:`MAX_COMBINATIONS`; 0: the whole space).
    :param screened: combinations screened by one plan each (:func:`_passes_screen`).
    :param pruned: KV dtype x TP pairs the planner refuses (not plannable).
    """

    unknown: tuple[str, ...]
    tried: int
    explaining: tuple[Combination, ...]
    budget_notes: tuple[str, ...] = ()
    space: str = ""
    same: tuple[str, ...] = ()
    nearest: str | None = None
    not_planned: int = 0
    pruned: tuple[str, ...] = ()
    screened: int = 0


def check_log(
    text: str,
    *,
    source: str = "log",
    model_path: str | None = None,
    vllm_version: str | None = None,
    policies: Policies | None = None,
    custom_dtypes: tuple[str, ...] = (),
    speculative_model: str | None = None,
    gpu_memory_bytes: int | None = None,
    gpu: GPU | None = None,
) -> CheckReport:
    """Check a vLLM boot log (its text, read as one boot) line by line against dryboot's prediction.

    :param model_path: the model's config.json (or its directory); else found from the log.
    :param vllm_version: rules to plan with (default: the logged version's).
    :param speculative_model: the drafter's config.json when the log's drafter cannot be found.
    :param gpu_memory_bytes: the GPU's total memory, for vLLM's GPU-dependent defaults.
    :param gpu: the GPU the log was written on (``--gpu``; default an H200).
    :raises InputError: the log or a config cannot be read, or the args hold a key dryboot
        cannot model.
    """
    facts = read_log(text)
    if not facts.is_vllm_log:
        raise InputError(source, None, "no vLLM line found (no version, args, KV budget or KV cache line)")
    return check_facts(
        facts,
        source=source,
        model_path=model_path,
        vllm_version=vllm_version,
        policies=policies,
        custom_dtypes=custom_dtypes,
        speculative_model=speculative_model,
        gpu_memory_bytes=gpu_memory_bytes,
        gpu=gpu,
    )


def check_facts(
    facts: LogFacts,
    *,
    source: str = "log",
    model_path: str | None = None,
    vllm_version: str | None = None,
    policies: Policies | None = None,
    custom_dtypes: tuple[str, ...] = (),
    speculative_model: str | None = None,
    gpu_memory_bytes: int | None = None,
    gpu: GPU | None = None,
    given: dict[str, object] | None = None,
    memory_only: bool = False,
) -> CheckReport:
    """:func:`check_log` for one boot's facts (see :func:`dryboot.checklog.parse.iter_boots`).

    :param given: vLLM's flags given to check-log (``kv_cache_dtype``, ``tensor_parallel_size``,
        ``enable_prefix_caching``, ``speculative_config`` as a dict): known facts, never searched.
    :param memory_only: a boot without KV lines is planned for its memory lines alone.
    :raises InputError: as :func:`check_log`; a given flag the log's args contradict. A refusal
        of a value read from the log names it as read from the log (its line), never as a flag
        the user gave.
    """
    options = {"model_path": model_path, "vllm_version": vllm_version, "policies": policies}
    try:
        return _check_facts(
            facts,
            source=source,
            custom_dtypes=custom_dtypes,
            speculative_model=speculative_model,
            gpu_memory_bytes=gpu_memory_bytes,
            gpu=gpu,
            given=given,
            memory_only=memory_only,
            **options,  # type: ignore[arg-type]
        )
    except InputError as exc:
        raise _as_read_from_log(exc, facts, source, given) from None


#: The start of plan's note on a missing KV budget (:func:`dryboot.vllm.config.resolve`'s budget
#: notes): it names plan's budget options; check-log reads the budget from the log alone.
_PLAN_NO_BUDGET = "No KV budget given ("

#: check-log's own options: a refusal naming one names what the user gave.
_OWN_OPTIONS = frozenset(
    {"--model", "--speculative-model", "--vllm-version", "--gpu", "--gpu-memory", "--custom-kv-cache-dtype"}
)


def _as_read_from_log(exc: InputError, facts: LogFacts, source: str, given: dict[str, object] | None) -> InputError:
    """``exc`` with a vLLM flag it names (``--max-model-len``...) said to be read from the log,
    unless the user gave that flag to check-log."""
    flag = exc.source
    name = flag.split()[0].lstrip("-").removeprefix("no-").replace("-", "_") if flag.startswith("--") else ""
    if not flag.startswith("--") or flag.split()[0] in _OWN_OPTIONS or name in (given or {}):
        return exc
    key = flag.lstrip("-").replace("-", "_")
    where = facts.args_line.where if facts.args_line is not None else _stating_line(facts, name)
    value = f" {exc.where}" if exc.where else ""
    return InputError(source, f"{key}{value} read from the log ({where})", exc.reason)


def _stating_line(facts: LogFacts, name: str) -> str:
    """Where a log without an args line states the flag ``name`` (the attention backend chosen,
    the engine's config line...): that line's place and its words, else "its lines"."""
    fact = next((f for f in facts.stated if f.name == name), None)
    return f"{fact.said!r}, {fact.line.where}" if fact is not None else "its lines"


def _check_facts(
    facts: LogFacts,
    *,
    source: str,
    model_path: str | None,
    vllm_version: str | None,
    policies: Policies | None,
    custom_dtypes: tuple[str, ...],
    speculative_model: str | None,
    gpu_memory_bytes: int | None,
    gpu: GPU | None,
    given: dict[str, object] | None,
    memory_only: bool = False,
) -> CheckReport:
    if not facts.kv_lines and not memory_only:
        raise InputError(
            source,
            None,
            "no KV cache line to check (GPU KV cache size, block size, mamba padding, padding layers, "
            "the not-enough-memory error): the log ends before the KV cache is set up",
        )
    notes: list[str] = []
    unknown: list[str] = []
    if facts.args_text is not None:
        where = facts.args_line.where if facts.args_line else "non-default args"
        parsed, cut = parse_args_prefix(facts.args_text, f"{source}: {where}")
        drafter_cut = cut == "speculative_config" and _cut_drafter(facts.args_text, parsed)
        logged = map_args(parsed, source)
        if cut is not None:
            known = set(parsed)
            unknown = [k for k in SEARCHED if k not in known]
            if drafter_cut:  # the drafter is read; only its token count is cut: that is searched
                unknown.append("num_speculative_tokens")
            notes.append(
                f"the args line is cut at {cut!r} ({where}): {len(parsed)} entries read; unknown flags: "
                + (", ".join(unknown) or "none that dryboot searches")
            )
    else:
        logged = LoggedArgs(EngineArgs(), {}, None, None, None, None)
        unknown = list(SEARCHED)
        notes.append("the log has no 'non-default args' line: unknown flags: " + ", ".join(SEARCHED))
    notes.extend(logged.notes)
    version = _rules_version(vllm_version, _logged_version(facts, notes), notes, source)

    located = find_config(
        model_path,
        logged.model or facts.served_model,
        revision=logged.revision,
        hf_config_path=logged.hf_config_path,
        source=source,
    )
    model = load_model(located.path)
    family = ARCHITECTURES.get(model.architecture)
    served = model.architecture if family is None else family.served_architecture(model, version)
    _check_architecture(facts, served, str(located.path), model_path is not None, notes)

    args = logged.args
    for key, value in (given or {}).items():  # vLLM's flags given to check-log: known facts
        if key == "speculative_config":
            continue
        _check_given(key, value, args, logged, facts, unknown, model, version)
        changed: dict[str, Any] = {key: value}
        args = replace(args, **changed)
        if key in unknown:
            unknown.remove(key)
        notes.append(f"{given_spelling(key, value)}: given on the command line (a known fact, not searched)")
    # the flags the log's own lines state (after the args line's, which are refused first)
    stated = StatedFlags()
    args, gpu = _apply_stated(facts, logged, args, unknown, given or {}, gpu, gpu_memory_bytes, stated, notes, source)
    if "max-model-len" not in logged.flags:
        length, said = _logged_max_model_len(facts)
        if length is not None:
            args = replace(args, max_model_len=length)
            notes.append(f"max_model_len {length} read from the log ({said})")
    if "max-num-batched-tokens" not in logged.flags and facts.max_num_batched_tokens is not None:
        args = replace(args, max_num_batched_tokens=facts.max_num_batched_tokens)
        notes.append(
            f"max_num_batched_tokens {facts.max_num_batched_tokens} read from the log ('Chunked prefill is enabled')"
        )
    if "tensor_parallel_size" in unknown and facts.tp_ranks:
        args = replace(args, tensor_parallel_size=facts.tp_ranks)
        notes.append(
            f"tensor_parallel_size: ranks up to TP{facts.tp_ranks - 1} read from the log (Worker_TP prefixes): "
            f"at least {facts.tp_ranks}, larger sizes searched (the log does not state it; give "
            "--tensor-parallel-size N if you know it)"
        )
    args = _allow_logged_length(model, args, notes)
    if gpu_memory_bytes is not None:
        args = replace(args, gpu_memory_bytes=gpu_memory_bytes)
    if gpu is not None:
        args = replace(args, gpu=gpu)
    args = add_custom_dtypes(args, list(custom_dtypes))
    args = replace(args, vllm_version=version)
    validate_logged(args, source)

    spec_in = logged.speculative
    if stated.speculative is not None and "speculative_config" in unknown:
        spec_in = stated.speculative
        unknown.remove("speculative_config")
    elif stated.speculative is not None and "num_speculative_tokens" in unknown and spec_in is not None:
        spec_in = {**spec_in, "num_speculative_tokens": stated.speculative["num_speculative_tokens"]}
        unknown.remove("num_speculative_tokens")
    if given and "speculative_config" in given:
        _check_given_speculative(given["speculative_config"], logged, facts, unknown)
        spec_in = dict(given["speculative_config"])  # type: ignore[call-overload]
        if "speculative_config" in unknown:
            unknown.remove("speculative_config")
        notes.append("--speculative-config: given on the command line (a known fact, not searched)")
    if spec_in is not None and "num_speculative_tokens" not in spec_in and _names_drafter(spec_in, speculative_model):
        # vLLM needs the count with a draft model: the log ran with one, which is searched
        spec_in = {**spec_in, "num_speculative_tokens": SPEC_TOKENS[0]}
        if "num_speculative_tokens" not in unknown:
            unknown.append("num_speculative_tokens")
        notes.append(
            "the speculative config names a drafter without num_speculative_tokens (vLLM requires it with a draft "
            "model): searched"
        )
    speculative, drafter, args = resolve_speculative(
        spec_in, speculative_model, args, notes, source, target_architecture=model.architecture
    )

    budget, no_budget = _budget(facts, args, source)
    check_args = replace(args, kv_cache_memory_bytes=budget.lo if budget else None)
    check_args.validate()
    candidate = Candidate(version, policies or Policies())
    at_defaults = "under vLLM's defaults for the unknown flags (see 'unknown flags')"
    try:
        comparison = compare(facts.kv_lines, Inputs(model, args, drafter), candidate, budget, no_budget)
    except InputError as refused:
        if not unknown:
            raise
        # vLLM's defaults for the unknown flags cannot be built (DeepSeek-V4 needs an fp8 KV
        # cache): report the first combination that can, and search them all below
        first = _first_plannable(
            _Question(facts, model, args, speculative, unknown, candidate, budget, no_budget, stated)
        )
        if first is None:
            raise
        comparison, combo = first
        at_defaults = f"under {combo.describe()}, the first combination of the unknown flags that plans"
        notes.append(f"vLLM's defaults for the unknown flags are refused ({refused.reason}); {at_defaults}")
    # plan's "No KV budget given (--kv-cache-memory-bytes, ...)" names plan's options, which
    # check-log has not: the log is its only budget (said below when it states none)
    notes.extend(n for n in comparison.prediction.plan.notes if n not in notes and not n.startswith(_PLAN_NO_BUDGET))
    if vllm_version is None and facts.version is None and not any(v.how != "stated" for v in facts.versions):
        notes.append(_fitting_releases(facts, Inputs(model, args, drafter), candidate, budget, no_budget))
    if budget is None:
        notes.append(no_budget + ": the lines whose figures depend on it are unchecked")
    search = None
    if memory_only:
        unknown = []  # no KV line to explain: nothing to search
    if not unknown and budget is None and any(c.status == "unchecked" for c in comparison.checks):
        # the flags are known, the budget is not: search the one budget that gives every line
        search = _search_unknown(_Question(facts, model, args, speculative, [], candidate, budget, no_budget, stated))
    if unknown:
        search = _search_unknown(
            _Question(facts, model, args, speculative, unknown, candidate, budget, no_budget, stated)
        )
        comparison = replace(
            comparison,
            checks=tuple(
                replace(c, reason=at_defaults, explanations=()) if c.status == "differs" else c
                for c in comparison.checks
            ),
        )
    memory = check_memory(
        facts,
        comparison.prediction.plan,
        str(located.path),
        util_logged="gpu-memory-utilization" in logged.flags,
        drafter=drafter,
    )
    return CheckReport(
        source=source,
        facts=facts,
        logged=logged,
        config=located,
        architecture=model.architecture,
        version=version,
        candidate=candidate,
        args=args,
        speculative=speculative,
        budget=budget,
        comparison=comparison,
        notes=tuple(notes),
        search=search,
        memory=memory,
    )


@dataclass
class StatedFlags:
    """What the log's own lines fix of the search (:func:`_apply_stated`): the speculative
    config a line states (an MTP method and its token count), the least token count the MTP
    warning implies, and the KV dtypes a line allows (``None``: not stated)."""

    speculative: dict[str, object] | None = None
    min_speculative_tokens: int = 0
    speculative_method: str | None = None
    kv_cache_dtypes: tuple[str, ...] | None = None


#: The ``--kv-cache-dtype`` values each stated KV dtype allows (vLLM's ``_verify_cache_dtype``
#: says "Using fp8 data type" for every fp8 value; FlashInfer names the torch dtype).
_KV_FACT_ALLOWS: dict[str, tuple[str, ...]] = {
    "fp8": ("fp8", "fp8_e4m3", "fp8_e5m2"),
    "fp8_e5m2": ("fp8_e5m2",),
    "nvfp4": ("nvfp4", "nvfp4_4over6"),
    "auto": ("auto", "bfloat16", "float16"),
}
#: FlashInfer's e4m3 torch dtype is fp8 / fp8_e4m3, not e5m2.
_TORCH_E4M3 = ("fp8", "fp8_e4m3")


def _kv_allows(fact: Fact) -> tuple[str, ...]:
    if fact.said.startswith("kv_cache_dtype=torch.") and fact.value == "fp8":
        return _TORCH_E4M3
    if fact.said.startswith("kv_cache_dtype="):  # the engine's config line: the value itself
        return (fact.value,)
    return _KV_FACT_ALLOWS.get(fact.value, (fact.value,))


def _stated_value(key: str, fact: Fact) -> object:
    if key == "enable_prefix_caching":
        return fact.value == "true"
    if key in ("tensor_parallel_size", "pipeline_parallel_size", "max_model_len"):
        return int(fact.value)
    return fact.value


def _refuse_given(key: str, value: object, fact: Fact) -> InputError:
    return InputError(
        given_spelling(key, value), None, f"the log states {fact.said!r} ({fact.line.where}), which contradicts it"
    )


def _apply_stated(
    facts: LogFacts,
    logged: LoggedArgs,
    args: EngineArgs,
    unknown: list[str],
    given: dict[str, object],
    gpu: GPU | None,
    gpu_memory_bytes: int | None,
    stated: StatedFlags,
    notes: list[str],
    source: str,
) -> tuple[EngineArgs, GPU | None]:
    """Take each flag a line of the log states (:mod:`dryboot.checklog.facts`) as known: a flag
    the args line leaves unknown is set from it (and not searched), a flag given to check-log
    that contradicts it is refused naming both, a disagreement with the args line is noted.
    Returns the args and the GPU the log names (:func:`_gpu_from_log`).

    :raises InputError: a given flag the log's own lines contradict.
    """
    lines = facts.stated
    kv = [f for f in lines if f.name == "kv_cache_dtype"]
    if kv:
        allowed = set(_kv_allows(kv[0]))
        for f in kv[1:]:
            allowed &= set(_kv_allows(f))
        if not allowed:
            notes.append(
                "the log's lines state different KV dtypes: " + ", ".join(f"{f.said!r} ({f.line.where})" for f in kv)
            )
        else:
            ordered = tuple(
                d
                for d in (*_KV_FACT_ALLOWS["fp8"], *_KV_FACT_ALLOWS["nvfp4"], *_KV_FACT_ALLOWS["auto"], kv[0].value)
                if d in allowed
            )
            ordered = tuple(dict.fromkeys(ordered))
            stated.kv_cache_dtypes = ordered
            if "kv_cache_dtype" in given and given["kv_cache_dtype"] not in allowed:
                raise _refuse_given("kv_cache_dtype", given["kv_cache_dtype"], kv[0])
            if "kv_cache_dtype" in unknown:
                unknown.remove("kv_cache_dtype")
                args = replace(args, kv_cache_dtype=ordered[0])
                notes.append(
                    f"kv_cache_dtype {ordered[0]} read from the log ({kv[0].said!r}, {kv[0].line.where})"
                    + (f"; {', '.join(ordered[1:])} give the same layout" if len(ordered) > 1 else "")
                )
            elif "kv-cache-dtype" in logged.flags and args.kv_cache_dtype not in allowed:
                notes.append(
                    f"the args say --kv-cache-dtype {args.kv_cache_dtype}, but {kv[0].said!r} ({kv[0].line.where})"
                )
    for key, flag in (
        ("tensor_parallel_size", "tensor-parallel-size"),
        ("enable_prefix_caching", "enable-prefix-caching"),
        ("pipeline_parallel_size", "pipeline-parallel-size"),
        ("max_model_len", "max-model-len"),
        ("dtype", "dtype"),
    ):
        fact = first_of(lines, key)
        if fact is None:
            continue
        value = _stated_value(key, fact)
        if key in given and given[key] != value:
            raise _refuse_given(key, given[key], fact)
        if key in unknown or (flag not in logged.flags and key in ("pipeline_parallel_size", "max_model_len", "dtype")):
            if key == "max_model_len" and (facts.max_model_len is not None or flag in logged.flags):
                continue
            if key == "dtype" and value not in ("bfloat16", "float16", "float32"):
                continue
            if key == "pipeline_parallel_size" and value == 1:
                continue
            if key in unknown:
                unknown.remove(key)
            changed: dict[str, Any] = {key: value}
            args = replace(args, **changed)
            notes.append(f"{key} {value} read from the log ({fact.said!r}, {fact.line.where})")
        elif flag in logged.flags and getattr(args, key) != value:
            notes.append(f"the args say --{flag} {getattr(args, key)}, but {fact.said!r} ({fact.line.where})")
    method = first_of(lines, "speculative_method")
    k = first_of(lines, "num_speculative_tokens")
    over_1 = first_of(lines, "num_speculative_tokens_over_1")
    if over_1 is not None:
        stated.min_speculative_tokens = 2
        stated.speculative_method = "mtp"
        notes.append(f"an MTP drafter with num_speculative_tokens > 1 read from the log ({over_1.line.where})")
        spec_given = given.get("speculative_config")
        if isinstance(spec_given, dict) and int(str(spec_given.get("num_speculative_tokens", 1))) < 2:
            raise InputError(
                "--speculative-config",
                None,
                f"the log warns 'Enabling num_speculative_tokens > 1 ...' ({over_1.line.where}), which contradicts it",
            )
    if method is not None:
        stated.speculative_method = method.value
        if method.value == "mtp" and k is not None:
            stated.speculative = {"method": "mtp", "num_speculative_tokens": int(k.value)}
            notes.append(
                f"speculative_config {{'method': 'mtp', 'num_speculative_tokens': {k.value}}} read from the log "
                f"({method.line.where})"
            )
    return args, _gpu_from_log(facts, gpu, gpu_memory_bytes, notes)


def _gpu_from_log(facts: LogFacts, gpu: GPU | None, gpu_memory_bytes: int | None, notes: list[str]) -> GPU | None:
    """The GPU the log's lines name (FlashInfer's ``arch=smXY``, the ``Free memory on device
    (F/T GiB)`` total): the GPU table's one row with that capability and CUDA total (to the
    logged 2 decimals), else ``smXY:TG``; ``gpu`` when given (a given GPU the log contradicts is
    refused naming both); ``None`` when the log names neither figure.

    :raises InputError: ``--gpu`` whose capability or CUDA total the log's lines contradict.
    """
    cap_fact = first_of(facts.stated, "gpu_capability")
    total_fact = first_of(facts.stated, "gpu_total_gib")
    if cap_fact is None and total_fact is None:
        return gpu
    cap = tuple(int(x) for x in cap_fact.value.split(".")) if cap_fact else None
    total = float(total_fact.value) if total_fact else None
    if gpu is not None:
        if cap is not None and gpu.capability != cap:
            raise InputError(
                f"--gpu {gpu.name}",
                None,
                f"the log states {cap_fact.said!r} ({cap_fact.line.where}, SM {cap_fact.value}): "  # type: ignore[union-attr]
                f"not the capability of the GPU given (SM {gpu.capability[0]}.{gpu.capability[1]})",
            )
        if total is not None and not gpu.approximate and abs(gpu.cuda_total_bytes / GIB - total) > 0.0051:
            raise InputError(
                f"--gpu {gpu.name}",
                None,
                f"the log states {total_fact.said!r} ({total_fact.line.where}): a CUDA "  # type: ignore[union-attr]
                f"total of {total} GiB, not the given GPU's {gpu.cuda_total_bytes / GIB:.2f} GiB",
            )
        return gpu
    if gpu_memory_bytes is not None:
        return None
    rows = [
        g
        for g in gpu_table().values()
        if (cap is None or g.capability == cap)
        and (total is None or (not g.approximate and abs(g.cuda_total_bytes / GIB - total) <= 0.0051))
    ]
    said = " and ".join(f"{f.said!r} ({f.line.where})" for f in (cap_fact, total_fact) if f is not None)
    if len(rows) == 1 and (cap is not None or total is not None):
        notes.append(f"the GPU: {rows[0].label()}, read from the log ({said})")
        return rows[0]
    if cap is not None:
        if total is None:
            same = [g for g in gpu_table().values() if g.capability == cap]
            if len(same) == 1:
                notes.append(f"the GPU: {same[0].label()}, read from the log ({said})")
                return same[0]
            if same:
                notes.append(
                    f"the GPU: SM {cap[0]}.{cap[1]} read from the log ({said}); its memory is not stated: "
                    f"{same[0].label()} taken (also SM {cap[0]}.{cap[1]}: {', '.join(g.name for g in same[1:])})"
                )
                return same[0]
        found = parse_gpu(f"sm{cap[0]}{cap[1]}:{total if total is not None else 0}G") if total is not None else None
        if found is not None:
            notes.append(f"the GPU: {found.label()} with a CUDA total of {total} GiB, read from the log ({said})")
            return found
        return None
    return None


def _names_drafter(spec: dict[str, object], speculative_model: str | None) -> bool:
    """Whether a speculative config uses a drafter model of its own (not the target's MTP layers)."""
    return speculative_model is not None or (bool(spec.get("model")) and spec.get("method") != "mtp")


def _cut_drafter(args_text: str, parsed: dict[str, object]) -> bool:
    """When the args line is cut inside ``speculative_config`` before its
    ``num_speculative_tokens``: put the entries read (method, model...) into ``parsed`` with
    :data:`SPEC_TOKENS`'s first value, and say so (the count is then searched, not refused)."""
    start = args_text.find("'speculative_config': {")
    if start < 0:
        return False
    try:
        partial, _ = parse_args_prefix(args_text[start + len("'speculative_config': ") :], "speculative_config")
    except InputError:
        return False
    if "method" not in partial or "num_speculative_tokens" in partial:
        return False
    parsed["speculative_config"] = {**partial, "num_speculative_tokens": SPEC_TOKENS[0]}
    return True


def _fitting_releases(
    facts: LogFacts, inputs: Inputs, candidate: Candidate, budget: Budget | None, no_budget: str
) -> str:
    """For a log that names no version: the releases whose rules give every checked line as
    logged (each release's table tried with the same flags and budget), as a note."""
    fitting, refused = [], []
    for version in VERSIONS:
        trial = Inputs(inputs.model, replace(inputs.args, vllm_version=version), inputs.drafter)
        try:
            cmp = compare(facts.kv_lines, trial, replace(candidate, version=version), budget, no_budget, explain=False)
        except InputError:
            refused.append(version)
            continue
        statuses = {c.status for c in cmp.checks}
        if "differs" not in statuses and "matches" in statuses:
            fitting.append(version)
    said = (
        f"the releases whose rules give every checked line as logged: {', '.join(fitting)}"
        if fitting
        else "no release's rules give every checked line as logged (under the flags above)"
    )
    tail = f"; refused by the rules of {', '.join(refused)}" if refused else ""
    return f"the log names no vLLM version: checked with {candidate.version}'s rules; {said}{tail}"


def _flag_name(key: str) -> str:
    return key.replace("_", "-")


def given_spelling(key: str, value: object) -> str:
    """A flag given to check-log as vLLM spells it: ``--no-enable-prefix-caching``,
    ``--kv-cache-dtype fp8``."""
    if isinstance(value, bool):
        return f"--{'' if value else 'no-'}{_flag_name(key)}"
    return f"--{_flag_name(key)} {value}"


#: vLLM's defaults of the flags check-log takes, where they do not depend on the model.
_FLAG_DEFAULTS: dict[str, object] = {"kv_cache_dtype": "auto", "tensor_parallel_size": 1}


def _check_given(
    key: str,
    value: object,
    args: EngineArgs,
    logged: LoggedArgs,
    facts: LogFacts,
    unknown: list[str],
    model: Any,
    version: str,
) -> None:
    """Refuse a flag given to check-log that the log's args line contradicts: a value the line
    states, or, for a line read whole (or up to past the flag's place), vLLM's default that
    applied because the line lacks it (``non-default args`` omits values equal to the default).

    :raises InputError: naming the flag as given and the args line.
    """
    if _flag_name(key) in logged.flags:
        logged_value = getattr(args, key)
        if logged_value is not None and logged_value != value:
            raise InputError(
                given_spelling(key, value),
                None,
                f"the log's non-default args say {given_spelling(key, logged_value)} ({_args_where(facts)})",
            )
        return
    if facts.args_text is None or key in unknown:
        return  # the line is missing or cut before the flag: the flag is a fact the log lacks
    if key == "enable_prefix_caching":
        # at call: the release's default is needed only when prefix caching is given
        from dryboot.vllm.config.resolve import prefix_caching_default

        default: object = prefix_caching_default(model, rules_for(version))
    elif key in _FLAG_DEFAULTS:
        default = _FLAG_DEFAULTS[key]
    else:
        return
    if value != default:
        raise InputError(
            given_spelling(key, value),
            None,
            f"the log's non-default args ({_args_where(facts)}) have no {key}: vLLM's default "
            f"{given_spelling(key, default)} applied",
        )


def _check_given_speculative(value: object, logged: LoggedArgs, facts: LogFacts, unknown: list[str]) -> None:
    """Refuse ``--speculative-config`` when the log's args line states another one (a key both
    give, with another value), or is read past its place and has none.

    :raises InputError: naming ``--speculative-config`` and the args line.
    """
    if facts.args_text is None or "speculative_config" in unknown:
        return
    if logged.speculative is None:
        raise InputError(
            "--speculative-config",
            None,
            f"the log's non-default args ({_args_where(facts)}) have no speculative_config: "
            "vLLM ran without speculative decoding",
        )
    given = value if isinstance(value, dict) else {}
    for k, v in given.items():
        if k in logged.speculative and logged.speculative[k] != v:
            raise InputError(
                "--speculative-config",
                f"{k}",
                f"the log's non-default args say {logged.speculative[k]!r} ({_args_where(facts)}), given {v!r}",
            )


def _check_architecture(facts: LogFacts, declared: str | None, path: str, given: bool, notes: list[str]) -> None:
    """Refuse a config whose architecture is not the one the log's ``Resolved architecture`` line
    names: every KV line would be predicted for another model. vLLM's Transformers backend
    (``Transformers...``) serves any config's architecture under its own name: only noted.

    :raises InputError: naming ``--model`` (or the config found) and the log's line.
    """
    logged = facts.architecture
    if not logged or logged == declared:
        return
    if declared is None or logged.startswith("Transformers"):
        notes.append(f"the log resolved {logged}; {path} declares {declared or 'no architecture'}")
        return
    where = facts.architecture_line.where if facts.architecture_line is not None else "its lines"
    if given:
        raise InputError("--model", path, f"is {declared}; the log serves {logged} (its {where})")
    raise InputError(path, None, f"the config found for the log is {declared}; the log serves {logged} (its {where})")


def _args_where(facts: LogFacts) -> str:
    return facts.args_line.where if facts.args_line else "its args line"


def where_args(facts: LogFacts) -> str:
    """``read from the log (line N)`` for the args line."""
    return f"read from the log ({facts.args_line.where})" if facts.args_line else "read from the log"


def _allow_logged_length(model: Any, args: EngineArgs, notes: list[str]) -> EngineArgs:
    """The args with ``VLLM_ALLOW_LONG_MAX_MODEL_LEN`` known set when the log's max_model_len is
    above what the config allows: vLLM started with it, so the variable was set (noted)."""
    # at call: the planner's resolution is needed only for a length the log gives
    from dryboot.vllm.config.resolve import derive_max_model_len

    if args.max_model_len is None or args.max_model_len == -1:
        return args
    try:
        derive_max_model_len(model, args)
    except InputError as exc:
        if "VLLM_ALLOW_LONG_MAX_MODEL_LEN" not in exc.reason:
            return args
        limit = model.max_len.derived(rules_for(args.vllm_version).yarn_max_len_prescaled)
        notes.append(
            f"max_model_len {args.max_model_len} read from the log is above the config's limit "
            f"({model.max_len.max_len_key}={limit}): vLLM accepts it only with "
            "VLLM_ALLOW_LONG_MAX_MODEL_LEN=1, so that was set"
        )
        return replace(args, allow_long_max_model_len=True)
    return args


def resolve_speculative(
    speculative: dict[str, object] | None,
    speculative_model: str | None,
    args: EngineArgs,
    notes: list[str],
    source: str,
    target_architecture: str | None = None,
) -> tuple[dict[str, object] | None, Drafter | None, EngineArgs]:
    """The speculative config dryboot reads (unread keys noted), its drafter (a hub id found in
    the Hugging Face cache as the model is) and the args with its ``num_speculative_tokens``.

    :raises InputError: the drafter cannot be found or read.
    """
    if speculative is None and speculative_model is None:
        return None, None, args
    spec = dict(speculative or {})
    dropped = sorted(k for k in spec if k not in _SPEC_KEYS_READ)
    if dropped:
        notes.append(f"speculative_config keys dryboot does not read: {', '.join(dropped)}")
    spec = {k: v for k, v in spec.items() if k in _SPEC_KEYS_READ}
    drafter_ref = spec.get("model")
    if speculative_model is None and isinstance(drafter_ref, str) and drafter_ref:
        found = find_config(None, drafter_ref, what="speculative_config.model", source=source)
        spec["model"] = str(found.path)
        notes.append(f"drafter config: {found.path} ({found.how})")
    elif speculative_model is not None:
        spec.pop("model", None)
    drafter, args = load_drafter_and_k(spec, speculative_model, args, target_architecture=target_architecture)
    return spec, drafter, args


def _logged_version(facts: LogFacts, notes: list[str]) -> str | None:
    """The version the boot states; every line that carries one is read, a disagreement noted."""
    stated = [v for v in facts.versions if v.how == "stated"]
    by_source = [v for v in facts.versions if v.how != "stated"]
    distinct = list(dict.fromkeys(v.version for v in stated))
    if len(distinct) > 1:
        notes.append(
            "the log states several versions: "
            + ", ".join(f"{v.version} ({v.line.where})" for v in stated)
            + f"; {distinct[0]} is used"
        )
    if distinct:
        return distinct[0]
    if by_source:
        releases = sorted({v.version for v in by_source})
        notes.append(
            "the log states no version; "
            + ", ".join(f"{v.line.source} ({v.line.where})" for v in by_source[:3])
            + f" is where vLLM {'/'.join(releases)} logs these lines"
        )
        return releases[0] if len(releases) == 1 else None
    return None


def _logged_max_model_len(facts: LogFacts) -> tuple[int | None, str]:
    if facts.max_model_len is not None:
        return facts.max_model_len, "'Using max model len'"
    for line in facts.kv_lines:
        value = line.figures.get("max_model_len")
        if value:
            return int(value.replace(",", "")), f"the {line.kind.value} line, {line.where}"
    return None, ""


def _release_kv_dtypes(q: _Question) -> list[object]:
    rules = rules_for(q.candidate.version)
    return [d for d in SEARCHED_KV_DTYPES if d not in rules.unknown_kv_cache_dtypes]


def _dimensions(q: _Question) -> list[tuple[str, list[object]]]:
    """Each unknown flag with the values vLLM accepts for it, within what the log bounds."""
    model: Any = q.model
    dims: list[tuple[str, list[object]]] = []
    for key in q.unknown:
        values: list[object]
        if key == "kv_cache_dtype":
            values = list(q.stated.kv_cache_dtypes or _release_kv_dtypes(q))
        elif key == "enable_prefix_caching":
            values = [True, False]
            if getattr(model, "has_mamba_state", False):
                values = [(True, None), (True, "align"), (True, "all"), (False, None)]
        elif key == "speculative_config":
            least = q.stated.min_speculative_tokens
            mtp = getattr(getattr(model, "mtp", None), "num_mtp_layers", 0) > 0
            if least or (mtp and q.stated.speculative_method in (None, "mtp")):
                values = ([] if least else [None]) + [k for k in SPEC_TOKENS if k >= max(least, 1)]
            else:
                values = [None]
        elif key == "num_speculative_tokens":
            values = [k for k in SPEC_TOKENS if k >= max(q.stated.min_speculative_tokens, 1)]
        elif key == "tensor_parallel_size":
            heads = getattr(model, "num_attention_heads", 0) or 0
            start = q.args.tensor_parallel_size
            values = [tp for tp in TP_SIZES if tp >= start and (not heads or heads % tp == 0)]
        else:
            continue
        dims.append((key, values))
    return dims


def _space_text(dims: list[tuple[str, list[object]]]) -> str:
    parts = []
    for key, values in dims:
        shown = [_describe_value(key, v) for v in values]
        if key == "kv_cache_dtype":
            same = [f"{', '.join(SAME_KV_LAYOUT[str(v)])} as {v}" for v in values if str(v) in SAME_KV_LAYOUT]
            parts.append(f"{key}: {', '.join(str(v) for v in values)}" + (f" ({'; '.join(same)})" if same else ""))
        elif key in ("speculative_config", "num_speculative_tokens", "tensor_parallel_size") and len(values) > 3:
            parts.append(f"{key}: {shown[0]} … {shown[-1]} ({len(values)} values)")
        else:
            parts.append(f"{key}: {', '.join(shown)}")
    return "; ".join(parts)


@dataclass(frozen=True)
class _Question:
    """What a search over the unknown flags asks: the boot's lines, the model, the flags known
    (``args``, ``speculative``), those unknown, the rules and the budget (or why there is none)."""

    facts: LogFacts
    model: object
    args: EngineArgs
    speculative: dict[str, object] | None
    unknown: list[str]
    candidate: Candidate
    budget: Budget | None
    no_budget: str
    stated: StatedFlags = field(default_factory=lambda: StatedFlags())


def _signature(inputs: Inputs, q: _Question) -> tuple[object, ...] | None:
    """What decides every KV line of a plan (its predicted lines at the budget's low end and its
    pool bytes per block); ``None`` when it cannot be planned."""
    try:
        p = _plan_one(inputs, q)
    except InputError:
        return None
    return tuple(predicted_lines(p)), block_stride(p)


#: The budget a signature is planned at when the log states none: its capacity lines then tell
#: apart values whose pages agree but whose blocks per request do not (mamba cache modes).
SIGNATURE_BUDGET = 64 << 30


def _plan_one(inputs: Inputs, q: _Question) -> Any:
    budget = q.budget.lo if q.budget else SIGNATURE_BUDGET
    args = replace(inputs.args, vllm_version=q.candidate.version, kv_cache_memory_bytes=budget)
    return plan(inputs.model, args, drafter=inputs.drafter, policies=q.candidate.policies)


def _classes(
    q: _Question, dims: list[tuple[str, list[object]]], base: list[tuple[str, object]]
) -> tuple[list[tuple[str, list[object]]], list[str], dict[tuple[str, object], float]]:
    """Each flag's values (but the KV dtype's and TP's) told apart at ``base`` for the others:
    values giving the same KV lines are planned once (their first stands for them). Returns the
    reduced dimensions, the merges in words, and each value's capacity offset there (for
    :func:`_estimate_order`)."""
    reduced: list[tuple[str, list[object]]] = []
    merged: list[str] = []
    capacity: dict[tuple[str, object], float] = {}
    line = _capacity_line(q)
    for i, (key, values) in enumerate(dims):
        if key in _PAIR or len(values) == 1:
            reduced.append((key, values))
            continue
        seen: dict[object, object] = {}
        kept: list[object] = []
        same: dict[object, list[object]] = {}
        for v in values:
            sig = _combo_signature(q, (*base[:i], (key, v), *base[i + 1 :]))
            if sig is None:
                continue
            if line is not None:
                capacity[(key, v)] = _capacity_offset(line, sig[0])  # type: ignore[arg-type]
            if sig in seen:
                same.setdefault(seen[sig], []).append(v)
                continue
            seen[sig] = v
            kept.append(v)
        reduced.append((key, kept or values[:1]))
        for rep, others in same.items():
            merged.append(
                f"{_describe_value(key, rep)} stands for {', '.join(_describe_value(key, o) for o in others)} "
                "(the same KV lines)"
            )
    return reduced, merged, capacity


#: The flags told apart by their capacity first (:func:`_pair_offsets`).
_PAIR = ("kv_cache_dtype", "tensor_parallel_size")


def _combo_signature(q: _Question, combo: tuple[tuple[str, object], ...]) -> tuple[object, ...] | None:
    try:
        inputs = _trial_inputs(q.model, q.args, q.speculative, combo)
    except InputError:
        return None
    return _signature(inputs, q)


def _capacity_line(q: _Question) -> KVLine | None:
    if q.budget is None:
        return None
    return next((ln for ln in q.facts.kv_lines if ln.kind is Kind.CAPACITY and ln.figures), None)


def _capacity_figure(line: KVLine, predicted: tuple[tuple[Kind, str], ...]) -> float:
    """The relative distance of the nearest predicted capacity figure to the logged one (0: equal;
    ``inf``: none predicted)."""
    return abs(_capacity_offset(line, predicted))


def _capacity_offset(line: KVLine, predicted: tuple[tuple[Kind, str], ...]) -> float:
    """The nearest predicted capacity figure relative to the logged one, signed (``+0.02``: 2 %
    above; ``inf``: none predicted)."""
    best = float("inf")
    for kind, text in predicted:
        if kind is not Kind.CAPACITY:
            continue
        figures = kv_figures(kind, text)
        for key in ("tokens", "concurrency"):
            if key in line.figures and key in figures:
                logged = float(line.figures[key].replace(",", ""))
                got = float(figures[key].replace(",", ""))
                if logged > 0 and abs(got / logged - 1) < abs(best):
                    best = got / logged - 1
    return best


def _all_pairs(dims: list[tuple[str, list[object]]]) -> list[tuple[object, object]]:
    values = dict(dims)
    return [(d, t) for d in values.get("kv_cache_dtype", [None]) for t in values.get("tensor_parallel_size", [None])]


def _pair_offsets(q: _Question, dims: list[tuple[str, list[object]]]) -> dict[tuple[object, object], float]:
    """With a logged budget and capacity: each KV dtype x TP pair's capacity offset from the
    logged one (signed, relative), at the other flags' first values (empty otherwise)."""
    line = _capacity_line(q)
    keys = [k for k, _ in dims]
    if line is None or not any(k in keys for k in _PAIR):
        return {}
    values = dict(dims)
    firsts = {k: v[0] for k, v in dims}
    out: dict[tuple[object, object], float] = {}
    for dt in values.get("kv_cache_dtype", [None]):
        for tp in values.get("tensor_parallel_size", [None]):
            combo = tuple(
                (k, dt if k == "kv_cache_dtype" else tp if k == "tensor_parallel_size" else firsts[k]) for k in keys
            )
            sig = _combo_signature(q, combo)
            if sig is not None:
                out[(dt, tp)] = _capacity_offset(line, sig[0])  # type: ignore[arg-type]
    return out


def _search_unknown(q: _Question) -> Search:
    """Every combination of values for the unknown flags under which each checked line matches
    (budget-dependent lines without a logged budget: one budget that gives them all is searched
    for, so they are explained only together with that budget), with the nearest combination
    when none does."""
    dims = _dimensions(q)
    space = _space_text(dims)
    pairs = _pair_offsets(q, dims)
    finite_pairs = {p: o for p, o in pairs.items() if o != float("inf")}
    base = [(k, v[0]) for k, v in dims]
    if finite_pairs:  # the other flags told apart at the pair nearest the logged capacity
        dt, tp = min(finite_pairs, key=lambda p: abs(finite_pairs[p]))
        base = [(k, dt if k == "kv_cache_dtype" else tp if k == "tensor_parallel_size" else v) for k, v in base]
    reduced, merged, capacity = _classes(q, dims, base)
    # capacities as logarithms of their ratio to the logged one: the flags' effects multiply
    offsets: dict[tuple[str, object], float] = {("pair", p): math.log1p(o) for p, o in finite_pairs.items() if o > -1}
    firsts = dict(base)
    for (k, v), o in capacity.items():  # each value's change from the base value of its flag
        at_base = capacity.get((k, firsts[k]), float("inf"))
        if o != float("inf") and o > -1 and at_base != float("inf") and at_base > -1:
            offsets[(k, v)] = math.log1p(o) - math.log1p(at_base)
    # pairs the planner cannot build (a refused flag) are named; every other pair stays: the
    # other flags' effects are not additive, so no capacity bound drops a pair (the order and
    # the screen decide what is planned first)
    pruned = [f"--kv-cache-dtype {p[0]}, TP {p[1]} (refused)" for p in _all_pairs(dims) if pairs and p not in pairs]
    explaining: list[Combination] = []
    budget_notes: list[str] = []
    tried = 0
    nearest: tuple[tuple[int, float], Combination] | None = None
    total = 1
    for _, values in reduced:
        total *= max(len(values), 1)
    line = _capacity_line(q)
    joint_left, skipped = MAX_JOINT_SEARCHES, 0
    counts: dict[str, int] = {}
    order = _estimate_order(reduced, offsets)
    for found, inputs, cmp in _trials(q, reduced, order, counts=counts):
        tried += 1
        statuses = [c.status for c in cmp.checks]
        score = (
            -statuses.count("matches"),
            _capacity_figure(line, tuple((k, t) for k, ts in cmp.prediction.texts.items() for t in ts))
            if line
            else 0.0,
        )
        if nearest is None or score < nearest[0]:
            nearest = (score, found)
        if "differs" in statuses:
            continue
        if "unchecked" in statuses:
            if joint_left <= 0:
                skipped += 1
                continue
            joint_left -= 1
            joint = _joint_budget(cmp, inputs, q.candidate, q.no_budget)
            if joint is not None:
                explaining.append(found)
                budget_notes.append(f"{found.describe()}: {joint}")
            continue
        explaining.append(found)
    near_text = None
    if not explaining and nearest is not None:
        (matches, distance), combo = nearest
        near_text = f"{combo.describe()}: {-matches} of {len(q.facts.kv_lines)} lines match" + (
            f", the capacity {distance:.1%} from the logged one" if distance != float("inf") and line else ""
        )
    return Search(
        tuple(q.unknown),
        tried,
        tuple(explaining),
        tuple(budget_notes),
        space,
        tuple(merged),
        near_text,
        max(total - counts.get("screened", tried), 0) + skipped,
        tuple(pruned),
        counts.get("screened", 0),
    )


def _estimate_order(
    dims: list[tuple[str, list[object]]], offsets: dict[tuple[str, object], float]
) -> Callable[[tuple[tuple[str, object], ...]], tuple[float, ...]] | None:
    """A sort key putting first the combinations whose capacity, estimated as a product (the
    KV dtype x TP pair's ratio to the logged capacity times each other value's ratio to the base
    value of its flag; ``offsets`` holds their logarithms), is nearest the logged one; ``None``
    without a logged capacity."""
    if not offsets:
        return None

    def key(combo: tuple[tuple[str, object], ...]) -> tuple[float, ...]:
        pair = dict(combo)
        total = offsets.get(("pair", (pair.get("kv_cache_dtype"), pair.get("tensor_parallel_size"))), 10.0)
        for k, v in combo:
            total += offsets.get((k, v), 0.0)
        return (abs(total),)

    return key


#: Most combinations enumerated to be ordered (:func:`_estimate_order`) before planning.
MAX_ENUMERATED = 20000


def _trials(
    q: _Question,
    dims: list[tuple[str, list[object]]] | None = None,
    order: Callable[[tuple[tuple[str, object], ...]], tuple[float, ...]] | None = None,
    *,
    explain: bool = False,
    counts: dict[str, int] | None = None,
) -> Iterator[tuple[Combination, Inputs, Comparison]]:
    """Each combination of the unknown flags' values that can be planned (at most
    :data:`MAX_COMBINATIONS`, in :func:`_dimensions` order or nearest first by ``order``), with
    its inputs and comparison."""
    dims = _dimensions(q) if dims is None else dims
    space = [[(key, v) for v in values] for key, values in dims]
    combos: Iterable[tuple[tuple[str, object], ...]] = itertools.product(*space)
    screen = order is not None
    if order is not None:
        combos = sorted(itertools.islice(combos, MAX_ENUMERATED), key=order)
    planned = screened = 0
    for combo in combos:
        if planned >= MAX_COMBINATIONS or screened >= MAX_SCREENED:
            return
        try:
            inputs = _trial_inputs(q.model, q.args, q.speculative, combo)
            if screen:
                screened += 1
                if counts is not None:
                    counts["screened"] = screened
                if not _passes_screen(q, inputs):
                    continue
            planned += 1
            cmp = compare(q.facts.kv_lines, inputs, q.candidate, q.budget, q.no_budget, explain=explain)
        except InputError:
            continue
        yield Combination(tuple(combo)), inputs, cmp


#: At most this many combinations are screened (one plan each, :func:`_passes_screen`) before
#: the survivors are planned over the whole budget interval.
MAX_SCREENED = 240
#: A screened capacity may be this far (relative) from the logged one at the budget's low end.
SCREEN_TOLERANCE = 0.02


def _passes_screen(q: _Question, inputs: Inputs) -> bool:
    """Whether one plan at the budget's low end can give the boot's lines: every logged line
    that does not depend on the budget is predicted as logged, and the capacity is within
    :data:`SCREEN_TOLERANCE` of the logged one (the interval moves it by less)."""
    sig = _signature(inputs, q)
    if sig is None:
        return False
    predicted: tuple[tuple[Kind, str], ...] = sig[0]  # type: ignore[assignment]
    by_kind: dict[Kind, list[str]] = {}
    for kind, text in predicted:
        by_kind.setdefault(kind, []).append(text)
    for line in q.facts.kv_lines:
        if line.kind.budget_dependent or line.kind.unmodelled is not None:
            continue
        texts = by_kind.get(line.kind, [])
        if line.text not in texts and not any(figures_agree(line.figures, kv_figures(line.kind, t)) for t in texts):
            return False
    capacity = _capacity_line(q)
    return capacity is None or _capacity_figure(capacity, predicted) <= SCREEN_TOLERANCE


def _trial_inputs(
    model: object, args: EngineArgs, speculative: dict[str, object] | None, combo: tuple[tuple[str, object], ...]
) -> Inputs:
    """The planner's inputs with ``combo``'s values for the unknown flags.

    :raises InputError: the combination cannot be built (a drafter not found, a refused flag).
    """
    trial = args
    spec: dict[str, object] | None = speculative
    for key, value in combo:
        if key == "speculative_config":
            spec = None if value is None else {"method": "mtp", "num_speculative_tokens": value}
        elif key == "num_speculative_tokens":
            spec = {**(spec or {}), "num_speculative_tokens": value}
            trial = replace(trial, num_speculative_tokens=0)  # set again from spec below
        elif key == "enable_prefix_caching" and isinstance(value, tuple):
            trial = replace(trial, enable_prefix_caching=value[0], mamba_cache_mode=value[1])
        else:
            changed: dict[str, Any] = {key: value}
            trial = replace(trial, **changed)
    drafter = None
    if spec is not None:
        drafter, trial = load_drafter_and_k(spec, None, trial, target_architecture=getattr(model, "architecture", None))
    trial.validate()
    return Inputs(model, trial, drafter)  # type: ignore[arg-type]


def _first_plannable(q: _Question) -> tuple[Comparison, Combination] | None:
    """The comparison under the first combination of the unknown flags that can be planned."""
    for combo, _inputs, cmp in _trials(q, explain=True):
        return cmp, combo
    return None


def _joint_budget(cmp: Comparison, inputs: Inputs, candidate: Candidate, no_budget: str) -> str | None:
    """The one KV budget interval under which every line ``cmp`` left unchecked prints as
    logged (each line's interval, intersected, then checked with that budget), as a sentence;
    ``None`` when no single budget gives them all."""
    unchecked = [c for c in cmp.checks if c.status == "unchecked"]
    lo, hi = 0, MAX_JOINT_BUDGET
    for c in unchecked:
        found = budget_interval_anywhere(c.line, inputs, candidate)
        if found is None:
            return None
        lo, hi = max(lo, found[0]), min(hi, found[1])
        if lo > hi:
            return None
    within = Budget(lo, hi, "searched")
    again = compare(tuple(c.line for c in cmp.checks), inputs, candidate, within, no_budget, explain=False)
    if any(c.status not in ("matches", "refused") for c in again.checks):
        return None
    what = f"the {unchecked[0].line.kind.value} line" if len(unchecked) == 1 else f"all {len(unchecked)} such lines"
    return f"a KV budget of {describe_budget(lo, hi)} gives {what}"


#: The largest budget a joint search accepts (bytes; as :data:`compare.MAX_SEARCHED_BUDGET`).
MAX_JOINT_BUDGET = 4 << 40


@dataclass(frozen=True)
class BootResult:
    """One boot of a log: its report, or why it could not be checked.

    :param status: ``matches`` (every KV line matched under the logged flags), ``differs``,
        ``explained`` (the flags are incomplete; the combinations in the search explain every
        line), ``unexplained`` (the flags are incomplete and no combination of those searched
        explains every line: exit 5, never 1),
        ``unchecked`` (no KV line, or none checkable) or ``refused`` (one-line reason).
    """

    facts: LogFacts
    report: CheckReport | None
    status: str
    reason: str | None = None
    refusal: InputError | None = None


#: Exit codes of ``dryboot check-log`` (README, "check-log").
EXIT_MATCHES = 0
EXIT_DIFFERS = 1
EXIT_REFUSED = 2
EXIT_NOTHING_CHECKED = 3
EXIT_EXPLAINED_ONLY = 4
EXIT_UNEXPLAINED = 5


@dataclass(frozen=True)
class LogReport:
    """Every boot of a log, checked one by one."""

    source: str
    boots: tuple[BootResult, ...]

    @property
    def exit_code(self) -> int:
        return exit_code_of({b.status for b in self.boots})


#: each exit code and the boot statuses (:class:`BootResult`) that give it, in the order they
#: win: 1 when a line differs under what the log states, else 2 when one is refused, 5 when no
#: combination of the unknown flags explains one, 4 when one is explained only by searched flags,
#: 0 when one matches, else 3
STATUSES_BY_EXIT: dict[int, tuple[str, ...]] = {
    EXIT_DIFFERS: ("differs",),
    EXIT_REFUSED: ("refused",),
    EXIT_UNEXPLAINED: ("unexplained",),
    EXIT_EXPLAINED_ONLY: ("explained",),
    EXIT_MATCHES: ("matches",),
    EXIT_NOTHING_CHECKED: ("unchecked",),
}


def exit_code_of(statuses: set[str]) -> int:
    """check-log's exit code for boots of these statuses (see :data:`STATUSES_BY_EXIT`)."""
    for code, giving in STATUSES_BY_EXIT.items():
        if statuses.intersection(giving):
            return code
    return EXIT_NOTHING_CHECKED


def boot_status(r: CheckReport) -> str:
    """``matches`` / ``differs`` / ``explained`` / ``unchecked`` of one checked boot."""
    statuses = [c.status for c in r.comparison.checks]
    if r.search is not None:
        if r.search.explaining:
            return "explained"
        # flags unknown: nothing the log states is contradicted; flags known, no budget gives
        # the lines: the stated flags contradict vLLM's rules
        return "unexplained" if r.search.unknown else "differs"
    if "differs" in statuses:
        return "differs"
    if "matches" in statuses:
        return "matches"
    return "unchecked"


def check_lines(
    lines: Iterable[tuple[int, str]],
    *,
    source: str = "log",
    **options: object,
) -> Iterator[BootResult]:
    """Check every boot of a log given as (line number, text) pairs, one boot at a time
    (memory: one boot's facts).

    :param options: as :func:`check_log`.
    """
    for facts in iter_boots(iter_numbered_log_lines(lines)):
        if not facts.is_vllm_log:
            continue
        if facts.unread and not facts.kv_lines:
            first = facts.unread[0]
            refusal = InputError(source, first.where, unread_reason(first))
            yield BootResult(facts, None, "refused", refusal.line(), refusal)
            continue
        if not facts.kv_lines:
            failed = failed_boot_reason(facts, options) or "no KV cache line in this boot"
            yield BootResult(facts, _memory_only(facts, source, options), "unchecked", failed)
            continue
        try:
            report = check_facts(facts, source=source, **options)  # type: ignore[arg-type]
        except InputError as exc:
            yield BootResult(facts, None, "refused", exc.line(), exc)
            continue
        status = boot_status(report)
        reason: str | None = None
        if status == "unchecked":
            reason = "no KV line of this boot could be checked"
        if facts.unread and status in ("matches", "explained", "unchecked"):
            # a KV line present but not read was not checked: never a clean verdict
            status, reason = "refused", f"{facts.unread[0].where}: {unread_reason(facts.unread[0])}"
        yield BootResult(facts, report, status, reason)


def _memory_only(facts: LogFacts, source: str, options: dict[str, object]) -> CheckReport | None:
    """A boot with memory lines and no KV line: its memory lines checked when a config is given
    (``model_path``), else ``None`` (and ``None`` when it cannot be planned: still unchecked)."""
    if not facts.memory or not options.get("model_path"):
        return None
    try:
        return check_facts(facts, source=source, memory_only=True, **options)  # type: ignore[arg-type]
    except InputError:
        return None


def unread_reason(line: LogLine) -> str:
    """Why a KV line of the log was not checked (it matches none of vLLM's templates)."""
    text = line.message if len(line.message) <= 120 else line.message[:117] + "..."
    return (
        f"{text!r} starts a KV line but matches no vLLM template dryboot reads (a cut line or a figure "
        "that is not a number); it is not checked"
    )


def check_stream(stream: BinaryIO, *, source: str = "log", **options: object) -> LogReport:
    """:func:`iter_check_stream`, every boot kept (memory grows with the boots: the CLI renders
    :func:`iter_check_stream` boot by boot instead).

    :raises InputError: as :func:`iter_check_stream`.
    """
    return LogReport(source, tuple(iter_check_stream(stream, source=source, **options)))


def iter_check_stream(stream: BinaryIO, *, source: str = "log", **options: object) -> Iterator[BootResult]:
    """:func:`check_lines` over a byte stream read in bounded chunks, one boot at a time (memory:
    the boot being checked and the next one, whatever the number of boots).

    :raises InputError: the stream is not a text log, or holds no vLLM line at all; a log of one
        boot that is refused (bad input is one line and exit 2, as everywhere), raised before
        anything is yielded.
    """
    boots = check_lines(iter_relevant_lines(stream, source), source=source, **options)
    first = next(boots, None)
    if first is None:
        raise InputError(source, None, "no vLLM line found (no version, args, KV budget or KV cache line)")
    second = next(boots, None)
    if second is None:
        if first.refusal is not None:
            raise first.refusal
        yield first
        return
    yield first
    yield second
    yield from boots


def open_log(path: str) -> tuple[BinaryIO, str]:
    """(binary stream, source name) of ``path`` (``-``: standard input), to read in chunks.

    :raises InputError: unreadable, or not a regular file (a FIFO would block the read).
    """
    if path == "-":
        return sys.stdin.buffer, "<stdin>"
    return open_regular(path), path

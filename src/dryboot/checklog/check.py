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
import re
import sys
from collections.abc import Iterable, Iterator
from dataclasses import dataclass, field, replace
from typing import Any, BinaryIO

from dryboot.checklog.argmap import LoggedArgs, map_args, validate_logged
from dryboot.checklog.compare import (
    Budget,
    Candidate,
    Comparison,
    Inputs,
    budget_interval_anywhere,
    compare,
    describe_budget,
    gib_interval,
)
from dryboot.checklog.literal import parse_args_prefix
from dryboot.checklog.locate import Located, find_config
from dryboot.checklog.memory import MemoryReport, check_memory
from dryboot.checklog.parse import LogFacts, LogLine, iter_boots, iter_numbered_log_lines, iter_relevant_lines, read_log
from dryboot.errors import InputError
from dryboot.inputs import open_regular
from dryboot.planner.flags import add_custom_dtypes
from dryboot.planner.plan import Drafter, Policies
from dryboot.planner.runner import load_drafter_and_k
from dryboot.vllm.engine_args import EngineArgs
from dryboot.vllm.gpus import GPU
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
        return Budget(lo, hi, what), ""
    for line in facts.kv_lines:
        gib = line.figures.get("available_gib") or line.figures.get("gib") or line.figures.get("full_gib")
        if gib and (interval := gib_interval(gib)):
            return Budget(interval[0], interval[1], f"{gib} GiB in the {line.kind.value} line, {line.where}"), ""
    return None, "the log has no 'Available KV cache memory' line and the args no kv_cache_memory_bytes"


#: Flags a missing or cut args line leaves unknown that change the logged figures, searched in
#: this order (values tried: see :func:`_search_space`).
SEARCHED = ("kv_cache_dtype", "enable_prefix_caching", "speculative_config", "tensor_parallel_size")
#: Speculative tokens tried for an MTP-capable model when the args are unknown.
MTP_TOKENS = (1, 2, 3, 4, 5)
#: Speculative tokens tried for a drafter whose ``num_speculative_tokens`` the cut args hide.
SPEC_TOKENS = tuple(range(1, 17))
#: At most this many flag combinations are planned for one boot.
MAX_COMBINATIONS = 96


@dataclass(frozen=True)
class Combination:
    """One set of values for the flags the log does not give."""

    values: tuple[tuple[str, object], ...]

    def describe(self) -> str:
        parts = []
        for key, value in self.values:
            if key == "speculative_config":
                parts.append("no speculative decoding" if value is None else f"MTP k={value}")
            elif key == "enable_prefix_caching":
                parts.append("prefix caching " + ("on" if value else "off"))
            elif key == "kv_cache_dtype":
                parts.append(f"--kv-cache-dtype {value}")
            elif key == "tensor_parallel_size":
                parts.append(f"TP {value}")
            elif key == "num_speculative_tokens":
                parts.append(f"num_speculative_tokens {value}")
        return ", ".join(parts) or "the logged flags"


@dataclass(frozen=True)
class Search:
    """The flags the log leaves unknown and every combination of values that explains its lines."""

    unknown: tuple[str, ...]
    tried: int
    explaining: tuple[Combination, ...]
    budget_notes: tuple[str, ...] = ()


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
    if not flag.startswith("--") or flag in _OWN_OPTIONS or name in (given or {}):
        return exc
    key = flag.lstrip("-").replace("-", "_")
    where = facts.args_line.where if facts.args_line is not None else "its lines"
    value = f" {exc.where}" if exc.where else ""
    return InputError(source, f"{key}{value} read from the log ({where})", exc.reason)


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
    _check_architecture(facts, model.architecture, str(located.path), model_path is not None, notes)

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
    if given and "speculative_config" in given:
        _check_given_speculative(given["speculative_config"], logged, facts, unknown)
        spec_in = dict(given["speculative_config"])  # type: ignore[call-overload]
        if "speculative_config" in unknown:
            unknown.remove("speculative_config")
        notes.append("--speculative-config: given on the command line (a known fact, not searched)")
    speculative, drafter, args = resolve_speculative(spec_in, speculative_model, args, notes, source)

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
        first = _first_plannable(_Question(facts, model, args, speculative, unknown, candidate, budget, no_budget))
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
        search = _search_unknown(_Question(facts, model, args, speculative, [], candidate, budget, no_budget))
    if unknown:
        search = _search_unknown(_Question(facts, model, args, speculative, unknown, candidate, budget, no_budget))
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
        notes.append(
            f"max_model_len {args.max_model_len} read from the log is above the config's limit "
            f"({model.max_len.max_len_key}={model.max_len.max_position_embeddings}): vLLM accepts it only with "
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
    drafter, args = load_drafter_and_k(spec, speculative_model, args)
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


def _search_space(unknown: list[str], model: object, args: EngineArgs) -> list[list[tuple[str, object]]]:
    dims: list[list[tuple[str, object]]] = []
    for key in unknown:
        if key == "kv_cache_dtype":
            dims.append([(key, "auto"), (key, "fp8")])
        elif key == "enable_prefix_caching":
            dims.append([(key, True), (key, False)])
        elif key == "speculative_config":
            dims.append([(key, None)] + [(key, k) for k in MTP_TOKENS])
        elif key == "num_speculative_tokens":
            dims.append([(key, k) for k in SPEC_TOKENS])
        elif key == "tensor_parallel_size":
            start = args.tensor_parallel_size
            dims.append([(key, tp) for tp in (1, 2, 4, 8) if tp >= start])
    return dims


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


def _search_unknown(q: _Question) -> Search:
    """Every combination of values for the unknown flags under which each checked line matches
    (budget-dependent lines without a logged budget: one budget that gives them all is searched
    for, so they are explained only together with that budget)."""
    explaining: list[Combination] = []
    budget_notes: list[str] = []
    tried = 0
    for found, inputs, cmp in _trials(q):
        tried += 1
        statuses = [c.status for c in cmp.checks]
        if "differs" in statuses:
            continue
        if "unchecked" in statuses:
            joint = _joint_budget(cmp, inputs, q.candidate, q.no_budget)
            if joint is not None:
                explaining.append(found)
                budget_notes.append(f"{found.describe()}: {joint}")
            continue
        explaining.append(found)
    return Search(tuple(q.unknown), tried, tuple(explaining), tuple(budget_notes))


def _trials(q: _Question, *, explain: bool = False) -> Iterator[tuple[Combination, Inputs, Comparison]]:
    """Each combination of the unknown flags' values that can be planned (at most
    :data:`MAX_COMBINATIONS`, in :func:`_search_space` order), with its inputs and comparison."""
    for combo in itertools.islice(itertools.product(*_search_space(q.unknown, q.model, q.args)), MAX_COMBINATIONS):
        try:
            inputs = _trial_inputs(q.model, q.args, q.speculative, combo)
            cmp = compare(q.facts.kv_lines, inputs, q.candidate, q.budget, q.no_budget, explain=explain)
        except InputError:
            continue
        yield Combination(tuple(combo)), inputs, cmp


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
        else:
            changed: dict[str, Any] = {key: value}
            trial = replace(trial, **changed)
    drafter = None
    if spec is not None:
        drafter, trial = load_drafter_and_k(spec, None, trial)
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
        line), ``unexplained`` (the flags are incomplete and no combination explains every line),
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


@dataclass(frozen=True)
class LogReport:
    """Every boot of a log, checked one by one."""

    source: str
    boots: tuple[BootResult, ...]

    @property
    def exit_code(self) -> int:
        return exit_code_of({b.status for b in self.boots})


#: each exit code and the boot statuses (:class:`BootResult`) that give it, in the order they
#: win: 1 when one differs, else 2 when one is refused, 4 when one is explained only by searched
#: flags, 0 when one matches, else 3
STATUSES_BY_EXIT: dict[int, tuple[str, ...]] = {
    EXIT_DIFFERS: ("differs", "unexplained"),
    EXIT_REFUSED: ("refused",),
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
        return "explained" if r.search.explaining else "unexplained"
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
            yield BootResult(facts, _memory_only(facts, source, options), "unchecked", "no KV cache line in this boot")
            continue
        try:
            report = check_facts(facts, source=source, **options)  # type: ignore[arg-type]
        except InputError as exc:
            yield BootResult(facts, None, "refused", exc.line(), exc)
            continue
        status = boot_status(report)
        reason = None
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

"""``check_log``: read a vLLM boot log, rebuild the boot's flags, predict its KV lines, compare.

The flags come from the logged ``non-default args`` (:mod:`dryboot.checklog.argmap`), completed by
what the log itself says when the args are silent: ``Using max model len N`` and ``Chunked prefill
is enabled with max_num_batched_tokens=N``. The KV budget is ``kv_cache_memory_bytes`` when the
args give it (exact), else the ``Available KV cache memory: X GiB`` lines (each worker's, the
interval X rounds from; vLLM keeps the fewest blocks of all workers, so the smallest worker's
budget decides), else the GiB the not-enough-memory error or the auto-fit line prints.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field, replace
from pathlib import Path

from dryboot.checklog.argmap import LoggedArgs, map_args, validate_logged
from dryboot.checklog.compare import Budget, Candidate, Comparison, Inputs, compare, gib_interval
from dryboot.checklog.literal import parse_args_text
from dryboot.checklog.locate import Located, find_config
from dryboot.checklog.parse import LogFacts, read_log
from dryboot.errors import InputError
from dryboot.planner.flags import add_custom_dtypes
from dryboot.planner.plan import Policies
from dryboot.planner.runner import load_drafter_and_k
from dryboot.vllm.config.hf import load_model
from dryboot.vllm.engine_args import EngineArgs
from dryboot.vllm.versions import DEFAULT_VERSION, rules_for

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
    try:
        version = rules_for(plain, source=f"{source}: vLLM version").version
    except InputError as exc:
        raise InputError(
            source, "version", f"the log is from vLLM {logged}: {exc.reason}; pass --vllm-version to plan anyway"
        ) from None
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
) -> CheckReport:
    """Check a vLLM boot log (its text) line by line against dryboot's prediction.

    :param model_path: the model's config.json (or its directory); else found from the log.
    :param vllm_version: rules to plan with (default: the logged version's).
    :param speculative_model: the drafter's config.json when the log's drafter cannot be found.
    :param gpu_memory_bytes: the GPU's total memory, for vLLM's GPU-dependent defaults.
    :raises InputError: the log or a config cannot be read, or the args hold a key dryboot
        cannot model.
    """
    facts = read_log(text)
    if not facts.is_vllm_log:
        raise InputError(source, None, "no vLLM line found (no version, args, KV budget or KV cache line)")
    if not facts.kv_lines:
        raise InputError(
            source,
            None,
            "no KV cache line to check (GPU KV cache size, block size, mamba padding, padding layers, "
            "the not-enough-memory error): the log ends before the KV cache is set up",
        )
    notes: list[str] = []
    if facts.args_text is not None:
        where = facts.args_line.where if facts.args_line else "non-default args"
        logged = map_args(parse_args_text(facts.args_text, f"{source}: {where}"), source)
    else:
        logged = LoggedArgs(EngineArgs(), {}, None, None, None, None)
        notes.append("the log has no 'non-default args' line: vLLM's defaults assumed")
    notes.extend(logged.notes)
    version = _rules_version(vllm_version, facts.version, notes, source)

    located = find_config(
        model_path,
        logged.model or facts.served_model,
        revision=logged.revision,
        hf_config_path=logged.hf_config_path,
        source=source,
    )
    model = load_model(located.path)
    if facts.architecture and facts.architecture != model.architecture:
        notes.append(f"the log resolved {facts.architecture}; {located.path} declares {model.architecture or 'none'}")

    args = logged.args
    if "max-model-len" not in logged.flags and facts.max_model_len is not None:
        args = replace(args, max_model_len=facts.max_model_len)
        notes.append(f"max_model_len {facts.max_model_len} from the log ('Using max model len')")
    if "max-num-batched-tokens" not in logged.flags and facts.max_num_batched_tokens is not None:
        args = replace(args, max_num_batched_tokens=facts.max_num_batched_tokens)
        notes.append(
            f"max_num_batched_tokens {facts.max_num_batched_tokens} from the log ('Chunked prefill is enabled')"
        )
    if gpu_memory_bytes is not None:
        args = replace(args, gpu_memory_bytes=gpu_memory_bytes)
    args = add_custom_dtypes(args, list(custom_dtypes))
    args = replace(args, vllm_version=version)
    validate_logged(args, source)

    speculative = logged.speculative
    drafter = None
    if speculative is not None or speculative_model is not None:
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
        speculative = spec

    budget, no_budget = _budget(facts, args, source)
    check_args = replace(args, kv_cache_memory_bytes=budget.lo if budget else None)
    check_args.validate()
    candidate = Candidate(version, policies or Policies())
    comparison = compare(facts.kv_lines, Inputs(model, args, drafter), candidate, budget, no_budget)
    notes.extend(n for n in comparison.prediction.plan.notes if n not in notes)
    if budget is None:
        notes.append(no_budget + ": the lines whose figures depend on it are unchecked")
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
    )


def read_log_file(path: str) -> tuple[str, str]:
    """(text, source name) of ``path`` (``-``: standard input).

    :raises InputError: unreadable.
    """
    import sys

    if path == "-":
        return sys.stdin.read(), "<stdin>"
    p = Path(path)
    try:
        data = p.read_bytes()
    except FileNotFoundError:
        raise InputError(path, None, "no such file") from None
    except OSError as exc:
        raise InputError(path, None, f"cannot read: {exc.strerror or exc}") from None
    return data.decode("utf-8", errors="replace"), path

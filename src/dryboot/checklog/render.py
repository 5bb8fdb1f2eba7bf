"""Render a :class:`~dryboot.checklog.check.CheckReport`: one line per logged KV line, or JSON."""

from __future__ import annotations

import json
from collections.abc import Callable, Iterable
from typing import Any

from dryboot.checklog.check import (
    STATUSES_BY_EXIT,
    BootResult,
    CheckReport,
    LogReport,
    boot_status,
    exit_code_of,
    unread_reason,
)
from dryboot.checklog.compare import Explanation, LineCheck, describe_figures
from dryboot.checklog.memory import memory_text


def _flag_text(flags: dict[str, object]) -> str:
    parts = []
    for name, value in flags.items():
        if isinstance(value, bool):
            parts.append(f"--{name}" if value else f"--no-{name}")
        else:
            parts.append(f"--{name} {value}")
    return " ".join(parts) or "(vLLM's defaults)"


def check_line(c: LineCheck) -> str:
    """``line N (Process): matches: <text>`` / ``differs: <kind>: logged X, predicted Y; reason``."""
    where = c.line.where
    if c.status == "matches":
        return f"{where}: matches: {c.line.text}"
    kind = c.line.kind
    logged = describe_figures(kind, [c.line.text])
    if c.status in ("unchecked", "refused"):
        return f"{where}: {c.status}: {kind.value}: logged {logged}; {c.reason}"
    predicted = describe_figures(kind, c.predicted) if c.predicted else "no such line"
    return f"{where}: differs: {kind.value}: logged {logged}, predicted {predicted}; {c.reason}"


def render_text(r: CheckReport) -> str:
    out: list[str] = []
    f = r.facts
    model = r.logged.model or f.served_model or "?"
    out.append(
        f"dryboot check-log: {r.source}: vLLM {f.version or '?'} serving {model} ({r.architecture}), "
        f"{f.num_lines:,} lines"
    )
    out.append(f"config: {r.config.path} ({r.config.how})")
    flags = _flag_text(r.logged.flags)
    out.append(f"flags: {flags}")
    if r.speculative is not None:
        out.append(f"speculative config: {r.speculative}")
    out.append(f"KV budget: {r.budget.describe() if r.budget else 'unknown'}")
    out.append(
        f"rules: vLLM {r.candidate.version}, policies {r.candidate.policies.grouping} / "
        f"{r.candidate.policies.unification}"
    )
    for note in r.notes:
        out.append(f"note: {note}")
    for fact in f.stated:
        out.append(f"stated: {fact.name} {fact.value} ({fact.line.where}: {fact.said!r})")
    out.append("")
    for c in r.comparison.checks:
        out.append(check_line(c))
        for e in c.explanations[1:]:
            out.append(f"    also: {e.text}")
    for line in f.unread:
        out.append(f"{line.where}: unread: {unread_reason(line)}")
    for kind, text in r.comparison.missing:
        out.append(f"not in the log: {kind.value}: vLLM would log: {text}")
    if r.search is not None:
        s = r.search
        if s.unknown:
            screened = f"{s.screened} screened by one plan each, " if s.screened else ""
            out.append(f"unknown flags: {', '.join(s.unknown)} ({screened}{s.tried} combinations planned)")
            out.append(f"    searched: {s.space}")
            for same in s.same:
                out.append(f"    same lines: {same}")
            if s.pruned:
                out.append(f"    not plannable: {'; '.join(s.pruned)}")
            if s.not_planned:
                out.append(
                    f"    not planned: {s.not_planned} combinations beyond the search's limit (give the flags you know)"
                )
        else:
            out.append("unknown: the KV budget (the log states none); one budget must give every line")
        if s.explaining:
            for combo in s.explaining:
                out.append(f"    explained by: {combo.describe()}")
            for note in s.budget_notes:
                out.append(f"    budget: {note}")
        elif s.unknown:
            out.append("    no combination of them explains every line")
            if s.nearest:
                out.append(f"    nearest: {s.nearest}")
        else:
            out.append("    no single KV budget gives every line")
    if r.memory is not None:
        out.extend(memory_text(r.memory))
    checks = r.comparison.checks
    n_match = sum(c.status == "matches" for c in checks)
    n_diff = sum(c.status == "differs" for c in checks)
    n_unchecked = sum(c.status == "unchecked" for c in checks)
    n_refused = sum(c.status == "refused" for c in checks)
    tail = (
        (f", {n_unchecked} unchecked" if n_unchecked else "")
        + (f", {n_refused} refused" if n_refused else "")
        + (f", {len(f.unread)} unread" if f.unread else "")
    )
    status = boot_status(r)
    verdict = {
        "matches": f" — the boot agrees with vLLM {r.candidate.version}'s rules",
        "differs": " — no single KV budget explains them" if r.search is not None and not r.search.unknown else "",
        "unexplained": " — no combination of the unknown flags explains them",
        "explained": " — explained only by the searched flags above"
        if r.search is None or r.search.unknown
        else " — explained only with the searched KV budget above",
        "unchecked": " — nothing checked",
    }[status]
    if f.unread and status in ("matches", "explained", "unchecked"):
        verdict = " — but a KV line of the log could not be read (unread, above): not a clean verdict"
    out.append("")
    out.append(
        f"{len(checks)} KV line{'s' if len(checks) != 1 else ''}: {n_match} match, {n_diff} differ{tail}{verdict}"
    )
    return "\n".join(out) + "\n"


_EXIT_MEANING = {
    0: "every KV line checked matches",
    1: "a KV line differs",
    2: "refused",
    3: "nothing could be checked",
    4: "explained only by flags or a KV budget the log does not give",
    5: "no combination of the unknown flags explains the lines",
}

#: What each boot status that decides an exit code says (check-log's exit table, docs/check-log.md).
_DECIDED_BY = {
    "differs": "a KV line differs",
    "unexplained": "no combination of the unknown flags explains the lines",
    "refused": "refused",
    "explained": "explained only by flags or a KV budget the log does not give",
    "matches": "every KV line checked matches",
    "unchecked": "nothing could be checked",
}


def render_log(report: LogReport) -> str:
    """Every boot of ``report``: a single boot as :func:`render_text`, several under a
    ``boot N (lines a-b)`` heading; a boot that could not be checked in one line."""
    many = len(report.boots) > 1
    out = [render_boot(b, report.source, many) for b in report.boots]
    seen: dict[str, tuple[int, int]] = {}
    for b in report.boots:
        _count_status(seen, b)
    out.append(render_exit(report.exit_code, len(report.boots), many, seen))
    return "".join(out)


def render_boot(b: BootResult, source: str, many: bool) -> str:
    """One boot's text (:func:`render_log`), under its heading when the log holds ``many``."""
    head = f"== boot {b.facts.boot} (lines {b.facts.first_line}–{b.facts.last_line}): {b.status}\n" if many else ""
    return head + _boot_text(b, source) + "\n"


def _count_status(seen: dict[str, tuple[int, int]], b: BootResult) -> None:
    """Keep, per status, the first boot that has it and how many do (memory: one pair each)."""
    first, count = seen.get(b.status, (b.facts.boot, 0))
    seen[b.status] = (first, count + 1)


def render_exit(code: int, boots: int, many: bool, seen: dict[str, tuple[int, int]] | None = None) -> str:
    """The last line: ``exit N: what decided it``, the boots that decided it when there are
    several (``seen``: status -> first boot with it, number of boots with it)."""
    if seen is None:
        return f"exit {code}: {_EXIT_MEANING[code]}" + (f" ({boots} boots)" if many else "") + "\n"
    parts = []
    for status in STATUSES_BY_EXIT[code]:
        if status not in seen:
            continue
        first, count = seen[status]
        which = "" if not many else f" (boot {first})" if count == 1 else f" ({count} boots, the first boot {first})"
        parts.append(_DECIDED_BY[status] + which)
    text = "; ".join(parts) or _EXIT_MEANING[code]
    return f"exit {code}: {text}" + (f" — {boots} boots" if many else "") + "\n"


def stream_log(boots: Iterable[BootResult], source: str, echo: Callable[[str], None], *, as_json: bool) -> int:
    """Render ``boots`` one at a time through ``echo`` (text as :func:`render_log`, JSON as
    :func:`log_to_dict`), keeping only their statuses: memory stays that of one boot whatever
    their number. Returns the exit code.

    :raises InputError: as :func:`dryboot.checklog.check.iter_check_stream`, before any output.
    """
    it = iter(boots)
    first = next(it, None)
    second = next(it, None)
    many = second is not None
    statuses: set[str] = set()
    seen: dict[str, tuple[int, int]] = {}
    count = 0
    if as_json:
        echo("{\n" + f'  "log": {json.dumps(source)},\n  "boots": [')
    for b in (x for x in (first, second) if x is not None):
        count += 1
        statuses.add(b.status)
        _count_status(seen, b)
        echo(_json_boot(b, count > 1) if as_json else render_boot(b, source, many))
    for b in it:
        count += 1
        statuses.add(b.status)
        _count_status(seen, b)
        echo(_json_boot(b, True) if as_json else render_boot(b, source, many))
    code = exit_code_of(statuses)
    echo(f'\n  ],\n  "exit": {code}\n}}\n' if as_json else render_exit(code, count, many, seen))
    return code


def _json_boot(b: BootResult, comma: bool) -> str:
    text = json.dumps(boot_to_dict(b), indent=2, default=str)
    return ("," if comma else "") + "\n" + "\n".join("    " + line for line in text.split("\n"))


def _boot_text(b: BootResult, source: str) -> str:
    memory = "".join(
        f"memory: {name}: {figure} ({line.where})\n" for name, figure, line in b.facts.memory
    )  # read for budget calibration, not checked
    if b.report is not None and not b.facts.kv_lines and b.report.memory is not None:  # memory lines only
        return f"dryboot check-log: {source}: {b.status}: {b.reason}\n" + "\n".join(memory_text(b.report.memory)) + "\n"
    if b.report is not None:
        return render_text(b.report) + memory
    return f"dryboot check-log: {source}: {b.status}: {b.reason}\n" + memory


def _explanation(e: Explanation) -> dict[str, Any]:
    d: dict[str, Any] = {"kind": e.kind, "text": e.text}
    if e.budget_lo is not None:
        d["budget_bytes"] = [e.budget_lo, e.budget_hi]
    if e.kind == "version":
        d["vllm_version"] = e.version
    if e.policies is not None:
        d["grouping"] = e.policies.grouping
        d["unification"] = e.policies.unification
    return d


def log_to_dict(report: LogReport) -> dict[str, Any]:
    """JSON of every boot: ``boots`` (each :func:`to_dict` or a status and reason) and ``exit``."""
    return {"log": report.source, "boots": [boot_to_dict(b) for b in report.boots], "exit": report.exit_code}


def boot_to_dict(b: BootResult) -> dict[str, Any]:
    """One boot of :func:`log_to_dict`."""
    d: dict[str, Any] = {"boot": b.facts.boot, "lines": [b.facts.first_line, b.facts.last_line], "status": b.status}
    if b.report is not None:
        d.update(to_dict(b.report))
        d["status"] = b.status
    else:
        d["reason"] = b.reason
    d["memory"] = [{"line": ln.number, "what": name, "figure": fig} for name, fig, ln in b.facts.memory]
    return d


def to_dict(r: CheckReport) -> dict[str, Any]:
    f = r.facts
    checks = r.comparison.checks
    return {
        "log": r.source,
        "vllm_version_logged": f.version,
        "model": r.logged.model or f.served_model,
        "architecture_logged": f.architecture,
        "architecture": r.architecture,
        "config": str(r.config.path),
        "config_found_by": r.config.how,
        "flags": {k: v for k, v in r.logged.flags.items()},
        "speculative_config": r.speculative,
        "max_model_len": r.args.max_model_len,
        "max_num_batched_tokens": r.args.max_num_batched_tokens,
        "budget": None
        if r.budget is None
        else {"bytes": [r.budget.lo, r.budget.hi], "exact": r.budget.exact, "source": r.budget.source},
        "rules": {
            "vllm_version": r.candidate.version,
            "grouping": r.candidate.policies.grouping,
            "unification": r.candidate.policies.unification,
        },
        "notes": list(r.notes),
        "lines": [
            {
                "kind": c.line.kind.value,
                "status": c.status,
                "logged": c.line.text,
                "logged_figures": describe_figures(c.line.kind, [c.line.text]),
                "predicted": list(c.predicted),
                "predicted_figures": describe_figures(c.line.kind, c.predicted) if c.predicted else None,
                "reason": c.reason,
                "explanations": [_explanation(e) for e in c.explanations],
                "where": [{"line": ln.number, "process": ln.process, "pid": ln.pid} for ln in c.line.lines],
            }
            for c in checks
        ],
        "not_in_log": [{"kind": k.value, "predicted": t} for k, t in r.comparison.missing],
        "unread": [{"line": ln.number, "process": ln.process, "text": ln.message} for ln in f.unread],
        "summary": {
            "lines": len(checks),
            "matches": sum(c.status == "matches" for c in checks),
            "differs": sum(c.status == "differs" for c in checks),
            "unchecked": sum(c.status == "unchecked" for c in checks),
            "refused": sum(c.status == "refused" for c in checks),
        },
        "memory_check": r.memory.to_dict() if r.memory is not None else None,
        "ok": r.ok,
        "status": boot_status(r),
        "search": None
        if r.search is None
        else {
            "unknown": list(r.search.unknown),
            "tried": r.search.tried,
            "explaining": [c.describe() for c in r.search.explaining],
            "budgets": list(r.search.budget_notes),
            "space": r.search.space,
            "same": list(r.search.same),
            "pruned": list(r.search.pruned),
            "not_planned": r.search.not_planned,
            "screened": r.search.screened,
            "nearest": r.search.nearest,
        },
        "stated": [fact.to_dict() for fact in f.stated],
    }

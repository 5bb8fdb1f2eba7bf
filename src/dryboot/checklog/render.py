"""Render a :class:`~dryboot.checklog.check.CheckReport`: one line per logged KV line, or JSON."""

from __future__ import annotations

from typing import Any

from dryboot.checklog.check import CheckReport
from dryboot.checklog.compare import Explanation, LineCheck, describe_figures


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
    if c.status == "unchecked":
        return f"{where}: unchecked: {kind.value}: logged {logged}; {c.reason}"
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
    out.append("")
    for c in r.comparison.checks:
        out.append(check_line(c))
        for e in c.explanations[1:]:
            out.append(f"    also: {e.text}")
    for kind, text in r.comparison.missing:
        out.append(f"not in the log: {kind.value}: vLLM would log: {text}")
    checks = r.comparison.checks
    n_match = sum(c.status == "matches" for c in checks)
    n_diff = sum(c.status == "differs" for c in checks)
    n_unchecked = sum(c.status == "unchecked" for c in checks)
    tail = f", {n_unchecked} unchecked" if n_unchecked else ""
    out.append("")
    out.append(
        f"{len(checks)} KV line{'s' if len(checks) != 1 else ''}: {n_match} match, {n_diff} differ{tail}"
        + ("" if n_diff else " — the boot agrees with " + f"vLLM {r.candidate.version}'s rules")
    )
    return "\n".join(out) + "\n"


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
        "summary": {
            "lines": len(checks),
            "matches": sum(c.status == "matches" for c in checks),
            "differs": sum(c.status == "differs" for c in checks),
            "unchecked": sum(c.status == "unchecked" for c in checks),
        },
        "ok": r.ok,
    }

"""vLLM's memory lines in a log, read figure by figure, and compared with dryboot's budget.

The lines (vLLM 0.28.0's templates; 0.27.1-0.33.0 print the same words):

* ``Model loading took W GiB memory and S seconds`` (``v1/worker/gpu_model_runner.py`` l.5516; the
  V2 runner's ``v1/worker/gpu/model_runner.py`` l.381; 0.27.1's V2 runner omits ``memory``; V0 and
  early V1 print ``GB`` for the same bytes / 2**30, and V0's ``Loading model weights took W GB``);
* ``Available KV cache memory: X GiB`` (``v1/worker/gpu_worker.py`` l.579);
* ``Estimated CUDA graph memory: X GiB total`` (``gpu_model_runner.py`` l.6942, the V1 runner's
  ``profile_cudagraph_memory``);
* ``Graph capturing finished in N secs, took X GiB`` (``gpu_model_runner.py`` l.7049; V2 l.907);
* ``CUDA graph pool memory: X GiB (actual), Y GiB (estimated), difference: ...``
  (``gpu_worker.py`` l.742);
* the summary ``Free memory on device (F/T GiB) on startup. Desired GPU memory utilization is (U,
  R GiB). Actual usage is C GiB for consumed memory (weights + non-torch), A GiB for peak
  activation, and G GiB for CUDAGraph memory. ... Current kv cache memory in use is K GiB.``
  (``gpu_worker.py`` l.782-800), where C is ``total_consumed``, A the profile run's transient peak
  plus the CUDA-graph estimate vLLM subtracted, G the pool captured after the KV cache; before
  0.11 it read ``Actual usage is W GiB for weight, A GiB for peak activation, N GiB for non-torch
  memory, and G GiB for CUDAGraph memory`` (``... in use is K bytes``).

Every figure is vLLM's ``format_gib`` (``round(bytes / 2**30, 2)``) or ``%.2f``: a logged ``x``
stands for bytes within 0.005 GiB of ``x * 2**30``.
"""

from __future__ import annotations

import math
import re
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any

from dryboot.checklog.parse import LogFacts, LogLine
from dryboot.errors import InputError
from dryboot.planner.budget import weights_max_model_len
from dryboot.planner.plan import Plan
from dryboot.vllm.worker.budget import Budget, KvEstimate
from dryboot.vllm.worker.interval import Interval

GIB = 1 << 30
#: Half the last digit vLLM prints (GiB): a logged figure's rounding.
ROUNDING_GIB = 0.005
#: A logged ``Model loading took`` figure matches the predicted weights when vLLM's ``format_gib``
#: of the prediction is within this of it (issue 27: "matched within 0.01 GiB").
WEIGHTS_GIB = 0.01 + 1e-9

_NUM = r"-?\d+(?:\.\d+)?"

#: (kind, pattern): each pattern's named groups are GiB figures unless named ``secs`` / ``util``.
PATTERNS: tuple[tuple[str, re.Pattern[str]], ...] = (
    ("model loading", re.compile(rf"Model loading took (?P<weights>{_NUM}) Gi?B(?: memory)?")),
    # V0 (vLLM before 0.10, ``worker/model_runner.py``): bytes / 2**30, printed as "GB"
    ("model loading", re.compile(rf"Loading model weights took (?P<weights>{_NUM}) GB")),
    ("available", re.compile(rf"Available KV cache memory: (?P<kv>{_NUM}) GiB")),
    ("estimated CUDA graph", re.compile(rf"Estimated CUDA graph memory: (?P<cudagraph_estimate>{_NUM}) GiB total")),
    (
        "graph capturing",
        re.compile(rf"Graph capturing finished in (?P<secs>{_NUM}) secs?, took (?P<cudagraph>{_NUM}) GiB"),
    ),
    (
        "CUDA graph pool",
        re.compile(
            rf"CUDA graph pool memory: (?P<cudagraph>{_NUM}) GiB \(actual\), "
            rf"(?P<cudagraph_estimate>{_NUM}) GiB \(estimated\)"
        ),
    ),
    (
        "free memory",
        re.compile(
            rf"Free memory on device \((?P<free>{_NUM})/(?P<total>{_NUM}) GiB\) on startup\.\s*"
            rf"Desired GPU memory utilization is \((?P<util>{_NUM}), (?P<requested>{_NUM}) GiB\)"
        ),
    ),
    (
        "actual usage",
        re.compile(
            rf"Actual usage is (?P<consumed>{_NUM}) GiB for consumed memory \(weights \+ non-torch\),\s*"
            rf"(?P<activation>{_NUM}) GiB for peak activation,\s*and (?P<cudagraph>{_NUM}) GiB for CUDAGraph memory"
        ),
    ),
    (
        "actual usage (before 0.11)",
        re.compile(
            rf"Actual usage is (?P<weights>{_NUM}) GiB for weight,\s*(?P<activation>{_NUM}) GiB for peak "
            rf"activation,\s*(?P<non_torch>{_NUM}) GiB for non-torch memory,\s*and (?P<cudagraph>{_NUM}) GiB for "
            r"CUDAGraph memory"
        ),
    ),
    ("kv in use", re.compile(rf"Current kv cache memory in use is (?P<kv>{_NUM}) GiB")),
)

#: Words one of which every memory line holds (checked before the patterns).
_WORDS = ("took", "KV cache memory", "graph", "Free memory on device", "Actual usage", "kv cache memory in use")


@dataclass(frozen=True)
class MemoryLine:
    """One figure-bearing part of a memory line.

    :param kind: the template's name (a key of :data:`PATTERNS`).
    :param figures: the named figures as logged (GiB, except ``secs`` and ``util``).
    :param text: the matched part of the message.
    :param line: where it was logged.
    """

    kind: str
    figures: dict[str, str]
    text: str
    line: LogLine

    def gib(self, name: str) -> float:
        """A figure in GiB (:raises KeyError: the line has no such figure)."""
        return float(self.figures[name])


def read_memory_message(message: str) -> list[tuple[str, dict[str, str], str]]:
    """Every (kind, figures, matched text) of :data:`PATTERNS` in one message (the summary line
    holds two or three: free memory, actual usage, kv in use). Pure; never raises."""
    if not any(w in message for w in _WORDS):
        return []
    out = []
    for kind, pattern in PATTERNS:
        m = pattern.search(message)
        if m is not None:
            out.append((kind, {k: v for k, v in m.groupdict().items() if v is not None}, m.group(0)))
    return out


def memory_lines(facts: LogFacts) -> tuple[MemoryLine, ...]:
    """The memory lines of one boot, in log order, each line once (a line the parser kept both as
    a memory line and as the ``Available KV cache memory`` line is read once)."""
    seen: set[int] = set()
    lines: list[LogLine] = [line for _what, _fig, line in facts.memory] + [a.line for a in facts.available]
    out = []
    for line in sorted(lines, key=lambda x: x.number):
        if line.number in seen:
            continue
        seen.add(line.number)
        for kind, figures, text in read_memory_message(line.message):
            out.append(MemoryLine(kind, figures, text, line))
    return tuple(out)


@dataclass(frozen=True)
class MemoryCheck:
    """One memory figure against dryboot's prediction.

    :param status: ``confirmed`` (inside the predicted interval, widened by the logged figure's
        rounding; weights and exact figures to 0.01 GiB), ``differs`` (outside, with ``reason``
        naming the term), ``reported`` (no prediction for this figure: ``reason`` says why).
    :param predicted: ``(low, high)`` in GiB, or ``None``.
    """

    kind: str
    figure: str
    logged: float
    predicted: tuple[float, float] | None
    status: str
    reason: str
    line: LogLine

    def to_dict(self) -> dict[str, Any]:
        return {
            "kind": self.kind,
            "figure": self.figure,
            "logged_gib": self.logged,
            "predicted_gib": list(self.predicted) if self.predicted is not None else None,
            "status": self.status,
            "reason": self.reason,
            "line": self.line.number,
        }


def _g(x: float) -> str:
    return f"{x:.2f}"


def check_figure(
    kind: str,
    figure: str,
    logged: float,
    predicted: tuple[float, float] | None,
    line: LogLine,
    *,
    term: str,
    tolerance: float = ROUNDING_GIB,
    unpredicted: str = "",
) -> MemoryCheck:
    """``logged`` (GiB) against ``predicted`` (GiB interval), ``tolerance`` added to both sides
    (the logged figure's rounding; 0.01 GiB for weights). ``term`` names what the figure is in
    vLLM's budget, for the reason given when it differs."""
    if predicted is None:
        return MemoryCheck(kind, figure, logged, None, "reported", unpredicted or "not predicted", line)
    low, high = predicted
    if low - tolerance <= logged <= high + tolerance:
        shown = _g(low) if abs(high - low) < 0.005 else f"{_g(low)}-{_g(high)}"
        return MemoryCheck(kind, figure, logged, predicted, "confirmed", f"{term}: predicted {shown} GiB", line)
    side = "above" if logged > high else "below"
    by = logged - high if logged > high else low - logged
    reason = f"{term}: logged {_g(logged)} GiB is {_g(by)} GiB {side} the predicted {_g(low)}-{_g(high)} GiB"
    return MemoryCheck(kind, figure, logged, predicted, "differs", reason, line)


@dataclass(frozen=True)
class MemoryReport:
    """The memory lines of one boot against dryboot's budget.

    :param checks: one per figure, in log order.
    :param budget: the predicted budget (``None`` with ``refused`` saying why: then only the
        figures that need no budget are checked).
    :param gpu: what the GPU-dependent figures were predicted for.
    """

    checks: tuple[MemoryCheck, ...]
    budget: Budget | None
    refused: str | None
    gpu: str
    notes: tuple[str, ...] = ()

    def to_dict(self) -> dict[str, Any]:
        return {
            "gpu": self.gpu,
            "refused": self.refused,
            "budget": self.budget.to_dict() if self.budget is not None else None,
            "checks": [c.to_dict() for c in self.checks],
            "notes": list(self.notes),
            "summary": {s: sum(c.status == s for c in self.checks) for s in ("confirmed", "differs", "reported")},
        }


def _iv(low: int, high: int) -> tuple[float, float]:
    return (low / GIB, high / GIB)


def _check_bytes(m: MemoryLine, figure: str, predicted: Interval | KvEstimate, *, term: str) -> MemoryCheck:
    """:func:`check_figure` of the line's ``figure`` against ``predicted`` (bytes)."""
    return check_figure(m.kind, figure, m.gib(figure), _iv(predicted.low, predicted.high), m.line, term=term)


_CAPTURED = (
    "the pool captured after the KV cache is allocated; dryboot predicts vLLM's estimate of it (subtracted from the "
    "budget), not the capture (vLLM's own estimate misses it by -92% to +457%, kv-budget.md)"
)


def _graph_term(budget: Budget) -> str:
    """The source of the budget's CUDA-graph term (why it is what it is)."""
    for term in budget.terms:
        if "graph" in term.name.lower():
            return term.source
    return "no CUDA-graph term"


def _points(budget: Budget, prefix: str) -> int:
    """The sum of the estimates of the budget's terms whose name starts with ``prefix`` (bytes)."""
    return sum(t.point for t in budget.terms if t.name.lower().startswith(prefix))


def _explain_kv(lines: tuple[MemoryLine, ...], budget: Budget) -> str:
    """Which terms of vLLM's ``available = requested - weights - non-torch - activation - CUDA-graph
    estimate`` move the logged KV figure from the estimate, from the boot's own lines: each logged
    term against its prediction, with its effect on the KV figure, and the rest attributed to the
    terms the log does not state separately."""
    kv = budget.available_kv_cache_bytes
    logged_kv = next((m.gib("kv") for m in lines if m.kind in ("available", "kv in use")), None)
    parts: list[str] = []
    explained = 0.0  # GiB of the KV difference the logged terms account for
    stated: set[str] = set()

    def term(name: str, logged: float, predicted: float, sign: int) -> None:
        nonlocal explained
        stated.add(name)
        delta = logged - predicted
        if abs(delta) >= 0.01:
            explained += sign * delta
            parts.append(f"{name} {logged:.2f} GiB logged vs {predicted:.2f} predicted ({sign * delta:+.2f} on the KV)")

    cg_mid = _points(budget, "cuda graph") / GIB
    summary = any(m.kind == "actual usage" for m in lines)
    for m in lines:
        if m.kind == "free memory" and "requested" not in stated:
            term("requested", m.gib("requested"), budget.requested_bytes / GIB, +1)
        elif m.kind in ("model loading", "actual usage (before 0.11)") and not summary and "weights" not in stated:
            term("weights", m.gib("weights"), budget.weights_bytes / GIB, -1)
        elif m.kind in ("estimated CUDA graph", "CUDA graph pool") and "CUDA-graph estimate" not in stated:
            term("CUDA-graph estimate", m.gib("cudagraph_estimate"), cg_mid, -1)
        elif m.kind == "actual usage" and "consumed" not in stated:
            consumed = (budget.weights_bytes + _points(budget, "non-torch") + _points(budget, "persistent")) / GIB
            term("consumed (weights + non-torch)", m.gib("consumed"), consumed, -1)
            peak = (_points(budget, "activation") + _points(budget, "cuda graph")) / GIB
            term("peak activation (+ CUDA-graph estimate)", m.gib("activation"), peak, -1)
    if logged_kv is not None:
        rest = logged_kv - kv.estimate / GIB - explained
        if abs(rest) >= 0.01:
            unstated = "activation transient and non-torch memory"
            if "consumed (weights + non-torch)" in stated:
                unstated = "rounding"
            parts.append(f"the rest ({rest:+.2f} GiB) lies in the terms the log does not state: {unstated}")
    return "by term: " + ("; ".join(parts) if parts else "none stated")


def _gpu_figures(m: MemoryLine, total_bytes: int, util: float) -> list[MemoryCheck]:
    """The summary's ``T`` against the GPU's CUDA total and ``R`` against ``ceil(T x U)`` (no
    budget needed). The total is known to two decimals (a logged or posted GiB figure), so ``R``
    is too, to ``U x 0.005`` GiB."""
    total = total_bytes / GIB
    req = math.ceil(total_bytes * util) / GIB
    spread = util * ROUNDING_GIB
    return [
        check_figure(m.kind, "total", m.gib("total"), (total, total), m.line, term="the GPU's CUDA total"),
        check_figure(
            m.kind,
            "requested",
            m.gib("requested"),
            (req - spread, req + spread),
            m.line,
            term="requested = ceil(total x util)",
        ),
    ]


_POOL_TERM = "the captured graphs' memory (captured after the KV cache; vLLM's own estimate misses it by -92% to +457%)"


def _captured(m: MemoryLine, budget: Budget | None) -> MemoryCheck:
    """The captured graphs' memory (the summary's ``G``, ``Graph capturing ... took``, the pool's
    actual) against the budget's interval of the graphs' own memory
    (``Budget.cuda_graph_pool_bytes``) where it has one, else reported."""
    pool = getattr(budget, "cuda_graph_pool_bytes", None) if budget is not None else None
    if pool is None or pool.high <= 0:
        return check_figure(m.kind, "cudagraph", m.gib("cudagraph"), None, m.line, term="", unpredicted=_CAPTURED)
    return check_figure(
        m.kind,
        "cudagraph",
        m.gib("cudagraph"),
        _iv(pool.low, pool.high),
        m.line,
        term=_POOL_TERM,
    )


def compare_memory(
    lines: tuple[MemoryLine, ...],
    budget: Budget | None,
    *,
    total_bytes: int | None = None,
    util: float | None = None,
    weights_stages: tuple[int, ...] = (),
    refused: str | None = None,
    gpu: str = "",
    gpu_named: bool = True,
    notes: tuple[str, ...] = (),
) -> MemoryReport:
    """Every figure of ``lines`` against ``budget`` (bytes; see :class:`MemoryCheck`). Pure.

    :param weights_stages: each pipeline stage's predicted weights (``Model loading took`` of a
        rank of that stage); checked even without a budget.
    :param gpu_named: whether the GPU is known (named, or its total read from the log); else the
        GPU-dependent figures are ``reported``.
    :param total_bytes: the GPU's CUDA total and ``util`` the utilization, for the summary's ``T``
        and ``R`` (checked with or without a budget).
    """
    no_budget = "no budget predicted" + (" (see above)" if refused else "")
    no_gpu = "no GPU named (give --gpu): the budget's figures depend on its CUDA total"
    out: list[MemoryCheck] = []
    for m in lines:
        if m.kind == "model loading":
            logged = m.gib("weights")
            if not weights_stages:
                out.append(check_figure(m.kind, "weights", logged, None, m.line, term="", unpredicted=no_budget))
                continue
            near = round(min(weights_stages, key=lambda w: abs(w / GIB - logged)) / GIB, 2)
            check = check_figure(
                m.kind, "weights", logged, (near, near), m.line, term="weights per rank", tolerance=WEIGHTS_GIB
            )
            if check.status == "differs" and logged > 0:
                ratio = near / logged
                k = round(ratio)
                if k in (2, 4, 8, 16) and abs(ratio - k) < 0.05 * k:
                    reason = f"{check.reason} (the prediction / {k}: a rank of tensor_parallel_size {k}?)"
                    check = replace(check, reason=reason)
            out.append(check)
            continue
        if m.kind == "graph capturing":
            out.append(_captured(m, budget))
            continue
        if m.kind == "free memory" and gpu_named and total_bytes is not None and util is not None:
            out.extend(_gpu_figures(m, total_bytes, util))
            if budget is None:
                out.append(check_figure(m.kind, "free", m.gib("free"), None, m.line, term="", unpredicted=no_budget))
                continue
        if budget is None or not gpu_named:
            for name in m.figures:
                if name not in ("secs", "util"):
                    why = no_budget if budget is None else no_gpu
                    out.append(check_figure(m.kind, name, m.gib(name), None, m.line, term="", unpredicted=why))
            continue
        if m.kind in ("available", "kv in use"):
            c = _check_bytes(m, "kv", budget.available_kv_cache_bytes, term="available KV cache memory")
            if c.status == "differs":
                c = replace(c, reason=f"{c.reason}; {_explain_kv(lines, budget)}")
            out.append(c)
        elif m.kind in ("estimated CUDA graph", "CUDA graph pool"):
            if m.kind == "CUDA graph pool":
                out.append(_captured(m, budget))
            out.append(_check_bytes(m, "cudagraph_estimate", budget.cuda_graph_bytes, term="CUDA-graph estimate"))
        elif m.kind == "free memory":
            gate = budget.startup_gate.free_bytes
            c = _check_bytes(m, "free", gate, term="free memory of an idle GPU at start")
            if c.status == "differs" and c.logged < c.predicted[0]:  # type: ignore[index]
                c = replace(c, reason=f"{c.reason}: other processes held memory at start")
            out.append(c)
        elif m.kind == "actual usage":
            consumed = budget.non_torch_bytes + Interval(budget.weights_bytes, budget.weights_bytes)
            peak = budget.activation_bytes + budget.cuda_graph_bytes
            out.append(_check_bytes(m, "consumed", consumed, term="weights + non-torch"))
            out.append(_check_bytes(m, "activation", peak, term="transient peak + CUDA-graph estimate"))
            out.append(_captured(m, budget))
        elif m.kind == "actual usage (before 0.11)":
            w = round(budget.weights_bytes / GIB, 2)
            out.append(
                check_figure(
                    m.kind, "weights", m.gib("weights"), (w, w), m.line, term="weights per rank", tolerance=WEIGHTS_GIB
                )
            )
            out.append(_check_bytes(m, "activation", budget.activation_bytes, term="transient peak"))
            out.append(_check_bytes(m, "non_torch", budget.non_torch_bytes, term="non-torch memory"))
            out.append(_captured(m, budget))
    if budget is not None:
        why = _graph_term(budget)
        out = [
            replace(c, reason=f"{c.reason}; dryboot's term: {why}")
            if c.status == "differs" and c.figure == "cudagraph_estimate"
            else c
            for c in out
        ]
    return MemoryReport(tuple(out), budget, refused, gpu, notes)


def check_memory(
    facts: LogFacts,
    p: Plan,
    config_path: str,
    *,
    util_logged: bool,
    drafter: Any = None,
) -> MemoryReport | None:
    """The memory lines of one boot against dryboot's budget for the boot's plan ``p`` (its
    flags; its KV budget is ignored), the weights from ``config_path``'s checkpoint headers or
    the config alone. ``None`` when the boot logs no memory line.

    Without ``--gpu-memory``, the CUDA total of the log's ``Free memory on device (F/T GiB)``
    line is taken (``T`` GiB, stated), also beside ``--gpu`` (the host's figure beats the table's)
    unless it exceeds that GPU; without a logged ``gpu_memory_utilization``, the line's ``U``.
    """
    lines = memory_lines(facts)
    if not lines:
        return None
    # at call: only a boot with memory lines reads checkpoint headers and runs the budget model
    from dryboot.vllm.model_executor.model_loader.loader import model_weights, serving_gpu, weights_as_served
    from dryboot.vllm.transformers_utils.config import load_config_json
    from dryboot.vllm.worker.budget import estimate_budget
    from dryboot.vllm.worker.profile_run import forward_shape

    args = p.args
    notes: list[str] = []
    free = next((m for m in lines if m.kind == "free memory"), None)
    gpu_named = args.gpu is not None or args.gpu_memory_bytes is not None
    if args.gpu_memory_bytes is None and free is not None:
        # the host's own figure (WSL2, a cloud VM, another edition) overrides the table's
        logged = args.evolve(gpu_memory_bytes=round(free.gib("total") * GIB))
        try:
            logged.validate()
        except InputError as exc:  # a figure above the named card: that card is not the one logged
            notes.append(f"the log's CUDA total {free.figures['total']} GiB is not taken: {exc.reason}")
        else:
            args = logged
            notes.append(f"the GPU's CUDA total {free.figures['total']} GiB from the log ({free.line.where})")
            gpu_named = True
    if not util_logged and free is not None:
        args = args.evolve(gpu_memory_utilization=float(free.figures["util"]))
        notes.append(f"gpu_memory_utilization {free.figures['util']} from the log ({free.line.where})")
    args = args.evolve(kv_cache_memory_bytes=None, non_kv_memory_bytes=None)
    gpu = args.device
    where = args.gpu.label() if args.gpu is not None else f"{gpu.label()} (assumed)"
    if args.gpu_memory_bytes is not None:
        where += f", CUDA total {args.gpu_memory_bytes / GIB:.2f} GiB"
    common: dict[str, Any] = {
        "gpu": where,
        "gpu_named": gpu_named,
        "total_bytes": args.gpu_memory_bytes or gpu.cuda_total_bytes,
        "util": args.gpu_memory_utilization,
    }
    try:

        def walk(language_model_only: bool) -> Any:
            return model_weights(
                Path(config_path),
                tp=args.tensor_parallel_size,
                pp=args.pipeline_parallel_size,
                dp=args.data_parallel_size,
                dtype=args.dtype,
                limit_mm_per_prompt=args.mm_limits,
                language_model_only=language_model_only,
                max_num_batched_tokens=args.resolved_max_num_batched_tokens(),
                max_num_seqs=args.resolved_max_num_seqs(),
                # the length vLLM builds the model with (a rotary table spanning it, FLASHMLA_SPARSE's
                # prefill workspace), as plan passes it
                max_model_len=weights_max_model_len(p.model, args, drafter),
                num_speculative_tokens=args.num_speculative_tokens or 0,
                **serving_gpu(gpu, args.vllm_version),
                kv_cache_dtype=args.kv_cache_dtype,
                attention_backend=args.attention_backend,
                flashinfer_cubin=args.flashinfer_cubin,
                mm_encoder_tp_mode=args.mm_encoder_tp_mode,
            )

        # a logged --mm-encoder-tp-mode data: the towers as vLLM builds them then
        weights = weights_as_served(
            walk,
            p.model.architecture,
            args.tensor_parallel_size,
            args.vllm_version,
            args.language_model_only,
            args.mm_encoder_tp_mode,
        )
    except InputError as exc:
        return compare_memory(lines, None, refused=f"weights: {exc.line()}", notes=tuple(notes), **common)
    if weights.refused or not weights.stages:
        why = f"weights: {weights.refused or 'not modelled'}"
        return compare_memory(lines, None, refused=why, notes=tuple(notes), **common)
    stages = tuple(w.loaded_bytes for w in weights.stages)
    notes.append(f"weights from the {weights.source}")
    budget = None
    refused = None
    try:
        source, config = load_config_json(config_path)
        shape = forward_shape(config, source, args.dtype if args.dtype != "auto" else p.model_dtype)
        backend = p.backend.name if p.backend is not None else "FLASH_ATTN"
        budget = estimate_budget(
            p.model,
            args,
            weights_bytes=stages[0],
            gpu=gpu,
            rules=p.rules,
            drafter=drafter,
            shape=shape,
            backend=backend,
        )
        notes.append(f"budget: vLLM {budget.release}'s rules, {budget.runner} model runner")
    except InputError as exc:
        refused = exc.line()
    return compare_memory(lines, budget, weights_stages=stages, refused=refused, notes=tuple(notes), **common)


def memory_text(r: MemoryReport) -> list[str]:
    """The text report's memory section: one line per figure (``line N: confirmed: ...``)."""
    out = ["", f"memory lines (budget predicted for the {r.gpu}; not in the exit code):"]
    if r.refused:
        out.append(f"  no budget: {r.refused}")
    for note in r.notes:
        out.append(f"  note: {note}")
    for c in r.checks:
        out.append(f"  {c.line.where}: {c.status}: {c.kind}: {c.figure} {c.logged:.2f} GiB; {c.reason}")
    n = {s: sum(c.status == s for c in r.checks) for s in ("confirmed", "differs", "reported")}
    out.append(
        f"  {len(r.checks)} memory figures: {n['confirmed']} confirmed, {n['differs']} differ, "
        f"{n['reported']} not predicted"
    )
    return out

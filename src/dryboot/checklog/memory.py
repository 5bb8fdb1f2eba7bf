"""vLLM's memory lines in a log, read figure by figure, and compared with dryboot's budget.

The lines (vLLM 0.28.0's templates; 0.27.1-0.33.0 print the same words):

* ``Model loading took W GiB memory and S seconds`` (``v1/worker/gpu_model_runner.py`` l.5516; the
  V2 runner's ``v1/worker/gpu/model_runner.py`` l.381; 0.27.1's V2 runner omits ``memory``);
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

import re
from dataclasses import dataclass
from typing import Any

from dryboot.checklog.parse import LogFacts, LogLine

GIB = 1 << 30
#: Half the last digit vLLM prints (GiB): a logged figure's rounding.
ROUNDING_GIB = 0.005

_NUM = r"-?\d+(?:\.\d+)?"

#: (kind, pattern): each pattern's named groups are GiB figures unless named ``secs`` / ``util``.
PATTERNS: tuple[tuple[str, re.Pattern[str]], ...] = (
    ("model loading", re.compile(rf"Model loading took (?P<weights>{_NUM}) GiB(?: memory)?")),
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

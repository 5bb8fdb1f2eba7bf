"""check-log's memory lines (issue 27 item 6): vLLM's templates read figure by figure, on the
public logs that carry them, and a property test of the readers."""

from __future__ import annotations

import io
from pathlib import Path

from hypothesis import given, settings
from hypothesis import strategies as st

from dryboot.checklog.memory import memory_lines, read_memory_message
from dryboot.checklog.parse import iter_boots, iter_numbered_log_lines, iter_relevant_lines

PUBLIC = Path(__file__).resolve().parents[1] / "data" / "checklog" / "public"


def _boots(name: str) -> list:
    raw = (PUBLIC / name).read_bytes().split(b"\n", 1)[1]
    return list(iter_boots(iter_numbered_log_lines(iter_relevant_lines(io.BytesIO(raw), name))))


def _gib(b: int) -> str:
    """vLLM's ``format_gib``."""
    return f"{round(b / (1 << 30), 2)}"


def test_summary_line_of_a_posted_boot() -> None:
    """club-3090 #1087 (2x RTX 5090): the summary and the graph pool line, every figure."""
    boots = _boots("club3090-1087-qwen38-27b-2x5090-actual-usage.log")
    lines = [m for b in boots for m in memory_lines(b)]
    kinds = [m.kind for m in lines]
    assert kinds.count("free memory") == 2 and kinds.count("actual usage") == 2 and "CUDA graph pool" in kinds
    free = next(m for m in lines if m.kind == "free memory")
    assert free.figures == {"free": "30.27", "total": "31.4", "util": "0.92", "requested": "28.88"}
    usage = next(m for m in lines if m.kind == "actual usage")
    assert usage.figures == {"consumed": "15.03", "activation": "1.59", "cudagraph": "0.09"}
    pool = next(m for m in lines if m.kind == "CUDA graph pool")
    assert pool.figures == {"cudagraph": "0.09", "cudagraph_estimate": "0.13"}


def test_every_public_log_with_memory_lines_reads() -> None:
    """Each public log holding a memory line yields it; 'Available KV cache memory' is read once
    per worker line."""
    found = {}
    for path in sorted(PUBLIC.glob("*.log")):
        text = path.read_text(errors="replace")
        expected = sum(
            text.count(w) for w in ("Model loading took", "Available KV cache memory:", "Estimated CUDA graph memory:")
        )
        if not expected:
            continue
        got = [m for b in _boots(path.name) for m in memory_lines(b)]
        kinds = {m.kind for m in got}
        found[path.name] = kinds
        assert len([m for m in got if m.kind in ("model loading", "available", "estimated CUDA graph")]) == expected, (
            path.name
        )
    assert len(found) >= 8


def test_older_summary_wording() -> None:
    msg = (
        "Free memory on device (78.66/79.19 GiB) on startup. Desired GPU memory utilization is (0.9, 71.27 GiB). "
        "Actual usage is 14.08 GiB for weight, 1.97 GiB for peak activation, 0.07 GiB for non-torch memory, and "
        "0.67 GiB for CUDAGraph memory. Replace gpu_memory_utilization config with `--kv-cache-memory=58333988249` "
        "to fit into requested memory, or `--kv-cache-memory=66273897472` to fully utilize gpu memory. Current kv "
        "cache memory in use is 59212694937 bytes."
    )
    got = {k: f for k, f, _ in read_memory_message(msg)}
    assert got["actual usage (before 0.11)"] == {
        "weights": "14.08",
        "activation": "1.97",
        "non_torch": "0.07",
        "cudagraph": "0.67",
    }
    assert got["free memory"]["total"] == "79.19" and "kv in use" not in got  # bytes, not GiB


_BYTES = st.integers(min_value=0, max_value=1 << 44)


@settings(max_examples=200, deadline=None)
@given(_BYTES, _BYTES, _BYTES, _BYTES, _BYTES, _BYTES, st.sampled_from([0.5, 0.9, 0.92, 0.972]), _BYTES)
def test_summary_template_round_trips(
    free: int, total: int, req: int, c: int, a: int, g: int, u: float, kv: int
) -> None:
    """vLLM 0.28's summary, formatted as ``gpu_worker.py`` formats it, reads back every figure."""
    msg = (
        f"Free memory on device ({_gib(free)}/{_gib(total)} GiB) on startup. Desired GPU memory utilization is "
        f"({u}, {_gib(req)} GiB). Actual usage is {_gib(c)} GiB for consumed memory (weights + non-torch), "
        f"{_gib(a)} GiB for peak activation, and {_gib(g)} GiB for CUDAGraph memory. Replace "
        f"gpu_memory_utilization config with `--kv-cache-memory={req - c}` ({_gib(req - c)} GiB) to fit into "
        f"requested memory, or `--kv-cache-memory={free - c}` ({_gib(free - c)} GiB) to fully utilize gpu memory. "
        f"Current kv cache memory in use is {_gib(kv)} GiB."
    )
    got = {k: f for k, f, _ in read_memory_message(msg)}
    assert got["free memory"] == {"free": _gib(free), "total": _gib(total), "util": str(u), "requested": _gib(req)}
    assert got["actual usage"] == {"consumed": _gib(c), "activation": _gib(a), "cudagraph": _gib(g)}
    assert got["kv in use"] == {"kv": _gib(kv)}


_PIECES = st.sampled_from(
    [
        "Model loading took ", "Available KV cache memory: ", "Estimated CUDA graph memory: ", " GiB", " GiB total",
        "Graph capturing finished in ", " secs, took ", "CUDA graph pool memory: ", " GiB (actual), ",
        " GiB (estimated)", "Free memory on device (", "/", " GiB) on startup. ", "Desired GPU memory utilization is (",
        ", ", "Actual usage is ", " GiB for consumed memory (weights + non-torch), ", " GiB for peak activation, ",
        "and ", " GiB for CUDAGraph memory", "Current kv cache memory in use is ", "0.5", "-1", "12.34", "1e9", "nan",
        "..", " ", "\t", "é",
    ]
)  # fmt: skip


@settings(max_examples=500, deadline=None)
@given(st.lists(_PIECES | st.text(max_size=5), max_size=40).map("".join))
def test_reader_never_raises(text: str) -> None:
    for kind, figures, matched in read_memory_message(text):
        assert matched in text and kind
        for value in figures.values():
            float(value)  # every figure is a number

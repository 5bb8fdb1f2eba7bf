"""The CUDA-graph estimate ``determine_available_memory`` subtracts (``profile_cudagraph_memory``).

V1 runner (0.27.1-0.33, ``v1/worker/gpu_model_runner.py``): for each mode (PIECEWISE, FULL) the
two largest batch descriptors are captured into a profiling pool; the estimate is
``max over modes(first capture) + sum over modes(max(second, 1 MiB) x (n - 1))``, n the mode's
graphs. V2 runner: 0 in 0.27.1/0.28.0 (``v1/worker/gpu/model_runner.py`` returns 0); from 0.29
``v1/worker/gpu/cudagraph_utils.py::profile_cudagraph_memory`` runs ``capture_model`` into a
throwaway pool with PIECEWISE, encoder and speculator graphs captured in full (PIECEWISE first)
and only FULL's two largest sampled, extrapolated as ``first + (n - 1) x max(second, 1 MiB)``: the
later PIECEWISE and speculator graphs are measured (0 .. ``PER_GRAPH_HIGH`` each, no floor).
``--enforce-eager`` (or ``cudagraph_mode`` NONE, ``-O0``): nothing is captured or subtracted.

Capture sizes (``VllmConfig._set_cudagraph_sizes``): ``[1, 2, 4] + range(8, 256, 8) +
range(256, max + 1, 16)`` with ``max = min(max_num_seqs x (1 + num_speculative_tokens) x 2, 512
(1024 on SM 10.x), max_num_batched_tokens)``, plus ``max_num_batched_tokens`` when it is at most
``max``. FULL graphs (FULL_AND_PIECEWISE, the default) cover the uniform decode batches up to
``max_num_seqs x (1 + num_speculative_tokens)``.

The graphs' own bytes are the uncertain part: the first capture holds the pool's working set at
the largest size (modelled as the widest layer at that size, up to every piece's static output
buffer), a later one reuses it (1 MiB floor up to ``PER_GRAPH_HIGH``).
"""

from __future__ import annotations

from typing import NotRequired, TypedDict, Unpack

from dryboot.vllm.versions import version_key
from dryboot.vllm.worker.interval import MIB, Term
from dryboot.vllm.worker.profile_run import ForwardShape, forward_widest

#: a later graph's increment when the pool is reused: vLLM's floor (1 MiB) to this.
PER_GRAPH_HIGH = 2 * MIB
#: the first capture against the working set at the largest size (widest layer plus every
#: piece's static output), in percent (low, high): Qwen3-8B on an RTX A5000 (LMCache #3430)
#: logged 0.52 GiB for 51 + 35 graphs, 95 % of the working set plus 84 MiB.
FIRST_CAPTURE_PCT = (75, 110)
#: what the first capture's free-memory delta also sees besides the pool (low, high): the
#: capture stream's cuBLAS workspace on one GPU; under TP the all-reduce buffers registered for
#: graphs (a 0.27.1 TP 2 boot logged 0.36 GiB for 16 graphs of at most 16 tokens).
CAPTURE_EXTRA = {1: (0, 64 * MIB), 2: (0, 400 * MIB)}


def capture_sizes(
    max_num_seqs: int,
    max_num_batched_tokens: int,
    num_speculative_tokens: int,
    sm: int,
    *,
    given: tuple[int, ...] | None = None,
    max_capture_size: int | None = None,
) -> list[int]:
    """``cudagraph_capture_sizes`` as ``VllmConfig._set_cudagraph_sizes`` sets them (see the
    module text): ``given`` (``cudagraph_capture_sizes``) deduplicated and cut at
    ``max_num_batched_tokens``; else the default list up to ``max_capture_size``
    (``max_cudagraph_capture_size``) or the default maximum, cut the same way."""
    if given is not None:
        return sorted({s for s in given if s <= max_num_batched_tokens})
    default_max = 1024 if sm // 10 == 10 else 512
    top = max_capture_size or min(max_num_seqs * (1 + num_speculative_tokens) * 2, default_max)
    top = min(top, max_num_batched_tokens)
    sizes = [i for i in (1, 2, 4) if i <= top]
    if top >= 8:
        sizes += list(range(8, min(top + 1, 256), 8))
    if top >= 256:
        sizes += list(range(256, top + 1, 16))
    if max_num_batched_tokens <= top:
        sizes.append(max_num_batched_tokens)
    return sorted(set(sizes))


def graph_counts(
    sizes: list[int], max_num_seqs: int, num_speculative_tokens: int, full: bool = True, mode: str | None = None
) -> dict[str, int]:
    """Graphs per runtime mode for ``cudagraph_mode`` ``mode`` (``CUDAGraphMode``):
    FULL_AND_PIECEWISE every size PIECEWISE and the uniform-decode sizes (up to
    ``max_num_seqs x (1 + k)``) FULL; PIECEWISE every size; FULL every size FULL;
    FULL_DECODE_ONLY the uniform-decode sizes FULL; NONE nothing. ``mode=None``: ``full`` picks
    FULL_AND_PIECEWISE or PIECEWISE (the older signature)."""
    if mode is None:
        mode = "FULL_AND_PIECEWISE" if full else "PIECEWISE"
    decode_top = max_num_seqs * (1 + num_speculative_tokens)
    decode = sum(1 for s in sizes if s <= decode_top)
    table = {
        "NONE": {},
        "PIECEWISE": {"PIECEWISE": len(sizes)},
        "FULL": {"FULL": len(sizes)},
        "FULL_DECODE_ONLY": {"FULL": decode},
        "FULL_AND_PIECEWISE": {"PIECEWISE": len(sizes), "FULL": decode},
    }
    return {m: n for m, n in table[mode].items() if n > 0}


def v2_measures(runner: str, release: str) -> bool:
    """The V2 runner's own estimator (``v1/worker/gpu/cudagraph_utils.py``, 0.29+)."""
    return runner == "V2" and version_key(release)[:2] >= (0, 29)


def graph_memory(
    shape: ForwardShape,
    *,
    num_layers: int,
    tp: int,
    max_num_seqs: int,
    max_num_batched_tokens: int,
    num_speculative_tokens: int,
    sm: int,
    mode: str = "FULL_AND_PIECEWISE",
    given_sizes: tuple[int, ...] | None = None,
    max_capture_size: int | None = None,
    v2: bool = False,
    speculator: bool = False,
) -> tuple[int, int, str]:
    """(low, high, how) of the graphs' memory as ``profile_cudagraph_memory`` measures it (and
    as the captured pool roughly takes it): see the module text. ``v2``: the V2 runner's
    estimator of 0.29+ (PIECEWISE and the speculator's graphs captured in full, each later one
    0..``PER_GRAPH_HIGH``; FULL extrapolated from its two largest with the 1 MiB floor; FULL
    captured after PIECEWISE, into the same pool). ``speculator``: a drafter's graphs (V2 only:
    its prefill manager in ``mode``, its decode manager FULL_DECODE_ONLY at 1 token per request)."""
    sizes = capture_sizes(
        max_num_seqs,
        max_num_batched_tokens,
        num_speculative_tokens,
        sm,
        given=given_sizes,
        max_capture_size=max_capture_size,
    )
    counts = graph_counts(sizes, max_num_seqs, num_speculative_tokens, mode=mode)
    if not sizes or not counts:
        return 0, 0, f"cudagraph_mode {mode}: no graph captured"
    largest = sizes[-1]
    b = shape.dtype_bytes
    working = forward_widest(shape, largest, tp)
    working += num_layers * largest * (shape.hidden_size + (shape.q_size + 2 * shape.kv_size) // tp) * b
    extra = CAPTURE_EXTRA[1 if tp == 1 else 2]
    first_lo = working * FIRST_CAPTURE_PCT[0] // 100 + extra[0]
    first_hi = working * FIRST_CAPTURE_PCT[1] // 100 + extra[1]
    desc = ", ".join(f"{m}={n}" for m, n in counts.items())
    first = (
        f"first capture {FIRST_CAPTURE_PCT[0]}-{FIRST_CAPTURE_PCT[1]} % of the widest layer plus every piece's "
        f"output at {largest} tokens ({num_layers} layers) plus 0-{extra[1] // MIB} MiB of capture buffers"
    )
    if not v2:
        later = sum(n - 1 for n in counts.values() if n > 1)
        how = f"{desc} (largest={largest}); {first}, later graphs 1-{PER_GRAPH_HIGH // MIB} MiB each"
        return first_lo + later * MIB, first_hi + later * PER_GRAPH_HIGH, how
    pw, full = counts.get("PIECEWISE", 0), counts.get("FULL", 0)
    # later PIECEWISE graphs, and FULL's first sample (captured after them, into their pool),
    # measured: 0..PER_GRAPH_HIGH each; without PIECEWISE, FULL's first sample is the first capture
    measured = (pw - 1 + (1 if full else 0)) if pw else 0
    floored = max(full - 1, 0)  # FULL past its first sample: max(second sample, 1 MiB) each
    spec = 0
    if speculator:
        # its prefill manager captures what the target's does (``counts``); its decode manager,
        # in a FULL mode, the uniform-decode sizes at one token per request
        spec = sum(counts.values())
        spec += sum(graph_counts(sizes, max_num_seqs, 0, mode="FULL_DECODE_ONLY").values()) if "FULL" in mode else 0
    low = first_lo + floored * MIB
    high = first_hi + (measured + floored + spec) * PER_GRAPH_HIGH
    how = (
        f"{desc} (largest={largest}); V2 estimator: {first}; later PIECEWISE graphs measured, "
        f"0-{PER_GRAPH_HIGH // MIB} MiB "
        f"each; FULL extrapolated from its 2 largest, 1-{PER_GRAPH_HIGH // MIB} MiB per graph"
        + (f"; {spec} speculator graphs measured, 0-{PER_GRAPH_HIGH // MIB} MiB each" if spec else "")
    )
    return low, high, how


class GraphCapture(TypedDict):
    """What the graphs are captured for: :func:`graph_memory`'s keyword arguments but its
    estimator's (``v2``), which :func:`cudagraph_term` takes from the runner and the release."""

    num_layers: int
    tp: int
    max_num_seqs: int
    max_num_batched_tokens: int
    num_speculative_tokens: int
    sm: int
    mode: NotRequired[str]
    given_sizes: NotRequired[tuple[int, ...] | None]
    max_capture_size: NotRequired[int | None]
    speculator: NotRequired[bool]


def cudagraph_term(
    shape: ForwardShape,
    *,
    runner: str,
    release: str,
    enforce_eager: bool,
    estimate_enabled: bool = True,
    **capture: Unpack[GraphCapture],
) -> tuple[Term, tuple[int, int]]:
    """(the ``CUDA graphs`` term: bytes subtracted from the budget, or 0..0 with the reason;
    the graphs' own memory (low, high), captured after the KV cache whether or not it was
    subtracted: what a pinned pool must leave free). ``capture``: :func:`graph_memory`'s
    (``mode``: ``cudagraph_mode`` after ``-O`` and ``--compilation-config``; ``given_sizes`` /
    ``max_capture_size``: its ``cudagraph_capture_sizes`` / ``max_cudagraph_capture_size``;
    ``speculator``: a drafter's graphs are captured, which the V2 estimator of 0.29+ measures)."""
    name = "CUDA graphs (profile_cudagraph_memory estimate)"
    if enforce_eager:
        return Term(name, 0, 0, "--enforce-eager: no graph is captured or estimated"), (0, 0)
    if capture.get("mode", "FULL_AND_PIECEWISE") == "NONE":
        return Term(name, 0, 0, "cudagraph_mode NONE (-O0 or --compilation-config): no graph is captured"), (0, 0)
    v2 = v2_measures(runner, release)
    capture["speculator"] = capture.get("speculator", False) and v2  # (its own copy of the arguments)
    low, high, how = graph_memory(shape, **capture, v2=v2)
    gib = 1 << 30
    beyond = (
        f"; the graphs themselves ({low / gib:.2f}-{high / gib:.2f} GiB) are captured after the KV cache, outside it"
    )
    if not estimate_enabled:
        return Term(
            name, 0, 0, "VLLM_MEMORY_PROFILER_ESTIMATE_CUDAGRAPHS=0: the estimate is not subtracted" + beyond
        ), (low, high)
    if runner == "V2" and release in ("0.27.1", "0.28.0"):
        return Term(name, 0, 0, f"V2 model runner in vLLM {release}: profile_cudagraph_memory returns 0" + beyond), (
            low,
            high,
        )
    src = f"{runner} runner, vLLM {release}: {how}"
    return Term(name, low, high, src, estimate=(low + high) // 2), (low, high)

"""The CUDA-graph estimate ``determine_available_memory`` subtracts (``profile_cudagraph_memory``).

V1 runner (0.27.1-0.33, ``v1/worker/gpu_model_runner.py``): for each mode (PIECEWISE, FULL) the
two largest batch descriptors are captured into a profiling pool; the estimate is
``max over modes(first capture) + sum over modes(max(second, 1 MiB) x (n - 1))``, n the mode's
graphs. V2 runner: 0 in 0.27.1/0.28.0 (``v1/worker/gpu/model_runner.py`` returns 0); from 0.29
``v1/worker/gpu/cudagraph_utils.py`` measures PIECEWISE graphs and extrapolates FULL ones from
the two largest, modelled here with the same form. ``--enforce-eager`` (or
``cudagraph_mode=NONE``): nothing is captured or subtracted.

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


def capture_sizes(max_num_seqs: int, max_num_batched_tokens: int, num_speculative_tokens: int, sm: int) -> list[int]:
    """``cudagraph_capture_sizes`` as ``VllmConfig`` sets them by default (see the module text)."""
    default_max = 1024 if sm // 10 == 10 else 512
    top = min(max_num_seqs * (1 + num_speculative_tokens) * 2, default_max, max_num_batched_tokens)
    sizes = [i for i in (1, 2, 4) if i <= top]
    if top >= 8:
        sizes += list(range(8, min(top + 1, 256), 8))
    if top >= 256:
        sizes += list(range(256, top + 1, 16))
    if max_num_batched_tokens <= top:
        sizes.append(max_num_batched_tokens)
    return sorted(set(sizes))


def graph_counts(sizes: list[int], max_num_seqs: int, num_speculative_tokens: int, full: bool) -> dict[str, int]:
    """Graphs per mode: every size PIECEWISE; the uniform-decode sizes FULL (when ``full``)."""
    out = {"PIECEWISE": len(sizes)}
    if full:
        decode_top = max_num_seqs * (1 + num_speculative_tokens)
        out["FULL"] = sum(1 for s in sizes if s <= decode_top)
    return out


def graph_memory(
    shape: ForwardShape,
    *,
    num_layers: int,
    tp: int,
    max_num_seqs: int,
    max_num_batched_tokens: int,
    num_speculative_tokens: int,
    sm: int,
) -> tuple[int, int, str]:
    """(low, high, how) of the graphs' memory as ``profile_cudagraph_memory`` measures it (and
    as the captured pool roughly takes it): see the module text."""
    sizes = capture_sizes(max_num_seqs, max_num_batched_tokens, num_speculative_tokens, sm)
    counts = graph_counts(sizes, max_num_seqs, num_speculative_tokens, full=True)
    largest = sizes[-1]
    b = shape.dtype_bytes
    working = forward_widest(shape, largest, tp)
    working += num_layers * largest * (shape.hidden_size + (shape.q_size + 2 * shape.kv_size) // tp) * b
    extra = CAPTURE_EXTRA[1 if tp == 1 else 2]
    first_lo = working * FIRST_CAPTURE_PCT[0] // 100 + extra[0]
    first_hi = working * FIRST_CAPTURE_PCT[1] // 100 + extra[1]
    later = sum(n - 1 for n in counts.values() if n > 1)
    desc = ", ".join(f"{m}={n}" for m, n in counts.items())
    how = (
        f"{desc} (largest={largest}); first capture {FIRST_CAPTURE_PCT[0]}-{FIRST_CAPTURE_PCT[1]} % of the widest "
        f"layer plus every piece's output at {largest} tokens ({num_layers} layers) plus 0-{extra[1] // MIB} MiB of "
        f"capture buffers, later graphs 1-{PER_GRAPH_HIGH // MIB} MiB each"
    )
    return first_lo + later * MIB, first_hi + later * PER_GRAPH_HIGH, how


def cudagraph_term(
    shape: ForwardShape,
    *,
    num_layers: int,
    tp: int,
    max_num_seqs: int,
    max_num_batched_tokens: int,
    num_speculative_tokens: int,
    sm: int,
    runner: str,
    release: str,
    enforce_eager: bool,
    estimate_enabled: bool = True,
) -> tuple[Term, tuple[int, int]]:
    """(the ``CUDA graphs`` term: bytes subtracted from the budget, or 0..0 with the reason;
    the graphs' own memory (low, high), captured after the KV cache whether or not it was
    subtracted: what a pinned pool must leave free)."""
    name = "CUDA graphs (profile_cudagraph_memory estimate)"
    if enforce_eager:
        return Term(name, 0, 0, "--enforce-eager: no graph is captured or estimated"), (0, 0)
    low, high, how = graph_memory(
        shape,
        num_layers=num_layers,
        tp=tp,
        max_num_seqs=max_num_seqs,
        max_num_batched_tokens=max_num_batched_tokens,
        num_speculative_tokens=num_speculative_tokens,
        sm=sm,
    )
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

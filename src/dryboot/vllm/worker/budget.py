"""vLLM's KV budget predicted offline: ``Worker.determine_available_memory``
(0.28 ``v1/worker/gpu_worker.py`` l.475; 0.29 l.513; 0.30 l.528; 0.31 l.571; 0.32 l.634; 0.33 l.641)
with ``request_memory`` (``v1/worker/utils.py``) and ``memory_profiling`` (``utils/mem_utils.py``).

``available = ceil(total x util) - (weights + non-torch + persistent) - transient peak - CUDA-graph
estimate``; the first is exact from the GPU's CUDA total, the weights come from
:func:`dryboot.vllm.model_executor.model_loader.loader.model_weights`, every other term is an
interval (:mod:`.profile_run`, :mod:`.cudagraph`, :mod:`.non_torch`). Method: route (b), a per-layer
model read from vLLM's forward code (:data:`METHOD`).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from dryboot.errors import InputError
from dryboot.vllm.config.compilation import compilation_settings
from dryboot.vllm.config.hf import ModelGeometry
from dryboot.vllm.config.mm_encoder_tp import PROFILED_DATA_TOWERS, support
from dryboot.vllm.engine_args import EngineArgs
from dryboot.vllm.gpus import GPU
from dryboot.vllm.versions import VersionRules
from dryboot.vllm.worker.cudagraph import cudagraph_term
from dryboot.vllm.worker.interval import GIB, MIB, Interval, Term, term_sum
from dryboot.vllm.worker.non_torch import non_torch_terms
from dryboot.vllm.worker.profile_run import ForwardShape, activation_terms, encoder_profiled
from dryboot.vllm.worker.utils import request_memory

__all__ = [
    "METHOD",
    "Budget",
    "Interval",
    "KvEstimate",
    "StartupGate",
    "Term",
    "Verdict",
    "budget_verdict",
    "estimate_budget",
    "free_memory",
    "load_verdict",
    "request_memory",
    "safe_kv_cache_memory_bytes",
    "startup_gate",
]

METHOD = (
    "route b: vLLM's determine_available_memory with each term modelled from its code (weights exact; "
    "profile-run transient = max(widest decoder layer at max_num_batched_tokens, sampler logits); "
    "CUDA-graph estimate from the capture sizes; non-torch from posted boots), every term an interval"
)

#: ``compile_cache`` values: the torch.compile cache a boot finds.
COMPILE_CACHES = ("unknown", "warm", "cold")

#: The margin :func:`safe_kv_cache_memory_bytes` leaves free by default (bytes).
DEFAULT_MARGIN_BYTES = 512 * MIB

#: CUDA context and NCCL communicators on the device before ``init_snapshot`` (low, high): what
#: the startup gate's free memory lacks on an otherwise idle GPU.
CONTEXT_BYTES = (300 * MIB, 900 * MIB)
TP_CONTEXT_BYTES = 400 * MIB


#: ``Model loading took`` (``DeviceMemoryProfiler``: torch's allocated bytes after the load less
#: before it) is ``RankWeights.loaded_bytes`` at every TP size: the parameters and buffers with the
#: caching allocator's unsplit segments under ``max_split_size_mb`` 20. No residual under TP is
#: kept: the two boots that once read above it are explained, Qwen3-32B at TP 2 by the segments
#: (64 x 1 MiB of ``down_proj``: 30.5855 GiB, 30.59 logged) and Qwen3-235B-A22B-Instruct-2507-FP8
#: at TP 4 by its rotary table (262,144 positions against the stand-in config's 40,960: the
#: replicated ``cos_sin_cache`` buffer is 54 MiB larger per rank in bf16: 55.1872, 55.19 logged).

#: an empty term (no bytes)
NO_BYTES = Interval(0, 0)


@dataclass(frozen=True)
class KvEstimate:
    """vLLM's ``Available KV cache memory`` (bytes): ``low <= estimate <= high``."""

    low: int
    estimate: int
    high: int

    def to_dict(self) -> dict[str, int]:
        return {"low": self.low, "estimate": self.estimate, "high": self.high}


@dataclass(frozen=True)
class StartupGate:
    """``request_memory``'s check: the free memory at ``init_snapshot`` against ``requested``.

    :param free_bytes: the free memory assumed on an idle GPU (CUDA total minus the CUDA context
        and NCCL, as an interval).
    :param passes: ``True`` (even at the low free figure), ``False`` (not even at the high), or
        ``None`` (between: depends on the context's size and other processes).
    """

    free_bytes: Interval
    requested_bytes: int
    passes: bool | None
    line: str

    def to_dict(self) -> dict[str, Any]:
        return {
            "free_bytes": self.free_bytes.to_dict(),
            "requested_bytes": self.requested_bytes,
            "passes": self.passes,
            "line": self.line,
        }


@dataclass(frozen=True)
class Verdict:
    """``fits`` (one full-length request fits at the low bound), ``tight`` (only above low),
    ``won't`` (not even at the high bound, or the model cannot load), ``undetermined`` (the
    budget could not be estimated: ``reason`` says why). ``request_bytes``: one ``max_model_len``
    request (``None`` where not computed). ``fails_in``: for a ``won't`` decided before the KV
    sizing, the vLLM function that fails (``load_model``, ``initialize_kv_cache``), else ``""``."""

    word: str
    request_bytes: int | None
    reason: str
    fails_in: str = ""

    def to_dict(self) -> dict[str, Any]:
        out: dict[str, Any] = {"word": self.word, "request_bytes": self.request_bytes, "reason": self.reason}
        if self.fails_in:
            out["fails_in"] = self.fails_in
        return out


@dataclass(frozen=True)
class Budget:
    """The KV budget vLLM would compute, term by term (bytes). ``to_dict`` gives ``--json``'s
    ``budget``."""

    gpu_total_bytes: int
    gpu_memory_utilization: float
    requested_bytes: int
    weights_bytes: int
    activation_bytes: Interval
    cuda_graph_bytes: Interval
    non_torch_bytes: Interval
    available_kv_cache_bytes: KvEstimate
    method: str
    terms: tuple[Term, ...]
    startup_gate: StartupGate
    cuda_graph_pool_bytes: Interval = NO_BYTES
    release: str = ""
    runner: str = "V1"
    notes: tuple[str, ...] = field(default=())
    gpu_total_source: str = ""

    @property
    def non_kv_bytes(self) -> Interval:
        """vLLM's ``non_kv_cache_memory + cudagraph estimate`` (``--non-kv-memory``'s meaning)."""
        kv = self.available_kv_cache_bytes
        return Interval(self.requested_bytes - kv.high, self.requested_bytes - kv.low)

    def log_line(self) -> str:
        """vLLM's line at the estimate: ``Available KV cache memory: X GiB``."""
        return f"Available KV cache memory: {self.available_kv_cache_bytes.estimate / GIB:.2f} GiB"

    def to_dict(self, verdict: Verdict | None = None, safe_bytes: int | None = None) -> dict[str, Any]:
        out: dict[str, Any] = {
            "gpu_total_bytes": self.gpu_total_bytes,
            "requested_bytes": self.requested_bytes,
            "weights_bytes": self.weights_bytes,
            "activation_bytes": self.activation_bytes.to_dict(),
            "cuda_graph_bytes": self.cuda_graph_bytes.to_dict(),
            "non_torch_bytes": self.non_torch_bytes.to_dict(),
            "available_kv_cache_bytes": self.available_kv_cache_bytes.to_dict(),
            "method": self.method,
            "gpu_memory_utilization": self.gpu_memory_utilization,
            "release": self.release,
            "runner": self.runner,
            "terms": [t.to_dict() for t in self.terms],
            "gpu_total_source": self.gpu_total_source,
            "startup_gate": self.startup_gate.to_dict(),
            "cuda_graph_pool_bytes": self.cuda_graph_pool_bytes.to_dict(),
            "notes": list(self.notes),
        }
        if verdict is not None:
            out["verdict"] = verdict.to_dict()
        if safe_bytes is not None:
            out["safe_kv_cache_memory_bytes"] = safe_bytes
        return out


#: speculative methods without a drafter model (no speculator graphs): ngram, suffix.
MODEL_FREE_METHODS = (None, "ngram", "ngram_gpu", "suffix")


def _g(n: int) -> str:
    return f"{n / GIB:.2f}"


def _gu(n: int) -> str:
    """``n`` bytes in GiB with 2 decimals; in MiB when that would print 0.00 GiB."""
    if 0 < abs(n) < GIB // 200:
        return f"{n / MIB:.2f} MiB"
    return f"{n / GIB:.2f} GiB"


def _gu_apart(n: int, bound: int) -> tuple[str, str]:
    """``n`` and ``bound`` as :func:`_gu` prints them, in bytes when two different figures
    would print the same ("needs 5.62 GiB, above ... 5.62 GiB")."""
    a, b = _gu(n), _gu(bound)
    return (f"{n:,} B", f"{bound:,} B") if a == b and n != bound else (a, b)


def free_memory(gpu: GPU, total_bytes: int, tp: int, pp: int) -> Interval:
    """The free memory of an otherwise idle GPU at vLLM's ``init_snapshot`` (bytes): the CUDA
    total less the CUDA context (and NCCL under TP/PP; GB10: psutil's free memory, 2 GiB less; the
    host's own share, ``GPU.host_reserved_bytes``: the Windows desktop under WSL2)."""
    extra = TP_CONTEXT_BYTES if tp * pp > 1 else 0
    host_lo, host_hi = gpu.host_reserved_bytes  # the Windows desktop under WSL2
    free = Interval(total_bytes - CONTEXT_BYTES[1] - extra - host_hi, total_bytes - CONTEXT_BYTES[0] - host_lo)
    if gpu.capability == (12, 1):
        free = Interval(free.low - 2 * GIB, free.high)  # GB10: unified memory, psutil's free memory
    return free


def load_verdict(
    weights_bytes: int,
    *,
    total_bytes: int,
    requested_bytes: int,
    free: Interval,
    kv_cache_memory_bytes: int | None = None,
) -> Verdict | None:
    """``won't`` when one rank's weights cannot leave room for a KV cache on the named GPU, with
    what vLLM does (0.28 ``Worker``: ``init_device``'s startup gate, then ``load_model``, then
    ``determine_available_memory``, then ``initialize_kv_cache``); ``None`` otherwise.

    - weights above the free memory at the snapshot (``free.high``: the total less the smallest
      CUDA context): ``load_model`` allocates them on the device and fails with
      ``torch.OutOfMemoryError: CUDA out of memory``; nothing about the KV cache is logged
      (``fails_in="load_model"``);
    - without a pinned pool, weights above ``requested_bytes`` (``ceil(total x util)``) but within
      the free memory: vLLM loads them, profiles, logs a negative ``Available KV cache memory``
      and raises ``No available memory for the cache blocks`` (``fails_in=""``: the KV sizing);
    - with ``--kv-cache-memory-bytes`` (vLLM skips the budget and ignores the utilization):
      weights plus the pinned pool above ``free.high``: ``initialize_kv_cache`` runs out of CUDA
      memory allocating the pool (``fails_in="initialize_kv_cache"``).

    Bytes throughout; ``free`` from :func:`free_memory`.
    """
    w, t = _gu(weights_bytes), _gu(total_bytes)
    room = f"the GPU's {t} (about {_g(free.low)}-{_gu(free.high)} free after the CUDA context)"
    if weights_bytes > free.high:
        exceeded = f"the requested {_gu(requested_bytes)} and {room}"
        if kv_cache_memory_bytes is not None:
            exceeded = room
        return Verdict(
            "won't",
            None,
            f"weights {w} per rank exceed {exceeded}: vLLM fails loading the model (load_model: "
            "torch.OutOfMemoryError: CUDA out of memory), before any KV sizing",
            "load_model",
        )
    if kv_cache_memory_bytes is not None:
        if weights_bytes + kv_cache_memory_bytes > free.high:
            return Verdict(
                "won't",
                None,
                f"weights {w} per rank plus the pinned pool {_gu(kv_cache_memory_bytes)} exceed {room}: vLLM loads "
                "the weights, skips the budget (the pool is pinned) and runs out of CUDA memory allocating the KV "
                "cache (initialize_kv_cache: torch.OutOfMemoryError), if not already in the profile run",
                "initialize_kv_cache",
            )
        return None
    if weights_bytes > requested_bytes:
        return Verdict(
            "won't",
            None,
            f"weights {w} per rank exceed the requested {_gu(requested_bytes)} (ceil(total x "
            f"gpu_memory_utilization)): vLLM loads them (they fit {room}), then logs a negative Available KV "
            "cache memory and raises 'No available memory for the cache blocks' (or runs out of memory in the "
            "profile run); raise --gpu-memory-utilization or shard the weights (--tensor-parallel-size)",
        )
    return None


def startup_gate(gpu: GPU, total_bytes: int, requested: int, tp: int, pp: int) -> StartupGate:
    """The startup free-memory gate on an otherwise idle GPU (see :class:`StartupGate`)."""
    free = free_memory(gpu, total_bytes, tp, pp)
    passes = True if free.low >= requested else False if free.high < requested else None
    if passes is False:
        line = (
            f"won't start: free memory on an idle device (about {_g(free.low)}-{_g(free.high)}/{_g(total_bytes)} GiB) "
            f"is less than the requested {_g(requested)} GiB (vLLM: 'Free memory on device ... is less than desired "
            "GPU memory utilization'); lower --gpu-memory-utilization"
        )
    elif passes is None:
        line = (
            f"may not start: requested {_g(requested)} GiB is within the CUDA context's "
            + ("(and the host's own share's) " if gpu.host_reserved_bytes[1] else "")
            + "size of the free memory "
            f"(about {_g(free.low)}-{_g(free.high)} GiB of {_g(total_bytes)}); any other process on the GPU refuses it"
        )
    else:
        line = (
            f"passes: requested {_g(requested)} GiB below the free memory of an idle GPU "
            f"(about {_g(free.low)} GiB or more)"
        )
    return StartupGate(free, requested, passes, line)


def estimate_budget(
    model: ModelGeometry,
    args: EngineArgs,
    *,
    weights_bytes: int,
    gpu: GPU,
    rules: VersionRules,
    drafter: Any = None,
    shape: ForwardShape | None = None,
    drafter_shape: ForwardShape | None = None,
    backend: str = "FLASH_ATTN",
    runner: str | None = None,
    compile_cache: str = "unknown",
    pp_rank: int = 0,
    language_model_only: bool = False,
    drafter_weights: tuple[int, int, str] | None = None,
) -> Budget:
    """vLLM's ``Available KV cache memory`` for ``model`` under ``args`` on ``gpu`` (one rank;
    pipeline stage 0's weights), as an interval with every term. Pure.

    :param weights_bytes: the rank's weights (``WeightsReport.stages[i].loaded_bytes``).
    :param shape: the forward's widths (:func:`~dryboot.vllm.worker.profile_run.forward_shape`).
    :param backend: the attention backend's name (a FlashInfer one adds its workspace).
    :param runner: ``V1`` / ``V2`` (``None``: ``uses_v2_model_runner``).
    :param compile_cache: ``warm`` | ``cold`` | ``unknown``: a cold or unknown torch.compile cache
        adds inductor's work to the high bound.
    :param pp_rank: the pipeline stage whose rank this is (the last runs the sampler).
    :param language_model_only: vLLM's ``--language-model-only`` (also read from
        ``args.language_model_only``, with ``args.limit_mm_per_prompt`` and
        ``args.skip_mm_profiling``): the encoder is not profiled (and its weights are not loaded:
        pass them so; :func:`~dryboot.vllm.worker.profile_run.encoder_profiled`).
    :param drafter_weights: the drafter's own weights on this rank (low, high allocated bytes, and
        how they were decided; ``models.llama_eagle3.drafter_weights``): vLLM loads the drafter
        inside the same ``Model loading took`` measurement, on the last pipeline stage only.
    :raises InputError: a term that cannot be bounded (named).
    """
    if shape is None:
        raise InputError("activation", None, "cannot bound the profile run: the model's forward widths are unknown")
    if compile_cache not in COMPILE_CACHES:
        raise InputError("--compile-cache", compile_cache, f"must be one of {', '.join(COMPILE_CACHES)}")
    if runner not in (None, "V1", "V2"):
        raise InputError("runner", str(runner), "must be V1 or V2")
    if runner is None:
        from dryboot.vllm.config.resolve import uses_v2_model_runner  # at call: resolve loads the model families

        runner = "V2" if uses_v2_model_runner(model, args, drafter, rules) else "V1"
    total = args.gpu_memory_bytes or gpu.cuda_total_bytes
    source = (
        "--gpu-memory (overrides the GPU table)"
        if args.gpu_memory_bytes
        else f"the GPU table's {gpu.name}" + (" (a specification placeholder)" if gpu.approximate else "")
    )
    requested = request_memory(total, args.gpu_memory_utilization)
    tp, pp = args.tensor_parallel_size, args.pipeline_parallel_size
    mnbt = args.resolved_max_num_batched_tokens()
    seqs = args.resolved_max_num_seqs()
    eager = bool(getattr(args, "enforce_eager", False))
    comp = compilation_settings(args.optimization_level, args.compilation_config)
    lmo = language_model_only or args.language_model_only
    mm_inputs = encoder_profiled(shape, language_model_only=lmo, limit_mm_per_prompt=args.mm_limits)
    if comp.mm_encoder and mm_inputs:
        raise InputError(
            "CUDA graphs",
            "encoder graphs (cudagraph_mm_encoder)",
            "the multimodal encoder's graphs are captured and measured too, and dryboot does not bound them",
        )
    data_mode = args.mm_encoder_tp_mode == "data" and support(model.architecture, rules.version) != "fallback"
    profiled_data = data_mode and model.architecture in PROFILED_DATA_TOWERS
    if data_mode and not profiled_data and mm_inputs and not args.skip_mm_profiling:
        raise InputError(
            "activation",
            "multimodal encoder profiling",
            f"--mm-encoder-tp-mode data: {model.architecture}'s tower runs data-parallel (the profile's dummy items "
            "split over the TP ranks, each rank's share through the whole tower beside a copy of its input, even at "
            "TP 1), and dryboot bounds that encoder only as weights mode runs it (bounded in data mode: "
            + ", ".join(sorted(PROFILED_DATA_TOWERS))
            + "); --skip-mm-profiling or --mm-encoder-tp-mode weights",
        )
    act = activation_terms(
        shape,
        max_num_batched_tokens=mnbt,
        max_num_seqs=seqs,
        tp=tp,
        compiled=not eager and comp.compiled,
        compile_cache=compile_cache,
        drafter=drafter_shape,
        speculative=bool(args.speculative_method or args.num_speculative_tokens),
        runner=runner,
        last_stage=pp_rank == args.pipeline_parallel_size - 1,
        release=rules.version,
        encoder_profiled=mm_inputs and not args.skip_mm_profiling,
        drafter_pass=bool(args.num_speculative_tokens) and args.speculative_method not in MODEL_FREE_METHODS,
        max_model_len=(args.max_model_len if args.max_model_len and args.max_model_len > 0 else 0)
        or model.max_len.derived(rules.yarn_max_len_prescaled)
        or 0,
        mm_limits=args.mm_limits,
        first_stage=pp_rank == 0,
        encoder_data_parallel=profiled_data,
    )
    if drafter is not None and drafter_shape is None:
        hidden = getattr(getattr(drafter, "model", None), "hidden_size", 0)
        if hidden > shape.hidden_size:
            raise InputError(
                "activation",
                "drafter forward",
                f"the drafter is wider than the target (hidden_size {hidden} > {shape.hidden_size}): its forward "
                "at max_num_batched_tokens is not bounded by the target's",
            )
    layers = max(1, -(-model.num_decoder_layers // pp))
    cg, pool = cudagraph_term(
        shape,
        num_layers=layers,
        tp=tp,
        max_num_seqs=seqs,
        max_num_batched_tokens=mnbt,
        num_speculative_tokens=args.num_speculative_tokens,
        sm=gpu.sm,
        runner=runner,
        release=rules.version,
        enforce_eager=eager,
        mode=comp.cudagraph_mode,
        given_sizes=comp.capture_sizes,
        max_capture_size=comp.max_capture_size,
        speculator=bool(args.num_speculative_tokens) and args.speculative_method not in MODEL_FREE_METHODS,
    )
    nt = non_torch_terms(
        tp=tp,
        pp=pp,
        backend=backend,
        max_num_batched_tokens=mnbt,
        hidden_size=shape.hidden_size,
        dtype_bytes=shape.dtype_bytes,
    )
    weights = Term(
        "weights", weights_bytes, weights_bytes, "Model loading took (model_weights: the checkpoint's per-rank bytes)"
    )
    if drafter_weights is not None and pp_rank == pp - 1:
        d_low, d_high, d_how = drafter_weights
        nt.append(
            Term("weights: the drafter's own", d_low, d_high, f"Model loading took, the proposer's load_model: {d_how}")
        )
    terms = (weights, *act, cg, *nt)
    a_iv, a_est = term_sum(act)
    n_iv, n_est = term_sum(nt)
    base = requested - weights_bytes
    kv = KvEstimate(
        base - a_iv.high - cg.high - n_iv.high,
        base - a_est - cg.point - n_est,
        base - a_iv.low - cg.low - n_iv.low,
    )
    notes = []
    if gpu.approximate:
        notes.append(f"{gpu.name}: the CUDA total is the specification's, not a posted cudaMemGetInfo figure")
    if comp.unread:
        notes.append(
            f"--compilation-config keys not read by the budget: {', '.join(comp.unread)} (they may change the "
            "profile run's peak and the graphs)"
        )
    if pp > 1:
        notes.append(f"pipeline parallelism: stage {pp_rank}'s rank (its weights, a share of the layers)")
    return Budget(
        gpu_total_bytes=total,
        gpu_memory_utilization=args.gpu_memory_utilization,
        requested_bytes=requested,
        weights_bytes=weights_bytes,
        activation_bytes=a_iv,
        cuda_graph_bytes=cg.interval,
        non_torch_bytes=n_iv,
        available_kv_cache_bytes=kv,
        method=METHOD,
        terms=terms,
        startup_gate=startup_gate(gpu, total, requested, tp, pp),
        cuda_graph_pool_bytes=Interval(*pool),
        release=rules.version,
        runner=runner,
        notes=tuple(notes),
        gpu_total_source=source,
    )


def budget_verdict(budget: Budget, request_bytes: int) -> Verdict:
    """The three-way verdict for one full-length request of ``request_bytes`` (the plan's
    ``Capacity.request_bytes``), with vLLM's startup gate first: a failing gate is ``won't``, an
    uncertain one (the requested share within the CUDA context's size of the total) at best
    ``tight``."""
    kv = budget.available_kv_cache_bytes
    if budget.startup_gate.passes is False:
        return Verdict("won't", request_bytes, budget.startup_gate.line)
    if kv.high < request_bytes:
        need, high = _gu_apart(request_bytes, kv.high)
        return Verdict("won't", request_bytes, f"one request needs {need}, above even the high bound {high}")
    if kv.low >= request_bytes and budget.startup_gate.passes is None:
        return Verdict(
            "tight",
            request_bytes,
            f"one request needs {_gu(request_bytes)}, within the low bound {_gu(kv.low)}, but the startup gate "
            f"{budget.startup_gate.line}",
        )
    if kv.low >= request_bytes:
        return Verdict(
            "fits", request_bytes, f"one request needs {_gu(request_bytes)}, within the low bound {_gu(kv.low)}"
        )
    return Verdict(
        "tight",
        request_bytes,
        "one request needs {}: fits only above the low bound {}".format(*_gu_apart(request_bytes, kv.low))
        + f" (up to {_gu(kv.high)})",
    )


def safe_kv_cache_memory_bytes(budget: Budget, margin: int = DEFAULT_MARGIN_BYTES) -> int:
    """The ``--kv-cache-memory-bytes`` that leaves the weights, the high bounds of the activation,
    the graphs and the non-torch memory, and ``margin`` free within ``requested`` (what the
    reference deployment computed by hand). The graphs count with their own memory even where
    vLLM subtracts no estimate (0.27.1/0.28.0's V2 runner: captured on top of the pool). Never
    below 0."""
    graphs = max(budget.cuda_graph_bytes.high, budget.cuda_graph_pool_bytes.high)
    used = budget.weights_bytes + budget.activation_bytes.high + graphs + budget.non_torch_bytes.high
    return max(0, budget.requested_bytes - used - margin)

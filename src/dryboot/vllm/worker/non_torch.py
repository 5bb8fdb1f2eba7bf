"""Memory vLLM's profile counts as consumed besides the weights and the transient peak
(``total_consumed = init free - after-profile free`` in ``memory_profiling``): what appears on the
device after ``Worker.init_device``'s snapshot.

The snapshot is taken after ``init_worker_distributed_environment`` (0.28 ``gpu_worker.py``), so
the CUDA context and NCCL's communicators are *not* in the budget; what is: kernel modules loaded
lazily by the first forward (``CUDA_MODULE_LOADING=LAZY``), cuBLAS/cuBLASLt workspaces, the
attention backend's workspace (FlashInfer's 394 MiB buffer, ``envs.VLLM_FLASHINFER_WORKSPACE_BUFFER_SIZE``
in 0.28 ``v1/attention/backends/flashinfer.py``), the runner's persistent input buffers
(``GPUModelRunner.__init__``: ids, positions, slot mappings over ``max_num_batched_tokens``),
custom all-reduce's registered graph buffers and NCCL's lazily grown buffers under TP.
"""

from __future__ import annotations

from dryboot.vllm.worker.interval import MIB, Term

#: kernel modules, cuBLAS/cuBLASLt workspaces and allocator slack after the first forward on one
#: GPU (low, estimate, high), MiB: LMCache #3430 (Qwen3-8B, RTX A5000, 0.21) leaves about 0.3 GiB
#: beside the sampler and the graphs; a 0.15.1 A100 boot (Llama-3.1-8B, eager) about 0.7 GiB.
CONTEXT_GROWTH_MIB = (150, 350, 700)
#: FlashInfer's workspace buffer (``VLLM_FLASHINFER_WORKSPACE_BUFFER_SIZE``, 394 MiB in 0.28).
FLASHINFER_WORKSPACE_MIB = 394
#: TP 2 (or PP alone): NCCL buffers grown by the first collectives and custom all-reduce's buffers
#: (low, high), MiB.
TP_COMMUNICATION_MIB = (0, 400)
#: TP 4 and more (low, high), MiB: two posted TP 4 boots of Qwen3-235B-A22B-FP8 show 1.70 GiB of
#: non-torch memory (0.27.1 on 4x RTX PRO 6000 Blackwell Server Edition over PCIe, summary line:
#: consumed 56.89 less the 55.19 logged weights, which are the weights: the Instruct-2507
#: checkpoint's 262,144-position rotary table included) and 2.04 GiB (0.10 on 4x H100, its DEBUG
#: profiling line): after the kernels' 150-700 MiB and the runner's buffers, 0.8-1.4 GiB of
#: communication buffers (the sums of the three terms, 1.0-2.2 GiB, hold both).
TP4_COMMUNICATION_MIB = (850, 1400)
#: bytes per batched token of the runner's persistent buffers (ids, positions, slot mappings,
#: query start locations, the sampler's per-token tensors), int32/int64 each.
PERSISTENT_BYTES_PER_TOKEN = (48, 96)


def non_torch_terms(
    *, tp: int, pp: int, backend: str, max_num_batched_tokens: int, hidden_size: int, dtype_bytes: int
) -> list[Term]:
    """The terms of this module (each an interval with its source)."""
    terms = [
        Term(
            "non-torch: CUDA modules and cuBLAS workspaces",
            CONTEXT_GROWTH_MIB[0] * MIB,
            CONTEXT_GROWTH_MIB[2] * MIB,
            "lazily loaded kernel modules and cuBLAS/cuBLASLt workspaces after the init snapshot "
            f"({CONTEXT_GROWTH_MIB[0]}-{CONTEXT_GROWTH_MIB[2]} MiB, estimate {CONTEXT_GROWTH_MIB[1]}, from posted "
            "boots)",
            estimate=CONTEXT_GROWTH_MIB[1] * MIB,
        )
    ]
    if "FLASHINFER" in backend.upper():
        w = FLASHINFER_WORKSPACE_MIB * MIB
        terms.append(Term("non-torch: FlashInfer workspace", w, w, "VLLM_FLASHINFER_WORKSPACE_BUFFER_SIZE (394 MiB)"))
    if tp > 1 or pp > 1:
        lo, hi = TP4_COMMUNICATION_MIB if tp >= 4 else TP_COMMUNICATION_MIB
        terms.append(
            Term(
                "non-torch: NCCL / custom all-reduce",
                lo * MIB,
                hi * MIB,
                f"TP {tp} x PP {pp}: NCCL buffers grown by the first collectives, custom all-reduce buffers "
                f"({lo}-{hi} MiB; the communicators themselves predate the snapshot; "
                + ("two posted TP 4 boots: 1.70 and 2.04 GiB of non-torch memory in all)" if tp >= 4 else "TP 2)"),
            )
        )
    per_tok = (PERSISTENT_BYTES_PER_TOKEN[0], PERSISTENT_BYTES_PER_TOKEN[1] + 2 * hidden_size * dtype_bytes)
    terms.append(
        Term(
            "persistent: runner buffers",
            max_num_batched_tokens * per_tok[0],
            max_num_batched_tokens * per_tok[1],
            f"GPUModelRunner's input buffers over {max_num_batched_tokens} tokens (ids, positions, slot "
            "mappings; up to hidden-sized buffers)",
        )
    )
    return terms

"""vLLM's ``vllm/v1/worker/utils.py``: the share of the GPU that ``--gpu-memory-utilization`` requests."""

from __future__ import annotations

import math


def request_memory(total_bytes: int, gpu_memory_utilization: float) -> int:
    """``request_memory``: the bytes vLLM requests, ``ceil(total_bytes x gpu_memory_utilization)``.

    :param total_bytes: the GPU's CUDA total (``torch.cuda.mem_get_info``'s second figure), bytes.
    :param gpu_memory_utilization: ``--gpu-memory-utilization``, a float in (0, 1].
    :returns: bytes, rounded up as vLLM's ``math.ceil`` of the float product rounds (not to nearest:
        ``ceil(25426206392 x 0.85)`` is 21612275434, where rounding
        to nearest gives 21612275433).

    The one home of this formula: :meth:`dryboot.vllm.engine_args.EngineArgs.available_kv_bytes`
    and :func:`dryboot.vllm.worker.budget.estimate_budget` both call it.
    """
    return math.ceil(total_bytes * gpu_memory_utilization)

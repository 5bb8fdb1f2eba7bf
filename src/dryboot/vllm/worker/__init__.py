"""vLLM's worker-side memory budget (``vllm/v1/worker/``): what ``Worker.determine_available_memory``
subtracts from ``--gpu-memory-utilization``'s share before the KV cache is sized."""

"""vLLM's ``vllm/model_executor/model_loader``: checkpoint headers and per-rank weight bytes."""

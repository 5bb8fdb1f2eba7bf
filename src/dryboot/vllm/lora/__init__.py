"""LoRA's GPU allocations at engine start (mirrors ``vllm/lora/``)."""

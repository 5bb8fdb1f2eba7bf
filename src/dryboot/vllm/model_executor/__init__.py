"""vLLM's ``vllm/model_executor``: what the model loader allocates for a model's weights."""

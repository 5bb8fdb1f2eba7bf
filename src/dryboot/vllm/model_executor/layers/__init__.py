"""vLLM's ``model_executor/layers``: quantization methods' weight layouts."""

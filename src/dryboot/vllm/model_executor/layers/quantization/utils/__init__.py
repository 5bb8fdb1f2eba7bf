"""vLLM's ``model_executor/layers/quantization/utils/``: helpers shared by the quantization methods."""

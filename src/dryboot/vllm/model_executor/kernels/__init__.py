"""vLLM's ``model_executor/kernels``: which kernel a layer gets, and the layout it leaves."""

"""Model families: which layers of an architecture keep a KV cache, and with what geometry.

One module per family, mirroring ``vllm/model_executor/models/<family>.py``; each exports
``defaults(fields)`` (the Hugging Face config class's defaults for absent keys), ``read(fields,
architecture)`` (the :class:`~dryboot.vllm.config.hf.ModelGeometry`) and optionally
``verify(model, tensor_parallel_size)`` (refusals vLLM makes while building the model).
:mod:`.registry` maps architecture names to families; see ``dryboot plan --list-architectures``.
"""

"""The planner: dryboot's product layer over vLLM's rules (:mod:`dryboot.vllm`).

``plan`` (one engine start), ``flags`` and ``runner`` (vLLM's flags as the CLI and the API take
them), ``policies`` (downstream grouping and unification policies), ``profiles`` and ``sweep``
(many plans), ``report``, ``svg`` and ``assumptions`` (what a plan says and what it assumed).
It imports :mod:`dryboot.vllm` and the bottom layer (``errors``, ``units``, ``textout``), never
a product package or the CLI.
"""

"""Attention sinks outside gpt-oss (issue 33): Granite-SWA, Granite-MoE-SWA and Laguna, whose layers
hold per-head sinks, built unquantized (bf16) by vLLM on RTX 5090 (SM 12.0) and B200 (SM 10.0) with
``VLLM_HAS_FLASHINFER_CUBIN=1`` (FlashInfer takes the sinks there; FlashAttention 2 does not on
SM 12.x), on 0.33.0 (FlashInfer's shared multi-CTA KV counter built with the model) and 0.32.0 (no
counter). The configs are the tiny stand-ins that verify each architecture's KV cache
(``data/architectures/<Architecture>.json``; Laguna's and Granite-MoE-SWA's linked, as they are:
the latter with ``attention_sinks`` false). Stand-ins of dryboot's: ``GraniteSWAForCausalLM``, the
tiny config with ``tie_word_embeddings`` written out as ``GraniteSWAConfig`` defaults it (true: the
recorder writes a tied checkpoint without ``lm_head``), and ``GraniteMoeSWAForCausalLM-sinks``, the
Granite-MoE-SWA tiny config with ``attention_sinks`` true (the config class's default).
``built_allocated_bytes`` counts every storage made while the model is built (the counter
included); ``allocated_bytes``: after ``process_weights_after_loading`` (FlashInfer's float32
sinks copies).

Imported by ``record_quant_weights.py`` (inside the boot environment, no dryboot import) when
``RECORD_SET=sinksfam``, and by ``test_weights_sinks_families.py``; vLLM's answers in
``data/weights/quant-recorded-sinksfam-<version>.json``.
"""

from __future__ import annotations

from pathlib import Path

HERE = Path(__file__).resolve().parent
CONFIGS = HERE / "data" / "weights" / "quant-configs-sinksfam"
RECORDED_NAME = "quant-recorded-sinksfam-{version}.json"
#: name, capability, SM count (tests/data/gpus/gpus.toml)
GPUS: tuple[tuple[str, tuple[int, int], int], ...] = (("RTX 5090", (12, 0), 170), ("B200", (10, 0), 148))
TPS = (1,)
#: a fixed scheduler budget (it sizes the counter)
EXTRA_ARGV = ("--max-num-batched-tokens", "8192")

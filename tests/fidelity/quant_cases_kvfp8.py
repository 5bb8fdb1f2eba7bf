"""Unquantized checkpoints served with ``--kv-cache-dtype fp8``: vLLM 0.33.0 builds FlashInfer
attention for an fp8 KV cache on SM 8.x, whose multi-CTA KV counter is allocated with the model.

Imported by ``record_quant_weights.py`` (inside the boot environment, no dryboot import) when
``RECORD_SET=kvfp8``, and by ``test_kv_counter.py``. Configs in ``data/weights/quant-configs-kvfp8/``
(published, with their ``SOURCE``), vLLM's answers in ``data/weights/quant-recorded-kvfp8-<version>.json``.
"""

from __future__ import annotations

from pathlib import Path

HERE = Path(__file__).resolve().parent
CONFIGS = HERE / "data" / "weights" / "quant-configs-kvfp8"
RECORDED_NAME = "quant-recorded-kvfp8-{version}.json"
#: SM 8.6 and 8.9 (FlashInfer for the fp8 cache), 9.0 (FlashAttention 3 takes it)
GPUS = (("RTX 3090", (8, 6), 82), ("RTX 4090", (8, 9), 128), ("H100", (9, 0), 132))
TPS = (1, 2)
#: every case is served with an fp8 KV cache and a fixed scheduler budget
EXTRA_ARGV = ("--kv-cache-dtype", "fp8", "--max-num-batched-tokens", "8192")

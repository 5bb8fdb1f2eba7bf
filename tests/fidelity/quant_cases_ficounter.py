"""The FlashInfer KV-counter set (issue 33): published unquantized dense configs (Qwen3, Llama,
Gemma 3, Nemotron-H; links to ``data/weights/configs/``, each with its ``SOURCE``) built by vLLM
0.33.0 on B200 (FlashInfer leads SM 10.x's attention priorities), H100 and A100 (FlashAttention;
``RECORD_ARGV='["--attention-backend", "FLASHINFER"]'``: FlashInfer named), RTX 5090 (auto and
``--kv-cache-dtype fp8``), and by 0.32.0 on B200 (no counter). ``built_allocated_bytes`` counts
every storage made while the model is built, so the shared multi-CTA KV counter
``FlashInferImpl.__init__`` allocates is in it (the unquantized recorder, ``record_weights.py``,
sums the model's own parameters and buffers only).

Imported by ``record_quant_weights.py`` (inside the boot environment, no dryboot import) when
``RECORD_SET=ficounter``, and by ``test_weights_flashinfer_counter.py``; vLLM's answers in
``data/weights/quant-recorded-ficounter-<version>.json``.
"""

from __future__ import annotations

from pathlib import Path

HERE = Path(__file__).resolve().parent
CONFIGS = HERE / "data" / "weights" / "quant-configs-ficounter"
#: the recorded file of a release
RECORDED_NAME = "quant-recorded-ficounter-{version}.json"
#: name, capability, SM count (tests/data/gpus/gpus.toml)
GPUS: tuple[tuple[str, tuple[int, int], int], ...] = (
    ("A100-80GB", (8, 0), 108),
    ("H100", (9, 0), 132),
    ("B200", (10, 0), 148),
)
TPS = (1, 2)
#: recorded when ``RECORD_GPUS`` names it: SM 12.0 keeps FlashAttention under ``auto`` and gives an
#: fp8 cache to FlashInfer (``RECORD_ARGV='["--kv-cache-dtype", "fp8"]'``)
EXTRA_GPUS: tuple[tuple[str, tuple[int, int], int], ...] = (("RTX 5090", (12, 0), 170),)

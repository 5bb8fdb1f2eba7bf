"""The unquantized gpt-oss set (issue 33): gpt-oss-20b and gpt-oss-120b without their MXFP4
``quantization_config`` (the bf16 layout; links / folders with their ``SOURCE``) built by vLLM
0.33.0 on B200 (SM 10.0: FlashInfer leads the attention priorities and, with ``flashinfer-cubin``,
serves the attention sinks) at TP 1, 2 and 4, each case in a fresh process's state (FlashInfer's
shared multi-CTA KV counter dropped before each), with ``VLLM_HAS_FLASHINFER_CUBIN=1`` (rows
marked ``flashinfer_cubin``) and ``0`` (case ids ending ``(no flashinfer-cubin)``), and on RTX 5090
(``RECORD_GPUS``; FlashInfer serves the sinks there too) at TP 1 with the package.
``built_allocated_bytes``: every storage made while the model is built (the counter included);
``allocated_bytes``: after ``process_weights_after_loading`` (FlashInfer's float32 sinks copies).

Imported by ``record_quant_weights.py`` (inside the boot environment, no dryboot import) when
``RECORD_SET=ossbf16``, and by ``test_weights_gpt_oss_bf16.py``; vLLM's answers in
``data/weights/quant-recorded-ossbf16-<version>.json``.
"""

from __future__ import annotations

from pathlib import Path

HERE = Path(__file__).resolve().parent
CONFIGS = HERE / "data" / "weights" / "quant-configs-ossbf16"
#: the recorded file of a release
RECORDED_NAME = "quant-recorded-ossbf16-{version}.json"
#: name, capability, SM count (tests/data/gpus/gpus.toml)
GPUS: tuple[tuple[str, tuple[int, int], int], ...] = (("B200", (10, 0), 148),)
TPS = (1, 2, 4)
#: recorded when ``RECORD_GPUS`` names it (SM 12.0: FlashAttention under ``auto``)
EXTRA_GPUS: tuple[tuple[str, tuple[int, int], int], ...] = (("RTX 5090", (12, 0), 170),)

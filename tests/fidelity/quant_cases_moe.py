"""The third set of quantized-weight cases: MoE experts under AWQ (and AutoRound's AWQ packing),
compressed-tensors W8A8 fp8 / int8 and NVFP4, and compressed-tensors W4A16 experts on the releases
the second set did not record.

Imported by ``record_quant_weights.py`` (inside the boot environment, no dryboot import: this
module imports nothing of dryboot) when ``RECORD_SET=moe``, and by ``test_quant_weights_moe.py``.
Its configs live in ``data/weights/quant-configs-moe/`` (each with its ``SOURCE``), vLLM's answers
in ``data/weights/quant-recorded-moe-<version>.json``.
"""

from __future__ import annotations

from pathlib import Path

HERE = Path(__file__).resolve().parent
CONFIGS = HERE / "data" / "weights" / "quant-configs-moe"
#: the recorded file of a release
RECORDED_NAME = "quant-recorded-moe-{version}.json"

#: name, capability, SM count (tests/data/gpus/gpus.toml): SM 8.6 (Marlin MoE; fp8 and NVFP4
#: weight-only through Marlin), 8.9 and 9.0 (fp8 natively), 10.0 and 12.0 (NVFP4 natively)
GPUS: tuple[tuple[str, tuple[int, int], int], ...] = (
    ("RTX 3090", (8, 6), 82),
    ("RTX 4090", (8, 9), 128),
    ("H100", (9, 0), 132),
    ("B200", (10, 0), 148),
    ("RTX 5090", (12, 0), 170),
)
TPS = (1, 2)

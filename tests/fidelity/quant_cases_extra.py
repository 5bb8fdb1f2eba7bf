"""The second set of quantized-weight cases: W8A8 int8 / fp8, NVFP4 and ModelOpt layouts.

Imported by ``record_quant_weights.py`` (inside the boot environment, no dryboot import: this
module imports nothing of dryboot) when ``RECORD_SET=extra``, and by ``test_quant_weights.py``.
Its configs live in ``data/weights/quant-configs-extra/`` (each with its ``SOURCE``), vLLM's
answers in ``data/weights/quant-recorded-extra-<version>.json`` (the files of the first set,
``quant-recorded-<version>.json``, are left as they are).
"""

from __future__ import annotations

from pathlib import Path

HERE = Path(__file__).resolve().parent
CONFIGS = HERE / "data" / "weights" / "quant-configs-extra"
#: the recorded file of a release
RECORDED_NAME = "quant-recorded-extra-{version}.json"

#: name, capability, SM count (tests/data/gpus/gpus.toml): SM 8.6 (fp8 through Marlin, int8
#: through CUTLASS), 8.9 and 9.0 (CUTLASS fp8), 10.0 and 12.0 (NVFP4 natively)
GPUS: tuple[tuple[str, tuple[int, int], int], ...] = (
    ("RTX 3090", (8, 6), 82),
    ("RTX 4090", (8, 9), 128),
    ("H100", (9, 0), 132),
    ("B200", (10, 0), 148),
    ("RTX 5090", (12, 0), 170),
)
TPS = (1, 2)

"""The second set of quantized-weight cases: W8A8 int8 / fp8, NVFP4 and ModelOpt layouts.

Imported by ``record_quant_weights.py`` (inside the boot environment, no dryboot import: this
module imports nothing of dryboot) when ``RECORD_SET=extra``, and by ``test_quant_weights.py``.
Its configs live in ``data/weights/quant-configs-extra/`` (each with its ``SOURCE``), vLLM's
answers in ``data/weights/quant-recorded-extra-<version>.json`` (the files of the first set,
``quant-recorded-<version>.json``, are left as they are).
"""

from __future__ import annotations

from pathlib import Path

import quant_case_gpus

HERE = Path(__file__).resolve().parent
CONFIGS = HERE / "data" / "weights" / "quant-configs-extra"
#: the recorded file of a release
RECORDED_NAME = "quant-recorded-extra-{version}.json"

#: the GPUs (quant_case_gpus.py): SM 8.6 (fp8 through Marlin, int8
#: through CUTLASS), 8.9 and 9.0 (CUTLASS fp8), 10.0 and 12.0 (NVFP4 natively)
GPUS = quant_case_gpus.SM86_TO_120
TPS = quant_case_gpus.TPS

"""The MXFP8 quantized-weight cases: MiniMax-M3-MXFP8 (``quant_method: mxfp8``, vLLM's
``ModelOptMxFp8Config``) and nvidia/MiniMax-M3-NVFP4 (ModelOpt ``MIXED_PRECISION``: MXFP8 linear
layers, NVFP4 experts).

Imported by ``record_quant_weights.py`` (inside the boot environment, no dryboot import: this
module imports nothing of dryboot) when ``RECORD_SET=mxfp8``, and by ``test_weights_mxfp8.py``.
Its configs live in ``data/weights/quant-configs-mxfp8/`` (each with its ``SOURCE``), vLLM's answers in
``data/weights/quant-recorded-mxfp8-<version>.json``.
"""

from __future__ import annotations

from pathlib import Path

import quant_case_gpus

HERE = Path(__file__).resolve().parent
CONFIGS = HERE / "data" / "weights" / "quant-configs-mxfp8"
#: the recorded file of a release
RECORDED_NAME = "quant-recorded-mxfp8-{version}.json"
#: the GPUs (quant_case_gpus.py): SM 8.6 / 8.9 (Marlin), 9.0, 10.0, 12.0
GPUS = quant_case_gpus.SM86_TO_120
TPS = quant_case_gpus.TPS
#: the scheduler's tokens per step of the recorder's engine start (``--max-model-len 4096``, no
#: ``--max-num-batched-tokens``: vLLM 0.33.0's default), which sizes MiniMax-M3's top-k buffer
MAX_NUM_BATCHED_TOKENS = 8192

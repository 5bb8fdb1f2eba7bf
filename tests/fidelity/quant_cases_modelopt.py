"""The ModelOpt quantized-weight cases: MIXED_PRECISION checkpoints and ModelOpt MoE experts.

Its B200 ModelOpt NVFP4 MoE rows are recorded with ``RECORD_MXFP4_NATIVE=1`` (FlashInfer's block-scale
interleave of the TRT-LLM experts by shape; without it the oracle fails there).

Imported by ``record_quant_weights.py`` (inside the boot environment, no dryboot import: this
module imports nothing of dryboot) when ``RECORD_SET=modelopt``, and by
``test_quant_weights_modelopt.py``. Its configs live in ``data/weights/quant-configs-modelopt/``
(each with its ``SOURCE``), vLLM's answers in ``data/weights/quant-recorded-modelopt-<version>.json``.
"""

from __future__ import annotations

from pathlib import Path

import quant_case_gpus

HERE = Path(__file__).resolve().parent
CONFIGS = HERE / "data" / "weights" / "quant-configs-modelopt"
#: the recorded file of a release
RECORDED_NAME = "quant-recorded-modelopt-{version}.json"

#: the GPUs (quant_case_gpus.py): SM 8.6 / 8.9 / 9.0 (NVFP4 through
#: Marlin), 10.0 (FlashInfer / TRT-LLM), 12.0 (the 32 GB RTX 5090)
GPUS = quant_case_gpus.SM86_TO_120
TPS = quant_case_gpus.TPS

"""nvidia/MiniMax-M3-NVFP4 (ModelOpt ``MIXED_PRECISION``: MXFP8 decoder linear layers, NVFP4 routed
experts) where vLLM 0.32.0 / 0.33.0 serve it through Humming (issue 33): on SM 9.0
``prioritize_humming`` puts ``HummingMxfp8LinearKernel`` ahead of ``MarlinMxfp8LinearKernel`` and
the ``HUMMING`` NVFP4 experts ahead of Marlin's. Recorded with the humming-kernels wheel the
release's CUDA wheel pins (0.33.0: 0.1.19, 0.32.0: 0.1.17) on ``DRYBOOT_HUMMING_PATH``
(docs/fidelity.md) and DeepGEMM present as the CUDA wheel vendors it; B200 (SM 10.0) recorded to
show what the oracle does there.

Imported by ``record_quant_weights.py`` (inside the boot environment, no dryboot import) when
``RECORD_SET=mm3hum``, and by ``test_weights_mm3hum.py``. Its config is a link to the published one
in ``tests/data/configs/public/`` (with its ``SOURCE``); vLLM's answers live in
``data/weights/quant-recorded-mm3hum-<version>.json``.
"""

from __future__ import annotations

from pathlib import Path

HERE = Path(__file__).resolve().parent
CONFIGS = HERE / "data" / "weights" / "quant-configs-mm3hum"
RECORDED_NAME = "quant-recorded-mm3hum-{version}.json"
#: name, capability, SM count (tests/data/gpus/gpus.toml): SM 9.0 (H100, H200), 10.0
GPUS: tuple[tuple[str, tuple[int, int], int], ...] = (
    ("H100", (9, 0), 132),
    ("H200", (9, 0), 132),
    ("B200", (10, 0), 148),
)
TPS = (1, 2, 4, 8)
#: DeepGEMM present on SM 9.0 and 10.x, as vLLM's CUDA wheel vendors it (quant_fakes.deep_gemm_stand_in)
DEEP_GEMM = (9, 10)
#: the scheduler's tokens per step of the recorder's engine start (``--max-model-len 4096``, no
#: ``--max-num-batched-tokens``: vLLM 0.33.0's default), which sizes MiniMax-M3's top-k buffer
MAX_NUM_BATCHED_TOKENS = 8192

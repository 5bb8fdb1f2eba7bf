"""The plain fp8 cases of the Gated DeltaNet hybrids (``quant_method: fp8``, vLLM's ``Fp8Config``,
``[128, 128]`` blocks, as Qwen's FP8 checkpoints of Qwen3-Next ship them): which of the Gated
DeltaNet projections (``in_proj_qkvz``, ``in_proj_ba``, ``out_proj``, ``conv1d``) the checkpoint
quantizes is read from its ``modules_to_not_convert``, after ``process_weights_after_loading`` per
GPU.

Imported by ``record_quant_weights.py`` (inside the boot environment, no dryboot import: this
module imports nothing of dryboot) when ``RECORD_SET=fp8gdn``, and by
``test_weights_fp8_gdn.py``. Its configs live in ``data/weights/quant-configs-fp8gdn/`` (each with
its ``SOURCE``), vLLM's answers in ``data/weights/quant-recorded-fp8gdn-<version>.json``.
"""

from __future__ import annotations

from pathlib import Path

HERE = Path(__file__).resolve().parent
CONFIGS = HERE / "data" / "weights" / "quant-configs-fp8gdn"
#: the recorded file of a release
RECORDED_NAME = "quant-recorded-fp8gdn-{version}.json"
#: SM 8.6 (Marlin FP8 experts, dense block layers as loaded), 8.9 (CUTLASS / Triton block fp8),
#: 9.0 (DeepGEMM, present as vLLM's CUDA wheel vendors it)
GPUS: tuple[tuple[str, tuple[int, int], int], ...] = (
    ("RTX 3090", (8, 6), 82),
    ("RTX 4090", (8, 9), 128),
    ("H100", (9, 0), 132),
)
#: SM 12.0 / 12.1 (RTX 5090, GB10: no SM count published, 48 stands in as in quant_cases_fp8.py),
#: recorded on 0.28.0 and 0.30.0 (``RECORD_GPUS``; without DeepGEMM, as the public SM 12.x boots
#: log it); 0.33.0's FlashInfer attention buffer there is refused by name, not recorded
BLACKWELL_GPUS: tuple[tuple[str, tuple[int, int], int], ...] = (("RTX 5090", (12, 0), 170), ("GB10", (12, 1), 48))
BLACKWELL_RELEASES = ("0.28.0", "0.30.0")
GPUS = GPUS + BLACKWELL_GPUS
TPS = (1, 2)
#: the GPU architectures (major) recorded with DeepGEMM present (quant_fakes.deep_gemm_stand_in)
DEEP_GEMM = (9, 10)

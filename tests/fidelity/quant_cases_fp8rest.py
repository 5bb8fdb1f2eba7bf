"""The published quantized configs ``plan --gpu H200`` left without a weights figure (issue 33):
XiaomiMiMo/MiMo-V2-Flash (plain fp8 ``[128, 128]`` blocks, ``Fp8Config``), poolside/Laguna-S-2.1-FP8
and Laguna-XS.2-FP8 (compressed-tensors W8A8 fp8 ``[128, 128]`` blocks; XS.2 with a Hadamard
``transform_config``) and nvidia/MiniMax-M3-NVFP4 (ModelOpt ``MIXED_PRECISION``), their published
configs verbatim (links to ``tests/data/configs/public/``, each with its ``SOURCE``).

Imported by ``record_quant_weights.py`` (inside the boot environment, no dryboot import) when
``RECORD_SET=fp8rest``, and by ``test_weights_fp8rest.py``. vLLM's answers live in
``data/weights/quant-recorded-fp8rest-<version>.json``.
"""

from __future__ import annotations

from pathlib import Path

HERE = Path(__file__).resolve().parent
CONFIGS = HERE / "data" / "weights" / "quant-configs-fp8rest"
RECORDED_NAME = "quant-recorded-fp8rest-{version}.json"
#: name, capability, SM count (tests/data/gpus/gpus.toml): SM 8.9 and 9.0 (8.6: Marlin FP8)
GPUS: tuple[tuple[str, tuple[int, int], int], ...] = (
    ("RTX 3090", (8, 6), 82),
    ("RTX 4090", (8, 9), 128),
    ("H100", (9, 0), 132),
)
TPS = (1, 2)
#: recorded with DeepGEMM present on SM 9.0 and 10.x, as vLLM's CUDA wheel vendors it
#: (quant_fakes.deep_gemm_stand_in), as the fp8 set
DEEP_GEMM = (9, 10)
VALUE_ONLY_KERNELS = ("static_scaled_fp8_quant",)

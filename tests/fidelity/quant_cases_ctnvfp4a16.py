"""The compressed-tensors W4A16 NVFP4 set of quantized-weight cases (llm-compressor's NVFP4A16: NVFP4
weights, 16-bit activations; vLLM's ``CompressedTensorsW4A4Fp4(use_a16=True)`` linear scheme over
``init_nvfp4_linear_kernel(use_a16=True)``, the kernels of ModelOpt's ``W4A16_NVFP4``): a dense Qwen3-8B
and a Qwen3-30B-A3B (its experts through ``CompressedTensorsW4A4Nvfp4MoEMethod(use_a16=True)``).

Imported by ``record_quant_weights.py`` (inside the boot environment, no dryboot import) when
``RECORD_SET=ctnvfp4a16``, and by ``test_quant_ctnvfp4a16.py``. Its configs live in
``data/weights/quant-configs-ctnvfp4a16/`` (each with its ``SOURCE``), vLLM's answers in
``data/weights/quant-recorded-ctnvfp4a16-<version>.json``.
"""

from __future__ import annotations

from pathlib import Path

HERE = Path(__file__).resolve().parent
CONFIGS = HERE / "data" / "weights" / "quant-configs-ctnvfp4a16"
#: the recorded file of a release
RECORDED_NAME = "quant-recorded-ctnvfp4a16-{version}.json"

#: SM 8.0 / 8.6 (Marlin FP4), 9.0 (Marlin; Humming on 0.32.0+ where installed), 10.0 (FlashInfer's CuTe DSL
#: W4A16 GEMM from 0.30.0), 12.0 (Marlin)
GPUS: tuple[tuple[str, tuple[int, int], int], ...] = (
    ("RTX 3090", (8, 6), 82),
    ("A100-80GB", (8, 0), 108),
    ("H100", (9, 0), 132),
    ("B200", (10, 0), 148),
    ("RTX 5090", (12, 0), 170),
)
TPS = (1,)

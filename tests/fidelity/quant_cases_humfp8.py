"""The Humming fp8 set of quantized-weight cases: compressed-tensors fp8 checkpoints below SM 8.9,
which every release 0.27.1-0.33.0 serves weight-only (``CompressedTensorsW8A16Fp8``) through its
W8A16 fp8 kernel list, ``HummingFP8ScaledMMLinearKernel`` ahead of Marlin's
(``kernels/linear/__init__.py`` ``_POSSIBLE_WFP8A16_KERNELS``; humming-kernels is a requirement of
every CUDA wheel): fp8 channel, block and per-tensor weights, dense (Qwen3-8B; Qwen2.5-1.5B and 0.5B,
whose ``qkv_proj`` has a bias, the 0.5B on the RTX 3090 only) and MoE (a tiny Llama-4, whose fp8 experts
take the fused-MoE backends' list, not Humming's linear kernel).

Imported by ``record_quant_weights.py`` (inside the boot environment, no dryboot import) when
``RECORD_SET=humfp8``, and by ``test_quant_humfp8.py``. Its configs live in
``data/weights/quant-configs-humfp8/`` (each with its ``SOURCE``), vLLM's answers in
``data/weights/quant-recorded-humfp8-<version>.json``, recorded with the unpacked
``humming-kernels`` wheel each release pins on ``DRYBOOT_HUMMING_PATH`` (0.27.1: 0.1.10;
0.28.0-0.30.0: 0.1.12; 0.31.0: 0.1.16; 0.32.0: 0.1.17; 0.33.0: 0.1.19).
"""

from __future__ import annotations

from pathlib import Path

HERE = Path(__file__).resolve().parent
CONFIGS = HERE / "data" / "weights" / "quant-configs-humfp8"
#: the recorded file of a release
RECORDED_NAME = "quant-recorded-humfp8-{version}.json"

#: SM 8.6 and 8.0: below SM 8.9, compressed-tensors fp8 goes weight-only
GPUS: tuple[tuple[str, tuple[int, int], int], ...] = (("RTX 3090", (8, 6), 82), ("A100-80GB", (8, 0), 108))
TPS = (1, 2)

"""The Gemma-4 set of quantized-weight cases: the text model (``Gemma4ForCausalLM``, dense as the
31B, MoE as the 26B-A4B) under compressed-tensors W4A16, AWQ, GPTQ (dense), plain fp8 and ModelOpt
NVFP4 (the published nvidia/Gemma-4-31B-IT-NVFP4 ``quantization_config``: attention left in bf16);
the router's ``proj`` never quantized (vLLM builds it as a ``GateLinear`` without a quant config).
Each config is the published 26B-A4B ``text_config`` with its sizes shrunk (``SOURCE`` of each).

The B200 rows of the MoE ModelOpt NVFP4 configs are recorded with ``RECORD_MXFP4_NATIVE=1`` (FlashInfer's
block-scale interleave of the TRT-LLM experts by shape; without it the oracle fails there).

Imported by ``record_quant_weights.py`` (inside the boot environment, no dryboot import) when
``RECORD_SET=gemma4``, and by ``test_quant_weights_gemma4.py``. Its configs live in
``data/weights/quant-configs-gemma4/``, vLLM's answers in
``data/weights/quant-recorded-gemma4-<version>.json``.
"""

from __future__ import annotations

from pathlib import Path

HERE = Path(__file__).resolve().parent
CONFIGS = HERE / "data" / "weights" / "quant-configs-gemma4"
#: the recorded file of a release
RECORDED_NAME = "quant-recorded-gemma4-{version}.json"

#: name, capability, SM count (tests/data/gpus/gpus.toml): SM 8.6, 8.9 and 9.0
GPUS: tuple[tuple[str, tuple[int, int], int], ...] = (
    ("RTX 3090", (8, 6), 82),
    ("RTX 4090", (8, 9), 128),
    ("H100", (9, 0), 132),
)
TPS = (1, 2)
#: recorded only when ``RECORD_GPUS`` names them: Blackwell (SM 10.0)
EXTRA_GPUS: tuple[tuple[str, tuple[int, int], int], ...] = (("B200", (10, 0), 148),)
#: kernels that only write values into tensors vLLM allocated (``quant_fakes.VALUE_ONLY``)
VALUE_ONLY_KERNELS = ("static_scaled_fp8_quant",)

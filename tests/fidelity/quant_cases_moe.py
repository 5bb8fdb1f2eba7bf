"""The third set of quantized-weight cases: MoE experts under AWQ (and AutoRound's AWQ packing),
compressed-tensors W8A8 fp8 / int8 and NVFP4, and compressed-tensors W4A16 experts on the releases
the second set did not record; GPTQ / AWQ experts of GLM-4.5 (``glm4_moe``), the MLA families
(GLM-4.7-Flash, DeepSeek-V3), MiniMax-M2 and the Gated DeltaNet MoE hybrids (Qwen3-Next, Qwen3.5
MoE), each config composed from a published base config and a published sibling's
``quantization_config`` (its ``SOURCE``); Llama-4's, kept to check its refusal.

Imported by ``record_quant_weights.py`` (inside the boot environment, no dryboot import: this
module imports nothing of dryboot) when ``RECORD_SET=moe``, and by ``test_quant_weights_moe.py``.
Its configs live in ``data/weights/quant-configs-moe/`` (each with its ``SOURCE``), vLLM's answers
in ``data/weights/quant-recorded-moe-<version>.json``.
"""

from __future__ import annotations

from pathlib import Path

import quant_case_gpus

HERE = Path(__file__).resolve().parent
CONFIGS = HERE / "data" / "weights" / "quant-configs-moe"
#: the recorded file of a release
RECORDED_NAME = "quant-recorded-moe-{version}.json"

#: the GPUs (quant_case_gpus.py): SM 8.6 (Marlin MoE; fp8 and NVFP4
#: weight-only through Marlin), 8.9 and 9.0 (fp8 natively), 10.0 and 12.0 (NVFP4 natively)
GPUS = quant_case_gpus.SM86_TO_120
TPS = quant_case_gpus.TPS

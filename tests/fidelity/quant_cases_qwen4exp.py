"""The Qwen4-Exp set of quantized-weight cases: its plain layout (``Qwen4ExpForCausalLM``, the tiny
text config of ``data/architectures/Qwen4ExpForCausalLM.json``) under plain fp8 (``[128, 128]``
blocks), compressed-tensors W8A8 fp8 / int8, NVFP4 and W4A16, GPTQ and AWQ: the Gated DeltaNet,
attention, shared-expert and routed-expert layers quantized as the checkpoint says (vLLM builds
them with the model's ``quant_config``), the hyper-connection projections, the embedding and the
LM head never (``quant_config=None`` / none passed). Each config's ``SOURCE`` names the published
sibling its ``quantization_config`` comes from.

Imported by ``record_quant_weights.py`` (inside the boot environment, no dryboot import: this
module imports nothing of dryboot) when ``RECORD_SET=qwen4exp``, and by
``test_quant_weights_qwen4exp.py``. Its configs live in ``data/weights/quant-configs-qwen4exp/``,
vLLM's answers in ``data/weights/quant-recorded-qwen4exp-<version>.json``.
"""

from __future__ import annotations

from pathlib import Path

HERE = Path(__file__).resolve().parent
CONFIGS = HERE / "data" / "weights" / "quant-configs-qwen4exp"
#: the recorded file of a release
RECORDED_NAME = "quant-recorded-qwen4exp-{version}.json"
#: name, capability, SM count (tests/data/gpus/gpus.toml): SM 8.6 (Marlin), 8.9, 9.0 and 10.0
GPUS: tuple[tuple[str, tuple[int, int], int], ...] = (
    ("RTX 3090", (8, 6), 82),
    ("RTX 4090", (8, 9), 128),
    ("H100", (9, 0), 132),
    ("B200", (10, 0), 148),
)
TPS = (1, 2)
#: the GPU architectures (major) recorded with DeepGEMM present (quant_fakes.deep_gemm_stand_in),
#: as vLLM's CUDA wheel vendors it
DEEP_GEMM = (9, 10)

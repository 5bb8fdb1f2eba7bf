"""The Qwen3-VL set of quantized-weight cases: the published Qwen3-VL-8B-Instruct
(``Qwen3VLForConditionalGeneration``) and Qwen3-VL-30B-A3B-Instruct
(``Qwen3VLMoeForConditionalGeneration``) configs, each with a ``quantization_config`` added: Qwen's
plain fp8 ``[128, 128]`` blocks (the format of its Qwen3-VL-*-FP8 releases; the vision tower and
``lm_head`` in ``modules_to_not_convert``), compressed-tensors W4A16 group 128 (``ignore``:
``lm_head`` and the tower), AutoAWQ's GEMM 4-bit group 128 (``modules_to_not_convert``:
``visual``) and GPTQ 4-bit group 128 (``modules_in_block_to_quantize``: the text model's
projections), the language model quantized as the checkpoint says, the vision tower, its mergers
and the LM head in bfloat16 (no published AWQ- or GPTQ-format Qwen3-VL config was found). Each
config's ``SOURCE`` says how it was composed.

Imported by ``record_quant_weights.py`` (inside the boot environment, no dryboot import: this
module imports nothing of dryboot) when ``RECORD_SET=qwen3vl``, and by
``test_quant_weights_qwen3vl.py``. Its configs live in ``data/weights/quant-configs-qwen3vl/``,
vLLM's answers in ``data/weights/quant-recorded-qwen3vl-<version>.json``.
"""

from __future__ import annotations

from pathlib import Path

HERE = Path(__file__).resolve().parent
CONFIGS = HERE / "data" / "weights" / "quant-configs-qwen3vl"
#: the recorded file of a release
RECORDED_NAME = "quant-recorded-qwen3vl-{version}.json"
#: name, capability, SM count (tests/data/gpus/gpus.toml): SM 8.6 (Marlin), 8.9 and 9.0
GPUS: tuple[tuple[str, tuple[int, int], int], ...] = (
    ("RTX 3090", (8, 6), 82),
    ("RTX 4090", (8, 9), 128),
    ("H100", (9, 0), 132),
)
TPS = (1, 2)
#: the GPU architectures (major) recorded with DeepGEMM present (quant_fakes.deep_gemm_stand_in),
#: as vLLM's CUDA wheel vendors it
DEEP_GEMM = (9, 10)

"""The ModelOpt NVFP4 MoE cases of the MLA / hybrid / wrapper families: NVIDIA's published
checkpoints nvidia/DeepSeek-V3.1-NVFP4 and nvidia/DeepSeek-V3-0324-NVFP4 (``DeepseekV3ForCausalLM``,
MLA attention and NVFP4 experts), nvidia/Qwen3.5-122B-A10B-NVFP4 (``Qwen3_5MoeForConditionalGeneration``)
and nvidia/Kimi-K2.5-NVFP4 / Kimi-K2.6-NVFP4 (``KimiK25ForConditionalGeneration``), their published
configs verbatim.

Its B200 ModelOpt NVFP4 MoE rows are recorded with ``RECORD_MXFP4_NATIVE=1`` (FlashInfer's block-scale
interleave of the TRT-LLM experts by shape; without it the oracle fails there).

Imported by ``record_quant_weights.py`` (inside the boot environment, no dryboot import) when
``RECORD_SET=nvfp4moe``, and by ``test_quant_weights_nvfp4moe.py``. Its configs live in
``data/weights/quant-configs-nvfp4moe/`` (each with its ``SOURCE``), vLLM's answers in
``data/weights/quant-recorded-nvfp4moe-<version>.json``.
"""

from __future__ import annotations

from pathlib import Path

HERE = Path(__file__).resolve().parent
CONFIGS = HERE / "data" / "weights" / "quant-configs-nvfp4moe"
RECORDED_NAME = "quant-recorded-nvfp4moe-{version}.json"
#: name, capability, SM count (tests/data/gpus/gpus.toml): SM 8.0 and 9.0 (Marlin experts; Humming
#: on 9.0 where the release ranks it first), 10.0 (FlashInfer TRT-LLM / CUTLASS) and 12.0 (CUTLASS)
GPUS: tuple[tuple[str, tuple[int, int], int], ...] = (
    ("A100-80GB", (8, 0), 108),
    ("H100", (9, 0), 132),
    ("B200", (10, 0), 148),
    ("RTX 5090", (12, 0), 170),
)
#: the TP size these checkpoints are served at
TPS = (8,)

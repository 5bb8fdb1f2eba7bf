"""The ModelOpt NVFP4 sparse-MLA cases (DeepSeek Sparse Attention: an indexer per layer,
``index_topk``; issue 33): NVIDIA's published nvidia/DeepSeek-V3.2-NVFP4 and nvidia/GLM-5-NVFP4,
GLM-5.1-NVFP4, GLM-5.2-NVFP4, GLM-5.3-NVFP4 (``DeepseekV32ForCausalLM`` / ``GlmMoeDsaForCausalLM``:
the MLA projections and the indexer excluded, NVFP4 experts, an fp8 KV cache), their published
configs verbatim (links to ``tests/data/configs/public/``, each with its ``SOURCE``), after
``process_weights_after_loading``, on SM 9.0 (H100, H200) and 10.0 (B200) at TP 8. Each config is
recorded in a process of its own (as ``quant_cases_sparsemla.py``: a DeepSeek-V3.2 case leaves
later cases' rotary tables in float32).

Imported by ``record_quant_weights.py`` (inside the boot environment, no dryboot import: this
module imports nothing of dryboot) when ``RECORD_SET=nvfp4smla``, and by
``test_weights_nvfp4smla.py``. vLLM's answers live in
``data/weights/quant-recorded-nvfp4smla-<version>.json``.
"""

from __future__ import annotations

from pathlib import Path

HERE = Path(__file__).resolve().parent
CONFIGS = HERE / "data" / "weights" / "quant-configs-nvfp4smla"
#: the recorded file of a release
RECORDED_NAME = "quant-recorded-nvfp4smla-{version}.json"
#: name, capability, SM count (tests/data/gpus/gpus.toml): SM 9.0 and 10.0
GPUS: tuple[tuple[str, tuple[int, int], int], ...] = (
    ("H100", (9, 0), 132),
    ("H200", (9, 0), 132),
    ("B200", (10, 0), 148),
)
#: recorded only where ``RECORD_GPUS`` names it: SM 12.0 (CUTLASS NVFP4 experts)
EXTRA_GPUS: tuple[tuple[str, tuple[int, int], int], ...] = (("RTX 5090", (12, 0), 170),)
TPS = (8,)
#: DeepGEMM present on SM 9.0 and 10.x, as vLLM's CUDA wheel vendors it (quant_cases_sparsemla.py)
DEEP_GEMM = (9, 10)

"""The FlashInfer TRT-LLM NVFP4 MoE cases (issue 33): ModelOpt NVFP4 (W4A4) experts on SM 10.x, where
vLLM picks ``FLASHINFER_TRTLLM`` first (``fused_moe/oracle/nvfp4.py``), over the releases that have it
(0.27.1-0.33.0), a hidden size off 256 (``align_fp4_moe_hidden_dim_for_fi`` pads it) and expert
parallelism (``RECORD_ARGV='["--enable-expert-parallel"]'``, each case id then ending so).

Each config is a tiny Qwen3-MoE (``Qwen3MoeForCausalLM``: nvidia/Qwen3-30B-A3B-NVFP4's config and
``hf_quant_config.json`` with its sizes shrunk, each with its ``SOURCE``): hidden 1024 and 1152.

Imported by ``record_quant_weights.py`` (inside the boot environment, no dryboot import) when
``RECORD_SET=trtllm``, and by ``test_quant_weights_trtllm.py``. Its configs live in
``data/weights/quant-configs-trtllm/``, vLLM's answers in ``data/weights/quant-recorded-trtllm-<version>.json``.
"""

from __future__ import annotations

from pathlib import Path

HERE = Path(__file__).resolve().parent
CONFIGS = HERE / "data" / "weights" / "quant-configs-trtllm"
RECORDED_NAME = "quant-recorded-trtllm-{version}.json"
#: name, capability, SM count (tests/data/gpus/gpus.toml): SM 10.0
GPUS: tuple[tuple[str, tuple[int, int], int], ...] = (("B200", (10, 0), 148),)
#: TP 4: the intermediate per rank (96) padded to 64's multiple (128)
TPS = (1, 2, 4)

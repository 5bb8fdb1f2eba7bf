"""The sparse-MLA fp8 cases (DeepSeek Sparse Attention: an indexer per layer, ``index_topk``):
the published DeepSeek-V3.2, GLM-5-FP8, GLM-5.1-FP8 (GLM-5's config) and GLM-5.2-FP8 (IndexCache:
``index_skip_topk_offset`` / ``index_topk_freq``, fewer indexers than layers; GLM-5.3-FP8's config)
configs, block fp8 ``[128, 128]``, after ``process_weights_after_loading``, on SM 8.9, 9.0 and 12.0
at TP 8; and a tiny DeepSeek-V3.2 stand-in (``tiny-DeepseekV32-FP8``, said so in its SOURCE), with H200
and TP 1 / 2 where ``RECORD_GPUS`` / ``RECORD_TPS`` name them; its unquantized copies
``tiny-DeepseekV32-BF16`` (a float16 model builds on the CPU oracle) and ``tiny-DeepseekV32-H512``
(``kv_lora_rank`` 448: a 512 MLA head), for vLLM's SM 9.x sparse backend choice (rows with
``RECORD_ARGV``: ``--attention-backend``, ``--kv-cache-dtype``, ``--dtype``; H100, TP 1). From 0.30.0
every layer that builds an indexer (and the first layer) also opens a ``SparseMLAIndexGroup``, whose
top-k workspace is allocated with the model. Each config is recorded in a process of its own (a
DeepSeek-V3.2 case leaves later cases' rotary tables in float32).

Imported by ``record_quant_weights.py`` (inside the boot environment, no dryboot import: this
module imports nothing of dryboot) when ``RECORD_SET=sparsemla``, and by
``test_weights_sparsemla.py``. Its configs live in ``data/weights/quant-configs-sparsemla/`` (each
with its ``SOURCE``), vLLM's answers in ``data/weights/quant-recorded-sparsemla-<version>.json``.
"""

from __future__ import annotations

from pathlib import Path

HERE = Path(__file__).resolve().parent
CONFIGS = HERE / "data" / "weights" / "quant-configs-sparsemla"
#: the recorded file of a release
RECORDED_NAME = "quant-recorded-sparsemla-{version}.json"
#: name, capability, SM count (tests/data/gpus/gpus.toml): SM 8.9, 9.0 and 12.0
GPUS: tuple[tuple[str, tuple[int, int], int], ...] = (
    ("RTX 4090", (8, 9), 128),
    ("H100", (9, 0), 132),
    ("RTX 5090", (12, 0), 170),
)
TPS = (8,)
#: recorded only where ``RECORD_GPUS`` names them: H200 (SM 9.0, as H100, with 141 GB: vLLM's
#: defaults for the larger memory), B200 (SM 10.0: the stand-in's FLASHINFER_MLA_SPARSE layers and their
#: MLA prefill backend, TP 1, ``RECORD_WORKSPACE=1``)
EXTRA_GPUS: tuple[tuple[str, tuple[int, int], int], ...] = (("H200", (9, 0), 132), ("B200", (10, 0), 148))
#: DeepGEMM present on SM 9.0 and 10.x, as vLLM's CUDA wheel vendors it (quant_cases_fp8.py)
DEEP_GEMM = (9, 10)
#: as quant_cases_fp8.py
VALUE_ONLY_KERNELS = ("static_scaled_fp8_quant",)

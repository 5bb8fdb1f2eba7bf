"""The ignore-list matching cases (issue 33): composed Qwen3-8B / Qwen3-30B-A3B configs whose
quantization config's ignore list (plain fp8 ``modules_to_not_convert``, AWQ's, compressed-tensors
``ignore``, ModelOpt ``exclude_modules``) holds module prefixes, one shard of a fused layer, vLLM's
fused layer name, one expert's projection or a ``re:`` pattern, where each method's own matching
rule (``Fp8Config``: ``is_layer_skipped``, exact; AWQ: its substring mode; compressed-tensors:
``should_ignore_layer``; ModelOpt: ``is_layer_excluded``, substrings and wildcards) differs from a
prefix match. Each config's ``SOURCE`` says what was composed.

Imported by ``record_quant_weights.py`` (inside the boot environment, no dryboot import) when
``RECORD_SET=fp8ignore``, and by ``test_weights_fp8ignore.py``. vLLM's answers live in
``data/weights/quant-recorded-fp8ignore-<version>.json``.
"""

from __future__ import annotations

from pathlib import Path

HERE = Path(__file__).resolve().parent
CONFIGS = HERE / "data" / "weights" / "quant-configs-fp8ignore"
RECORDED_NAME = "quant-recorded-fp8ignore-{version}.json"
#: name, capability, SM count (tests/data/gpus/gpus.toml): SM 8.9 (CUTLASS) and 9.0 (DeepGEMM blocks)
GPUS: tuple[tuple[str, tuple[int, int], int], ...] = (
    ("RTX 4090", (8, 9), 128),
    ("H100", (9, 0), 132),
)
TPS = (1,)
#: recorded with DeepGEMM present on SM 9.0 and 10.x, as vLLM's CUDA wheel vendors it (as the fp8 set)
DEEP_GEMM = (9, 10)
VALUE_ONLY_KERNELS = ("static_scaled_fp8_quant",)

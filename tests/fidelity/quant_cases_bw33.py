"""The Blackwell quantized-weights set (issue 33): the first, ``extra`` and ``modelopt`` sets'
dense checkpoints (GPTQ, AWQ, AutoRound, compressed-tensors W4A16 / W8A16 / W8A8 fp8 / int8 /
NVFP4, ModelOpt FP8 / NVFP4 / MIXED_PRECISION; links to their folders, each with its ``SOURCE``)
and a composed per-tensor compressed-tensors W8A8 fp8 config (``CT-W8A8-FP8-tensor``)
built by vLLM 0.33.0 on B200 (SM 10.0: FlashInfer leads the attention priorities) and RTX 5090
(SM 12.0: FlashAttention under ``auto``, FlashInfer for a ModelOpt checkpoint's fp8 KV cache), TP
1 and 2, each case in a fresh process's state (FlashInfer's shared multi-CTA KV counter dropped
before each: ``engine_start._reset_per_process_caches``), so ``allocated_bytes`` holds the counter
``FlashInferImpl.__init__`` allocates while the model is built, wherever vLLM builds it.

Imported by ``record_quant_weights.py`` (inside the boot environment, no dryboot import) when
``RECORD_SET=bw33``, and by ``test_quant_weights_bw33.py``; vLLM's answers in
``data/weights/quant-recorded-bw33-<version>.json``.
"""

from __future__ import annotations

from pathlib import Path

HERE = Path(__file__).resolve().parent
CONFIGS = HERE / "data" / "weights" / "quant-configs-bw33"
#: the recorded file of a release
RECORDED_NAME = "quant-recorded-bw33-{version}.json"
#: name, capability, SM count (tests/data/gpus/gpus.toml)
GPUS: tuple[tuple[str, tuple[int, int], int], ...] = (
    ("B200", (10, 0), 148),
    ("RTX 5090", (12, 0), 170),
)
TPS = (1, 2)
#: the per-tensor layers' requantization to one scale (``requantize_with_max_scale``) writes fp8
#: values into the tensor vLLM allocates: that kernel is run as a no-op (quant_fakes.VALUE_ONLY;
#: the per-tensor compressed-tensors config)
VALUE_ONLY_KERNELS = ("static_scaled_fp8_quant",)

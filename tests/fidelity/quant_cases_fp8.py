"""The plain fp8 quantized-weight cases (``quant_method: fp8``, vLLM's ``Fp8Config``: block fp8
``[128, 128]`` as Qwen's published FP8 checkpoints ship it): a dense model (Qwen3-32B-FP8) and an
MoE model (Qwen3-30B-A3B-FP8), two composed per-tensor Qwen3-8B configs, after
``process_weights_after_loading`` per GPU; the composed GLM-4.5 block config (recorded on H100 for
0.33.0, whose moe-set rows fail without DeepGEMM); the published MiniMax-M2.5, DeepSeek-V3 and
Kimi-K2-Instruct (dense MLA) and DeepSeek-V3.2 (sparse MLA, refused) configs (their rows are
optional: recorded on the GPUs and TPs ``RECORD_GPUS`` / ``RECORD_TPS`` name, each config in a process
of its own: a DeepSeek-V3.2 case leaves later cases' rotary tables in float32, 16 MiB more for
Kimi-K2 at TP 2).

Imported by ``record_quant_weights.py`` (inside the boot environment, no dryboot import: this
module imports nothing of dryboot) when ``RECORD_SET=fp8``, and by ``test_weights_fp8_post.py``.
Its configs live in ``data/weights/quant-configs-fp8/`` (each with its ``SOURCE``), vLLM's answers in
``data/weights/quant-recorded-fp8-<version>.json``.
"""

from __future__ import annotations

from pathlib import Path

import quant_case_gpus

HERE = Path(__file__).resolve().parent
CONFIGS = HERE / "data" / "weights" / "quant-configs-fp8"
#: the recorded file of a release
RECORDED_NAME = "quant-recorded-fp8-{version}.json"
#: SM 8.6 (Marlin FP8, weight-only), 8.9, 9.0, 10.0, 12.0 and 12.1 (GB10: no SM count published;
#: 48 stands in, the fp8 layouts recorded here hold no per-SM workspace)
GPUS = (*quant_case_gpus.SM86_TO_120, ("GB10", (12, 1), 48))
TPS = quant_case_gpus.TPS
#: the architectures recorded with DeepGEMM present, as vLLM's CUDA wheel vendors it
#: (quant_fakes.deep_gemm_stand_in): SM 9.0 and 10.x, where vLLM then takes it for the block layers.
#: SM 12.x (which vLLM 0.27-0.33 also hand to DeepGEMM where it loads) is recorded without it, as
#: the public SM 12.x boots of test_quant_weights_moe.py log it
DEEP_GEMM = (9, 10)
#: the per-tensor layers' requantization to one scale (``requantize_with_max_scale``) writes fp8
#: values into the tensor vLLM allocates: that kernel is run as a no-op (quant_fakes.VALUE_ONLY)
VALUE_ONLY_KERNELS = ("static_scaled_fp8_quant",)
#: recorded only when ``RECORD_GPUS`` names it: SM 8.0 (the A100), the per-tensor Qwen3-8B configs on 0.29.0 /
#: 0.30.0 (CUTLASS's SM 8.9 layout below SM 8.9, as on the RTX 3090)
EXTRA_GPUS = (("A100-80GB", (8, 0), 108),)

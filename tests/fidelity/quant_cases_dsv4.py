"""The DeepSeek-V4 quantized-weight cases: the architecture's tiny config
(``data/architectures/DeepseekV4ForCausalLM.json``) under the published DeepSeek-V4-Flash
``quantization_config`` (fp8 block 128x128 linear layers, ``expert_dtype: fp4`` experts).

Imported by ``record_quant_weights.py`` (inside the boot environment, no dryboot import) when
``RECORD_SET=dsv4``, and by ``test_weights_dsv4.py``. Its configs live in
``data/weights/quant-configs-dsv4/``, vLLM's answers in ``data/weights/quant-recorded-dsv4-<version>.json``.
"""

from __future__ import annotations

from pathlib import Path

HERE = Path(__file__).resolve().parent
CONFIGS = HERE / "data" / "weights" / "quant-configs-dsv4"
RECORDED_NAME = "quant-recorded-dsv4-{version}.json"
#: name, capability, SM count (tests/data/gpus/gpus.toml)
GPUS: tuple[tuple[str, tuple[int, int], int], ...] = (
    ("RTX 3090", (8, 6), 82),
    ("A100-80GB", (8, 0), 108),
    ("RTX 4090", (8, 9), 128),
    ("H100", (9, 0), 132),
)
TPS = (1, 2, 4, 8)
#: vLLM builds DeepSeek-V4 only with an fp8 KV cache (deepseek_v4/attention.py)
EXTRA_ARGV = ("--kv-cache-dtype", "fp8", "--kernel-config", '{"enable_jit_warmup": false}')

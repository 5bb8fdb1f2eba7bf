"""The Nemotron-3 latent-MoE set of quantized-weight cases: a tiny config composed from the
published Nemotron-3 Ultra one (``layers_block_type``, ``moe_latent_size``) under the published
Nemotron-3 Super ModelOpt ``hf_quant_config.json`` files (NVFP4, FP8; no ``exclude_modules``: the
latent projections ``fc1_latent_proj`` / ``fc2_latent_proj`` are quantized with the rest).

Imported by ``record_quant_weights.py`` (inside the boot environment, no dryboot import: this
module imports nothing of dryboot) when ``RECORD_SET=nemlatent``, and by
``test_weights_published_defaults.py``. Its configs live in
``data/weights/quant-configs-nemlatent/`` (each with its ``SOURCE``), vLLM's answers in
``data/weights/quant-recorded-nemlatent-<version>.json``.
"""

from __future__ import annotations

from pathlib import Path

HERE = Path(__file__).resolve().parent
CONFIGS = HERE / "data" / "weights" / "quant-configs-nemlatent"
#: the recorded file of a release
RECORDED_NAME = "quant-recorded-nemlatent-{version}.json"
#: name, capability, SM count (tests/data/gpus/gpus.toml): SM 9.0 (NVFP4 through Marlin) and 10.0
GPUS: tuple[tuple[str, tuple[int, int], int], ...] = (("H100", (9, 0), 132), ("B200", (10, 0), 148))
TPS = (1, 2)
#: ModelOpt FP8 experts requantize ``w13`` to one scale with ``static_scaled_fp8_quant`` (values only)
VALUE_ONLY_KERNELS = ("static_scaled_fp8_quant",)

"""The Llama-4 set of quantized-weight cases: the text model (``Llama4ForCausalLM``) under
compressed-tensors W4A16 and W8A8 fp8, AWQ, GPTQ and AutoRound, its dense MLPs, shared experts and
routed experts quantized as the checkpoint says (the router never: vLLM builds it with ``quant_config=None``).
Each config is a tiny Llama-4 text config (the published Scout ``text_config`` with its sizes
shrunk: 4 layers, MoE on every second one, 4 experts), a tiny wrapper
(``Llama4ForConditionalGeneration``) or the published Scout / Maverick ``text_config`` at its real
size, with a published sibling's ``quantization_config`` (its ``SOURCE``), or a ModelOpt
``hf_quant_config.json`` (FP8, NVFP4; recorded on Blackwell too, :data:`EXTRA_GPUS`).

Its B200 ModelOpt NVFP4 MoE rows are recorded with ``RECORD_MXFP4_NATIVE=1`` (FlashInfer's block-scale
interleave of the TRT-LLM experts by shape; without it the oracle fails there).

Imported by ``record_quant_weights.py`` (inside the boot environment, no dryboot import: this
module imports nothing of dryboot) when ``RECORD_SET=llama4``, and by
``test_quant_weights_llama4.py``. Its configs live in ``data/weights/quant-configs-llama4/``,
vLLM's answers in ``data/weights/quant-recorded-llama4-<version>.json``.
"""

from __future__ import annotations

from pathlib import Path

HERE = Path(__file__).resolve().parent
CONFIGS = HERE / "data" / "weights" / "quant-configs-llama4"
#: the recorded file of a release
RECORDED_NAME = "quant-recorded-llama4-{version}.json"

#: name, capability, SM count (tests/data/gpus/gpus.toml): SM 8.6, 8.9 and 9.0
GPUS: tuple[tuple[str, tuple[int, int], int], ...] = (
    ("RTX 3090", (8, 6), 82),
    ("RTX 4090", (8, 9), 128),
    ("H100", (9, 0), 132),
)
TPS = (1, 2)
#: recorded only when ``RECORD_GPUS`` names them: Blackwell (SM 10.0, 12.0), where vLLM's ModelOpt
#: kernels differ
EXTRA_GPUS: tuple[tuple[str, tuple[int, int], int], ...] = (("B200", (10, 0), 148), ("RTX 5090", (12, 0), 170))
#: kernels that only write values into tensors vLLM allocated (``quant_fakes.VALUE_ONLY``): ModelOpt
#: FP8 experts requantize ``w13`` to one scale with ``static_scaled_fp8_quant``
VALUE_ONLY_KERNELS = ("static_scaled_fp8_quant",)

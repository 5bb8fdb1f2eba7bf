"""The Kimi-K3 MXFP4 quantized-weight cases: the published moonshotai/Kimi-K3 config (its
``text_config.quantization_config``: compressed-tensors ``mxfp4-pack-quantized``, which vLLM's
``KimiK3ForConditionalGenerationConfig`` rewrites to ``quant_method`` ``mxfp4``: ``Mxfp4Config`` /
``Mxfp4MoEMethod`` for the routed experts, every linear layer unquantized) and a tiny stand-in
(the tiny Kimi-K3 verification config under the same ``quantization_config``), with the MoonViT
tower (unquantized).

Imported by ``record_quant_weights.py`` (inside the boot environment, no dryboot import) when
``RECORD_SET=kimik3``, and by ``test_weights_kimik3_mxfp4.py``. Its configs live in
``data/weights/quant-configs-kimik3/``, vLLM's answers in ``data/weights/quant-recorded-kimik3-<version>.json``
(``RECORD_ARGV='["--enable-expert-parallel"]'`` adds the expert-parallel cases).
"""

from __future__ import annotations

from pathlib import Path

HERE = Path(__file__).resolve().parent
CONFIGS = HERE / "data" / "weights" / "quant-configs-kimik3"
RECORDED_NAME = "quant-recorded-kimik3-{version}.json"
#: name, capability, SM count (tests/data/gpus/gpus.toml): Hopper (Humming on 0.32+, else Marlin)
#: and Ampere (Marlin). Blackwell (SM 10.x) is refused by name, not recorded: a CUDA install picks
#: FlashInfer TRT-LLM there (absent from the boot environments) and Kimi-K3's Blackwell latent-MoE
#: tail (``ops/latent_moe_tail.py``) cannot be built on the stand-in GPU
GPUS: tuple[tuple[str, tuple[int, int], int], ...] = (
    ("A100-80GB", (8, 0), 108),
    ("H100", (9, 0), 132),
)
TPS = (8,)
#: the tower moved as on a GPU (``record_weights.py``'s ``RECORD_WEIGHTS_GPU_CAST``; 0.30+ skip it on
#: the meta device): under the MXFP4 config (not ``CompressedTensorsConfig``, which Kimi-K3's
#: ``_maybe_ignore_quant_config`` drops) the wrapper moves its tower to the device without a dtype
#: cast, so the float32 temporal table, built on the host, lands on the GPU as float32 (skipped, it
#: would stay on the host and go uncounted)
GPU_CAST = True

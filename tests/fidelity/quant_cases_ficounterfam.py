"""FlashInfer's KV counter in the families whose weights walk is their own module's (issue 33):
DBRX, Step-5, Dots3-Note, Moondream 3, MiMo-V2-Flash, AXK1 and Bailing-V2.5, built by vLLM 0.33.0
on B200 (SM 10.0, FlashInfer leads the attention priorities), on RTX 4090 (SM 8.9) with
``RECORD_ARGV='["--kv-cache-dtype", "fp8"]'`` (FlashInfer takes an fp8 cache there) and on H100
(FlashAttention: no counter). The configs are
the tiny stand-ins that verify each architecture's KV cache (``data/architectures/<Architecture>.json``,
linked, with the tokenizer files a processor reads): no published config of these families is
small enough to build here. ``MiMoV2Flash-growth`` is a stand-in of dryboot's (MiMo-V2-Flash's tiny
config with key and value head sizes 128 on both layer kinds, no attention sinks, 16 sliding-window
heads after the full layer's 8): every layer selects its backend, so FlashInfer's shared counter
grows from the full layer's need to the sliding layers'. ``built_allocated_bytes`` counts every
storage made while the model is built, FlashInfer's shared multi-CTA KV counter included.

Imported by ``record_quant_weights.py`` (inside the boot environment, no dryboot import) when
``RECORD_SET=ficounterfam``, and by ``test_weights_flashinfer_counter_families.py``; vLLM's answers in
``data/weights/quant-recorded-ficounterfam-<version>.json``.
"""

from __future__ import annotations

from pathlib import Path

HERE = Path(__file__).resolve().parent
CONFIGS = HERE / "data" / "weights" / "quant-configs-ficounterfam"
RECORDED_NAME = "quant-recorded-ficounterfam-{version}.json"
#: name, capability, SM count (tests/data/gpus/gpus.toml)
GPUS: tuple[tuple[str, tuple[int, int], int], ...] = (("B200", (10, 0), 148),)
TPS = (1,)
#: recorded when ``RECORD_GPUS`` names them: RTX 4090 with an fp8 KV cache (``RECORD_ARGV``), H100
#: under ``auto`` (FlashAttention: the figure without the counter)
EXTRA_GPUS: tuple[tuple[str, tuple[int, int], int], ...] = (("RTX 4090", (8, 9), 128), ("H100", (9, 0), 132))
#: a fixed scheduler budget (it sizes the counter)
EXTRA_ARGV = ("--max-num-batched-tokens", "8192")

"""The MLA prefill backend set (issue 33): tiny stand-in DeepSeek-V2 configs (no published config has
these MLA head dims; ``data/architectures/DeepseekV2ForCausalLM.json`` with its
``(qk_nope_head_dim, qk_rope_head_dim, v_head_dim)`` changed, said in each ``SOURCE``) built by vLLM on
H100 (SM 9.0) and B200 (SM 10.0) at TP 1 and 2: (128, 64, 128) and (64, 64, 128) take FLASH_ATTN's
prefill on both GPUs (no workspace), (192, 64, 256) TRT-LLM ragged's on B200 (394 MiB reserved from
the worker's workspace manager while the model is built), (96, 32, 96) none (vLLM raises).
``built_allocated_bytes`` counts every storage made while building, the workspace and CUTLASS MLA's
module global included.

Imported by ``record_quant_weights.py`` (inside the boot environment, no dryboot import) when
``RECORD_SET=mlapf``, and by ``test_weights_mla_prefill.py``; vLLM's answers in
``data/weights/quant-recorded-mlapf-<version>.json``.
"""

from __future__ import annotations

from pathlib import Path

HERE = Path(__file__).resolve().parent
CONFIGS = HERE / "data" / "weights" / "quant-configs-mlapf"
#: the recorded file of a release
RECORDED_NAME = "quant-recorded-mlapf-{version}.json"
#: name, capability, SM count (tests/data/gpus/gpus.toml)
GPUS: tuple[tuple[str, tuple[int, int], int], ...] = (
    ("H100", (9, 0), 132),
    ("B200", (10, 0), 148),
)
TPS = (1, 2)
#: the worker's workspace manager is set up before each case (``Worker.init_device``)
WORKSPACE = True

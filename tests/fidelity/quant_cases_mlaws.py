"""The CUTLASS MLA workspace set (issue 33): the published unquantized GLM-4.7-Flash config (MLA
attention; a link to ``data/weights/configs/``, with its ``SOURCE``) built by vLLM on H100 (SM 9.0),
B200 (SM 10.0) and RTX 5090 (SM 12.0) at TP 1 and 2, and on B200 with ``--attention-backend``
named (``RECORD_ARGV='["--attention-backend", "FLASHINFER_MLA"]'`` / ``CUTLASS_MLA``).
``built_allocated_bytes`` counts every storage made while the model is built, module globals
included: the 128 MiB ``g_sm100_workspace`` that ``v1/attention/backends/mla/cutlass_mla.py``
allocates when the MLA selector imports it (``engine_start.py`` executes that module with its
"cuda" tensors on the meta device, and each case imports it anew).

Imported by ``record_quant_weights.py`` (inside the boot environment, no dryboot import) when
``RECORD_SET=mlaws``, and by ``test_weights_cutlass_mla.py``; vLLM's answers in
``data/weights/quant-recorded-mlaws-<version>.json``.
"""

from __future__ import annotations

from pathlib import Path

HERE = Path(__file__).resolve().parent
CONFIGS = HERE / "data" / "weights" / "quant-configs-mlaws"
#: the recorded file of a release
RECORDED_NAME = "quant-recorded-mlaws-{version}.json"
#: name, capability, SM count (tests/data/gpus/gpus.toml)
GPUS: tuple[tuple[str, tuple[int, int], int], ...] = (
    ("H100", (9, 0), 132),
    ("B200", (10, 0), 148),
    ("RTX 5090", (12, 0), 170),
)
TPS = (1, 2)
#: the worker's workspace manager is set up before each case (``Worker.init_device``: the MLA
#: backends' prefill workspace, which SM 10.x's need at construction)
WORKSPACE = True

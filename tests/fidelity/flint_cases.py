"""Flint (``FlintForCausalLM``, ``vllm/models/flint``, vLLM 0.33.0): the flag sets and GPUs whose
engine start ``record_flint.py`` records (``data/flint/vllm-<release>.json``) and
``test_flint.py`` checks dryboot against.

Flint's layers assert FlashInfer attention, which vLLM 0.33.0 picks for their sinks on SM 10.x
only. The cases run the oracle as a B200 / B300 (``tests/data/gpus/run_oracle_as.py``, its
``cubin`` arm) at TP 2, 4 and 8 (at TP 1 the class imports its CuTe DSL decode kernels,
``nvidia-cutlass-dsl``, which the oracle's environment lacks), and as an H100 (SM 9.0: FLASH_ATTN,
the class asserts; FLASHINFER named: served, TRT-LLM's XQA decode takes the sinks) on the
architecture's tiny config (``data/architectures/FlintForCausalLM.json``, which
``test_release_architectures.py`` also records under the standard flag sets on the default H200),
a stand-in of the checkpoint's layout (sliding and full layers, ``no_rope_layer_indices``) at a
small size.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parent
DATA = HERE / "data" / "flint"
RELEASES = ("0.33.0",)
TINY = HERE / "data" / "architectures" / "FlintForCausalLM.json"
#: config name -> the keys it sets over the tiny config
CONFIGS: dict[str, dict[str, Any]] = {
    "tiny": {},
    "window128": {"sliding_window": 128},
    "kv8": {"num_key_value_heads": 8},
}

_MEM = ["--kv-cache-memory-bytes", "1000000000", "--max-model-len", "8192"]

#: case id -> (config name, flags, GPU)
CASES: dict[str, tuple[str, list[str], str]] = {
    "b200-tp2": ("tiny", [*_MEM, "-tp", "2"], "B200"),
    "b200-tp4": ("tiny", [*_MEM, "-tp", "4"], "B200"),
    "b200-tp8": ("tiny", [*_MEM, "-tp", "8"], "B200"),
    "b300-tp2": ("tiny", [*_MEM, "-tp", "2"], "B300"),
    "b200-tp2-w128": ("window128", [*_MEM, "-tp", "2"], "B200"),
    "b200-tp2-kv8": ("kv8", [*_MEM, "-tp", "2"], "B200"),
    "b200-tp2-block32": ("tiny", [*_MEM, "-tp", "2", "--block-size", "32"], "B200"),
    "b200-tp2-auto": ("tiny", ["--kv-cache-memory-bytes", "100000000", "--max-model-len", "-1", "-tp", "2"], "B200"),
    "b200-tp2-fp8": ("tiny", [*_MEM, "-tp", "2", "--kv-cache-dtype", "fp8"], "B200"),
    "h100-tp2": ("tiny", [*_MEM, "-tp", "2"], "H100"),
    "h100-tp2-flashinfer": ("tiny", [*_MEM, "-tp", "2", "--attention-backend", "FLASHINFER"], "H100"),
}


def config(name: str) -> dict[str, Any]:
    """The config ``name`` (the tiny config with its keys set)."""
    doc: dict[str, Any] = json.loads(TINY.read_text())
    return {**doc, **CONFIGS[name]}


def record_path(version: str) -> Path:
    """The record of ``version``'s engine start on :data:`CASES`."""
    return DATA / f"vllm-{version}.json"


def recorded(version: str) -> dict[str, dict[str, Any]]:
    """The recorded answers of ``version`` (case id -> row)."""
    rows: dict[str, dict[str, Any]] = json.loads(record_path(version).read_text())["cases"]
    return rows

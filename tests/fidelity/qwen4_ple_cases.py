"""The tiny Qwen4-Exp configs with PLE layers (``ple_layer_ids``) and the flags each is started with,
recorded on vLLM 0.33.0 by ``record_qwen4_ple.py`` (``data/qwen4-ple/vllm-0.33.0.json``) and checked
by ``test_qwen4_ple.py``.

Configs: ``qwen4-ple`` (``data/refused-0.33/configs/``: one PLE layer, on decoder layer 1, a Gated
DeltaNet layer) and, in ``data/qwen4-ple/configs/`` (tiny stand-ins, not published checkpoints):
``qwen4-ple2`` (``ple_layer_ids`` [2, 1]: two Gated DeltaNet layers, listed out of order),
``qwen4-ple-attn`` ([1, 4]: layer 4 is the attention layer, which transformers' config class refuses),
``qwen4-ple-range`` ([2, 9]: 9 is past the 4 layers), ``qwen4-ple-heads`` (``ple_embed_dim`` 200, not a
multiple of the 16 n-gram heads), ``qwen4-ple-wide``
(hidden size 512: the PLE state's page, 9 x 2048 x 2 B, is larger than the Gated DeltaNet state's
and sizes the attention block), ``qwen4-ple-k3`` (``ple_conv_kernel_size`` 3, ``ngram_size`` 2,
``hc_count`` 2), ``qwen4-vl-ple`` (the wrapper, ``data/refused-0.33/configs/qwen4-vl-plain.json``
with PLE on layer 2). Every case turns off the n-gram table's CPU offload (``--engram-config``), which needs
UVA that the oracle's faked GPU lacks; the KV caches do not depend on it (``Qwen4ExpPLELayer``'s
spec reads neither the offload nor the table).
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parent
DATA = HERE / "data" / "qwen4-ple"
VERSION = "0.33.0"
RECORD = DATA / f"vllm-{VERSION}.json"
NO_OFFLOAD = ["--engram-config", '{"cpu_offload": false}']
BASE = ["--kv-cache-memory-bytes", "4G", "--max-model-len", "8192", *NO_OFFLOAD]
NGRAM = '{"method": "ngram", "num_speculative_tokens": 3, "prompt_lookup_max": 3}'

#: case id -> (config name, flags)
CASES: dict[str, tuple[str, list[str]]] = {
    "ple": ("qwen4-ple", BASE),
    "ple-tp2": ("qwen4-ple", [*BASE, "--tensor-parallel-size", "2"]),
    "ple-tp4": ("qwen4-ple", [*BASE, "--tensor-parallel-size", "4"]),
    "ple-len2048": ("qwen4-ple", ["--kv-cache-memory-bytes", "1G", "--max-model-len", "2048", *NO_OFFLOAD]),
    "ple-autofit": ("qwen4-ple", ["--kv-cache-memory-bytes", "64M", "--max-model-len", "-1", *NO_OFFLOAD]),
    "ple-fp8": ("qwen4-ple", [*BASE, "--kv-cache-dtype", "fp8"]),
    "ple-mamba-fp32": ("qwen4-ple", [*BASE, "--mamba-cache-dtype", "float32"]),
    "ple-block32": ("qwen4-ple", [*BASE, "--block-size", "32"]),
    "ple-block256": ("qwen4-ple", [*BASE, "--block-size", "256"]),
    "ple-prefix": ("qwen4-ple", [*BASE, "--enable-prefix-caching"]),
    "ple-ngram": ("qwen4-ple", [*BASE, "--speculative-config", NGRAM]),
    "ple-pp2": ("qwen4-ple", [*BASE, "--pipeline-parallel-size", "2"]),
    "ple2": ("qwen4-ple2", BASE),
    "ple2-tp2-fp8": ("qwen4-ple2", [*BASE, "--tensor-parallel-size", "2", "--kv-cache-dtype", "fp8"]),
    "ple2-ngram": ("qwen4-ple2", [*BASE, "--speculative-config", NGRAM]),
    "ple-attn": ("qwen4-ple-attn", BASE),
    "ple-range": ("qwen4-ple-range", BASE),
    "ple-heads": ("qwen4-ple-heads", BASE),
    "ple-wide": ("qwen4-ple-wide", BASE),
    "ple-wide-tp2": ("qwen4-ple-wide", [*BASE, "--tensor-parallel-size", "2"]),
    "ple-wide-ngram": ("qwen4-ple-wide", [*BASE, "--speculative-config", NGRAM]),
    "ple-wide-mamba-fp32": ("qwen4-ple-wide", [*BASE, "--mamba-cache-dtype", "float32"]),
    "ple-k3": ("qwen4-ple-k3", BASE),
    "vl-ple": ("qwen4-vl-ple", BASE),
    "vl-ple-tp2-lm-only": ("qwen4-vl-ple", [*BASE, "--tensor-parallel-size", "2", "--language-model-only"]),
    "ple-k3-len4096": ("qwen4-ple-k3", ["--kv-cache-memory-bytes", "2G", "--max-model-len", "4096", *NO_OFFLOAD]),
}


#: other GPUs (the oracle as that row of ``tests/data/gpus/gpus.toml``, through
#: ``tests/data/gpus/run_oracle_as.py``; the cases above run as its default H200): case id ->
#: (config name, flags, GPU); recorded into :data:`GPU_RECORD`
GPU_CASES: dict[str, tuple[str, list[str], str]] = {
    "ple-a100": ("qwen4-ple", BASE, "A100-80GB"),
    "ple-a100-ngram": ("qwen4-ple", [*BASE, "--speculative-config", NGRAM], "A100-80GB"),
    "ple-wide-a100-tp2": ("qwen4-ple-wide", [*BASE, "--tensor-parallel-size", "2"], "A100-80GB"),
    "ple-4090": ("qwen4-ple", BASE, "RTX 4090"),
    "ple-b200": ("qwen4-ple", BASE, "B200"),
    "ple-wide-b200-fp8": ("qwen4-ple-wide", [*BASE, "--kv-cache-dtype", "fp8"], "B200"),
}
GPU_RECORD = DATA / f"vllm-{VERSION}-gpus.json"
#: the release before ``--engram-config`` (and the n-gram embedding it places): its cases run without it
NO_ENGRAM = "0.29.0"


def cases_for(version: str) -> dict[str, tuple[str, list[str]]]:
    """:data:`CASES` as ``version`` takes them: on :data:`NO_ENGRAM` without ``--engram-config``."""
    if version != NO_ENGRAM:
        return dict(CASES)
    return {cid: (name, [a for a in argv if a not in NO_OFFLOAD]) for cid, (name, argv) in CASES.items()}


def config(name: str) -> dict[str, Any]:
    """The tiny config ``name`` (``data/qwen4-ple/configs/``, else ``data/refused-0.33/configs/``)."""
    path = DATA / "configs" / f"{name}.json"
    if not path.exists():
        path = HERE / "data" / "refused-0.33" / "configs" / f"{name}.json"
    data: dict[str, Any] = json.loads(path.read_text())
    return data


def recorded(path: Path = RECORD) -> dict[str, dict[str, Any]]:
    """A release's recorded answers (0.33.0's :data:`RECORD` by default, :data:`GPU_RECORD`, or
    ``vllm-0.32.0.json``), case id -> the oracle's kept fields."""
    doc: dict[str, Any] = json.loads(path.read_text())
    assert path.name.startswith(f"vllm-{doc['vllm']}")
    cases: dict[str, dict[str, Any]] = doc["cases"]
    return cases

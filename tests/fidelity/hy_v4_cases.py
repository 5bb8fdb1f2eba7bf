"""The tiny HY V4 configs (``HYV4ForCausalLM``, vLLM 0.33.0's ``vllm/models/hy_v4``) and the flags
and GPUs each is started with, as ``record_hy_v4.py`` records vLLM's engine start and
``test_hy_v4.py`` checks dryboot against it.

The configs (``data/hy-v4/configs/<name>.json``, written for these tests: no published HY V4
config.json is stored) switch on one thing each: every layer sparse (``hyv4-sparse``: the default
``indexer_types``, full at layers 0 and 1, shared at 2 and 3), the learned sink off
(``hyv4-nosink``), no sparse layer (``hyv4-dense``: ``layer_types`` left out), dense and sparse
layers mixed (``hyv4-mixed``), an explicit ``indexer_types`` (``hyv4-indexers``) and one of the
wrong length (``hyv4-indexers-short``); ``hyv4-defaults`` leaves every other field to ``HYV4Config``;
``hyv4-preview-shape`` is a stand-in with the shape a public description of Hy4-preview gives
(78 layers, hidden 6144, 64 heads, q_lora_rank 2048, 32 indexer heads, 256 experts, all layers
sparse with the default indexer_types: 21 full), not the published file. A case with a GPU runs
the oracle as that row of ``gpus.toml`` (``tests/data/gpus/run_oracle_as.py``); without one, as its default H200.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parent
DATA = HERE / "data" / "hy-v4"
CONFIGS = DATA / "configs"
VERSION = "0.33.0"
#: the releases whose engine start is recorded (``data/hy-v4/vllm-<release>.json``)
RELEASES = ("0.29.0", "0.30.0", "0.31.0", "0.32.0", "0.33.0")
#: the releases that build every layer dense MLA (their transformers renames deepseek_sparse_attention to
#: indexed_attention, which their model file does not take as sparse): ``VersionRules.hy_v4_dense_layers``
DENSE_RELEASES = ("0.29.0", "0.30.0")
RECORD = DATA / f"vllm-{VERSION}.json"

BASE = ["--kv-cache-memory-bytes", "4G", "--max-model-len", "8192"]
FP8 = [*BASE, "--kv-cache-dtype", "fp8"]
MTP = '{"method": "mtp", "num_speculative_tokens": 1}'

#: case id -> (config name, flags, GPU or None: the oracle's default H200)
CASES: dict[str, tuple[str, list[str], str | None]] = {
    "sparse": ("hyv4-sparse", BASE, None),
    "sparse-fp8": ("hyv4-sparse", FP8, None),
    "sparse-fp8-e4m3": ("hyv4-sparse", [*BASE, "--kv-cache-dtype", "fp8_e4m3"], None),
    "sparse-block128": ("hyv4-sparse", [*BASE, "--block-size", "128"], None),
    "sparse-block16": ("hyv4-sparse", [*BASE, "--block-size", "16"], None),
    "sparse-tp2": ("hyv4-sparse", [*BASE, "--tensor-parallel-size", "2"], None),
    "sparse-tp4-fp8": ("hyv4-sparse", [*FP8, "--tensor-parallel-size", "4"], None),
    "sparse-len2048": ("hyv4-sparse", ["--kv-cache-memory-bytes", "1G", "--max-model-len", "2048"], None),
    "sparse-autofit": ("hyv4-sparse", ["--kv-cache-memory-bytes", "200M", "--max-model-len", "-1"], None),
    "sparse-override": ("hyv4-sparse", [*BASE, "--num-gpu-blocks-override", "2000"], None),
    "sparse-backend-fa": ("hyv4-sparse", [*BASE, "--attention-backend", "FLASH_ATTN_MLA_SPARSE"], None),
    # float16: FLASHMLA_SPARSE serves bfloat16 only, so vLLM drops the sinks and selects as without them
    "sparse-fp16": ("hyv4-sparse", [*BASE, "--dtype", "float16"], None),
    "sparse-mtp": ("hyv4-sparse", [*BASE, "--speculative-config", MTP], None),
    "sparse-h100": ("hyv4-sparse", BASE, "H100"),
    "sparse-b200": ("hyv4-sparse", BASE, "B200"),
    "sparse-b200-fp8": ("hyv4-sparse", FP8, "B200"),
    "sparse-5090": ("hyv4-sparse", BASE, "RTX 5090"),
    "sparse-a100": ("hyv4-sparse", BASE, "A100-80GB"),
    "nosink": ("hyv4-nosink", BASE, None),
    "nosink-fp8": ("hyv4-nosink", FP8, None),
    "nosink-b200": ("hyv4-nosink", BASE, "B200"),
    "dense": ("hyv4-dense", BASE, None),
    "dense-fp8": ("hyv4-dense", FP8, None),
    "mixed": ("hyv4-mixed", BASE, None),
    "indexers": ("hyv4-indexers", BASE, None),
    "indexers-pp2": ("hyv4-indexers", [*BASE, "--pipeline-parallel-size", "2"], None),
    "indexers-short": ("hyv4-indexers-short", BASE, None),
    # 0.33.0's model file takes indexed_attention (transformers' name) as sparse too
    "indexed": ("hyv4-indexed", BASE, None),
    # the second stage starts at a shared layer (layers 2 and 3: no indexer cache there)
    "sparse-pp2": ("hyv4-sparse", [*BASE, "--pipeline-parallel-size", "2"], None),
    # HYV4Config's defaults (34 layers, 32 heads, 2816 wide; the default indexer_types)
    "defaults": ("hyv4-defaults", BASE, None),
    "defaults-fp8-tp2": ("hyv4-defaults", [*FP8, "--tensor-parallel-size", "2"], None),
    # the shape of Hy4-preview as described publicly (78 layers, 64 heads, 21 full indexers), not its file
    "preview-shape": ("hyv4-preview-shape", ["--kv-cache-memory-bytes", "16G", "--max-model-len", "65536"], None),
    "preview-shape-tp8-fp8-b200": (
        "hyv4-preview-shape",
        ["--kv-cache-memory-bytes", "16G", "--kv-cache-dtype", "fp8", "--tensor-parallel-size", "8"],
        "B200",
    ),
}


def config(name: str) -> dict[str, Any]:
    """The tiny config ``name`` (``data/hy-v4/configs/<name>.json``)."""
    data: dict[str, Any] = json.loads((CONFIGS / f"{name}.json").read_text())
    return data


def record_path(version: str = VERSION) -> Path:
    return DATA / f"vllm-{version}.json"


def recorded(version: str = VERSION) -> dict[str, dict[str, Any]]:
    """A release's recorded answers (0.33.0's by default), case id -> the record (config, argv, gpu,
    the oracle's kept fields)."""
    doc: dict[str, Any] = json.loads(record_path(version).read_text())
    assert doc["vllm"] == version
    cases: dict[str, dict[str, Any]] = doc["cases"]
    return cases

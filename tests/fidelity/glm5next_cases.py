"""The tiny GLM-5.3-Flash configs (``Glm5NextForCausalLM``, vLLM 0.33.0's ``vllm/models/glm5next``)
that back its plan (``models/glm5next.py``), and the flags and GPU each is started with:
``record_glm5next.py`` records vLLM 0.33.0's engine start (and 0.30.0-0.32.0's), ``test_glm5next.py`` checks dryboot
against it.

The configs (``data/glm5next/configs/<name>.json``) are stand-ins written for these tests: no published
config.json of GLM-5.3-Flash was found. ``flash``: three KDA layers and one indexed (sparse MLA) layer
(the default ``layer_types``: every fourth layer indexed), four heads of each; ``flash-8``: eight
layers, sixteen KDA heads (a state larger than the MLA page at 512 tokens: the block grows);
``flash-kpool32``: ``index_kpool`` 32 (the indexer's kernel blocks 1,024 and 2,048 tokens);
``flash-layers``: six layers whose ``layer_types`` name the indexed ones (one as ``full_attention``);
``flash-triton``: a KDA head of 64 (its prefill runs on Triton: no FlashKDA checkpoint page);
``defaults``: only the keys ``Glm5NextTextConfig`` cannot default (its defaults are the 45-layer model's:
64 KDA heads of 128, a 512-wide latent, ``index_kpool`` 16). A case
with a GPU runs the oracle as that row of ``gpus.toml`` (``tests/data/gpus/run_oracle_as.py``);
without one, as its default H200.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parent
DATA = HERE / "data" / "glm5next"
CONFIGS = DATA / "configs"
VERSION = "0.33.0"
RECORD = DATA / f"vllm-{VERSION}.json"
#: the other releases whose registries list the architecture (``vllm/models/glm5next``), recorded in
#: ``data/glm5next/vllm-<release>.json``: 0.32.0 on every case, 0.30.0 / 0.31.0 (every layer indexed)
#: on the cases without a GPU of their own; all planned
EARLIER = ("0.30.0", "0.31.0", "0.32.0")
#: the releases whose every case is recorded (dryboot plans the architecture there)
EVERY_CASE = (VERSION, "0.32.0")

BASE = ["--kv-cache-memory-bytes", "4G", "--max-model-len", "8192"]

HIDDEN = (
    '{"method": "extract_hidden_states", "num_speculative_tokens": 1, '
    '"draft_model_config": {"hf_config": {"eagle_aux_hidden_state_layer_ids": [0, 3]}}}'
)
NGRAM = '{"method": "ngram", "num_speculative_tokens": 3, "prompt_lookup_max": 4}'

#: case id -> (config name, flags, GPU or None: the oracle's default H200)
CASES: dict[str, tuple[str, list[str], str | None]] = {
    "flash": ("flash", BASE, None),
    "flash-tp2": ("flash", [*BASE, "--tensor-parallel-size", "2"], None),
    "flash-tp4": ("flash", [*BASE, "--tensor-parallel-size", "4"], None),
    "flash-pp2": ("flash", [*BASE, "--pipeline-parallel-size", "2"], None),
    "flash-bf16": ("flash", [*BASE, "--kv-cache-dtype", "bfloat16"], None),
    "flash-fp8": ("flash", [*BASE, "--kv-cache-dtype", "fp8"], None),
    "flash-fp8-e4m3": ("flash", [*BASE, "--kv-cache-dtype", "fp8_e4m3"], None),
    "flash-fp8-e5m2": ("flash", [*BASE, "--kv-cache-dtype", "fp8_e5m2"], None),
    "flash-fp16": ("flash", [*BASE, "--dtype", "float16"], None),
    "flash-fp16-fp8": ("flash", [*BASE, "--dtype", "float16", "--kv-cache-dtype", "fp8"], None),
    "flash-fp16-tp2": ("flash", [*BASE, "--dtype", "float16", "--tensor-parallel-size", "2"], None),
    "flash-block32": ("flash", [*BASE, "--block-size", "32"], None),
    "flash-block64": ("flash", [*BASE, "--block-size", "64"], None),
    "flash-block256": ("flash", [*BASE, "--block-size", "256"], None),
    "flash-block1024": ("flash", [*BASE, "--block-size", "1024"], None),
    "flash-block2048": ("flash", [*BASE, "--block-size", "2048"], None),
    "flash-batched2048": ("flash", [*BASE, "--max-num-batched-tokens", "2048"], None),
    "flash-auto-len": ("flash", ["--kv-cache-memory-bytes", "1G", "--max-model-len", "-1"], None),
    "flash-len2048": ("flash", ["--kv-cache-memory-bytes", "1G", "--max-model-len", "2048"], None),
    "flash-no-prefix": ("flash", [*BASE, "--no-enable-prefix-caching"], None),
    "flash-override": ("flash", [*BASE, "--num-gpu-blocks-override", "1000"], None),
    "flash-small": ("flash", ["--kv-cache-memory-bytes", "20M", "--max-model-len", "8192"], None),
    "flash-ssm-bf16": ("flash", [*BASE, "--mamba-ssm-cache-dtype", "bfloat16"], None),
    # 0.30.0 / 0.31.0 size the hybrid block to a float32 KDA state whatever the flag: 1024 tokens here, 512 by the flag
    "flash-fp8-ssm-bf16": ("flash", [*BASE, "--kv-cache-dtype", "fp8", "--mamba-ssm-cache-dtype", "bfloat16"], None),
    # mamba cache mode all: 0.30.0 / 0.31.0 do not round the chunk-aligned block to index_kpool x 32
    "flash-mode-all": ("flash", [*BASE, "--mamba-cache-mode", "all"], None),
    "flash-hidden": ("flash", [*BASE, "--speculative-config", HIDDEN], None),
    "flash-ngram": ("flash", [*BASE, "--speculative-config", NGRAM], None),
    "flash-h100": ("flash", BASE, "H100"),
    "flash-b200": ("flash", BASE, "B200"),
    "flash-b300": ("flash", BASE, "B300"),
    "flash-b200-bf16": ("flash", [*BASE, "--kv-cache-dtype", "bfloat16"], "B200"),
    "flash-b200-fp8": ("flash", [*BASE, "--kv-cache-dtype", "fp8"], "B200"),
    "flash-b200-tp2": ("flash", [*BASE, "--tensor-parallel-size", "2"], "B200"),
    "flash-b200-block2048": ("flash", [*BASE, "--block-size", "2048"], "B200"),
    "flash-b200-hidden": ("flash", [*BASE, "--speculative-config", HIDDEN], "B200"),
    "flash-rtx5090-bf16": ("flash", [*BASE, "--kv-cache-dtype", "bfloat16"], "RTX 5090"),
    "flash-h100-fp8": ("flash", [*BASE, "--kv-cache-dtype", "fp8"], "H100"),
    "flash-rtx5090": ("flash", BASE, "RTX 5090"),
    "flash-a100": ("flash", BASE, "A100-80GB"),
    "flash-8": ("flash-8", BASE, None),
    "flash-8-tp2": ("flash-8", [*BASE, "--tensor-parallel-size", "2"], None),
    "flash-8-tp4": ("flash-8", [*BASE, "--tensor-parallel-size", "4"], None),
    "flash-8-tp8": ("flash-8", [*BASE, "--tensor-parallel-size", "8"], None),
    "flash-8-pp2": ("flash-8", [*BASE, "--pipeline-parallel-size", "2"], None),
    "flash-8-pp2-tp2": ("flash-8", [*BASE, "--pipeline-parallel-size", "2", "--tensor-parallel-size", "2"], None),
    "flash-8-pp4": ("flash-8", [*BASE, "--pipeline-parallel-size", "4"], None),
    "flash-layers-pp2": ("flash-layers", [*BASE, "--pipeline-parallel-size", "2"], None),
    "flash-layers-pp2-no-prefix": (
        "flash-layers",
        [*BASE, "--pipeline-parallel-size", "2", "--no-enable-prefix-caching"],
        None,
    ),
    "flash-8-no-prefix": ("flash-8", [*BASE, "--no-enable-prefix-caching"], None),
    "flash-8-h100-tp2": ("flash-8", [*BASE, "--tensor-parallel-size", "2"], "H100"),
    "flash-8-b200": ("flash-8", BASE, "B200"),
    "flash-8-b200-tp4": ("flash-8", [*BASE, "--tensor-parallel-size", "4"], "B200"),
    "flash-kpool32": ("flash-kpool32", BASE, None),
    "flash-kpool32-tp2": ("flash-kpool32", [*BASE, "--tensor-parallel-size", "2"], None),
    "flash-layers": ("flash-layers", BASE, None),
    "flash-triton": ("flash-triton", BASE, None),
    "defaults": ("defaults", ["--kv-cache-memory-bytes", "8G", "--max-model-len", "65536"], None),
    "defaults-tp4": ("defaults", ["--kv-cache-memory-bytes", "8G", "--max-model-len", "65536", "-tp", "4"], None),
    "defaults-b200-tp8": (
        "defaults",
        ["--kv-cache-memory-bytes", "8G", "--max-model-len", "65536", "-tp", "8"],
        "B200",
    ),
}


DEFAULTS_ARGV = ["--kv-cache-memory-bytes", "8G", "--max-model-len", "65536"]
#: vLLM 0.30.0 / 0.31.0's dense MLA reading of ``defaults`` (``index_topk`` left to their config class,
#: ``None``) under more flags than ``defaults`` / ``defaults-tp4`` (default GPU), recorded on those releases
#: alone into ``data/glm5next/dense-<release>.json`` (``RECORD_GLM5NEXT_DENSE=1 record_glm5next.py``)
DENSE_CASES: dict[str, tuple[str, list[str], str | None]] = {
    "defaults-pp2": ("defaults", [*DEFAULTS_ARGV, "--pipeline-parallel-size", "2"], None),
    "defaults-tp2-pp2": ("defaults", [*DEFAULTS_ARGV, "-tp", "2", "--pipeline-parallel-size", "2"], None),
    "defaults-no-prefix": ("defaults", [*DEFAULTS_ARGV, "--no-enable-prefix-caching"], None),
}
DENSE_RELEASES = ("0.30.0", "0.31.0")


def dense_record_path(version: str) -> Path:
    return DATA / f"dense-{version}.json"


def dense_recorded(version: str) -> dict[str, dict[str, Any]]:
    doc: dict[str, Any] = json.loads(dense_record_path(version).read_text())
    assert doc["vllm"] == version
    cases: dict[str, dict[str, Any]] = doc["cases"]
    return cases


def config(name: str) -> dict[str, Any]:
    data: dict[str, Any] = json.loads((CONFIGS / f"{name}.json").read_text())
    return data


def record_path(version: str = VERSION) -> Path:
    return DATA / f"vllm-{version}.json"


def cases_for(version: str) -> dict[str, tuple[str, list[str], str | None]]:
    """The cases recorded on ``version``: every one on :data:`EVERY_CASE`, the default GPU's on the others."""
    return CASES if version in EVERY_CASE else {k: v for k, v in CASES.items() if v[2] is None}


def recorded(version: str = VERSION) -> dict[str, dict[str, Any]]:
    doc: dict[str, Any] = json.loads(record_path(version).read_text())
    assert doc["vllm"] == version
    cases: dict[str, dict[str, Any]] = doc["cases"]
    return cases


KDA_ARGV = [*BASE, "--block-size", "1024"]
#: KDA layers beside indexed ones (``flash-layers``: vLLM 0.30.0's ``_get_kv_cache_groups_glm5_next``) under
#: pipeline parallelism: each stage's KDA layers share slots with its MLA layers
#: (``_pp_balanced_mamba_group_count``), recorded on 0.30.0 / 0.31.0 alone into
#: ``data/glm5next/kdapp-<release>.json`` (``RECORD_GLM5NEXT_KDAPP=1 record_glm5next.py``); a block of 1,024 tokens
#: (the default 512's tail ring page exceeds the indexer key cache's: ``flash-layers``' AssertionError)
KDA_PP_CASES: dict[str, tuple[str, list[str], str | None]] = {
    "layers-b1024": ("flash-layers", KDA_ARGV, None),
    "layers-b1024-pp2": ("flash-layers", [*KDA_ARGV, "--pipeline-parallel-size", "2"], None),
    "layers-b1024-pp3": ("flash-layers", [*KDA_ARGV, "--pipeline-parallel-size", "3"], None),
    "layers-b1024-pp4": ("flash-layers", [*KDA_ARGV, "--pipeline-parallel-size", "4"], None),
    "layers-b2048-pp2": ("flash-layers", [*BASE, "--block-size", "2048", "--pipeline-parallel-size", "2"], None),
    "layers-b1024-pp2-no-prefix": (
        "flash-layers",
        [*KDA_ARGV, "--pipeline-parallel-size", "2", "--no-enable-prefix-caching"],
        None,
    ),
}
KDA_PP_RELEASES = ("0.30.0", "0.31.0")


def kdapp_record_path(version: str) -> Path:
    return DATA / f"kdapp-{version}.json"


def kdapp_recorded(version: str) -> dict[str, dict[str, Any]]:
    doc: dict[str, Any] = json.loads(kdapp_record_path(version).read_text())
    assert doc["vllm"] == version
    cases: dict[str, dict[str, Any]] = doc["cases"]
    return cases

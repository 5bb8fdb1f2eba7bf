"""Sparse MLA models (DeepSeek-V3.2 style: an indexer per layer, ``index_topk``) on an H200 (SM 9.0) where
vLLM serves them with ``FLASHINFER_MLA_SPARSE_SM90`` (issue 33): ``record_sm90_sparse_mla.py`` records each
release's engine start through ``tests/data/gpus/run_oracle_as.py H200``, ``test_sm90_sparse_mla.py`` checks
dryboot's ``plan --gpu H200`` against the records (KV geometry and tokens at a pinned pool).

``FLASHINFER_MLA_SPARSE_SM90`` (0.30+: ``v1/attention/backends/mla/flashinfer_mla_sparse_sm90.py``) takes a
bfloat16 model with ``kv_lora_rank`` 512 and a rope of 0 or 64 (head 512 or 576), an ``auto`` / bfloat16 /
fp8 / fp8_e4m3 cache stored as plain rows of the head (``[num_blocks, block_size, head_size]``: an fp8 cache
one byte a value, 576 bytes a DeepSeek-V3.2 token), ``MultipleOf(64)`` kernel blocks. vLLM picks it by
default on SM 9.x for a 576-wide head only where the other sparse backends refuse the cache (fp8_e4m3:
what ``auto`` becomes for a ModelOpt checkpoint with an FP8 KV cache), and when named. The indexer's key
cache (``DEEPSEEK_V32_INDEXER``, 64-token kernel pages) sits beside it.

The configs: NVIDIA's published ModelOpt NVFP4 checkpoints (``quant_cases_nvfp4smla.py``'s
DeepSeek-V3.2-NVFP4 and GLM-5-NVFP4, ``kv_cache_quant_algo: FP8``) at TP 8, and the tiny stand-ins of
``data/architectures/`` (DeepSeek-V3.2, GLM-5) at TP 1.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parent
ARCH = HERE / "data" / "architectures"
#: the published ModelOpt configs (links into ``tests/data/configs/public/``, each with its SOURCE)
PUBLISHED = HERE / "data" / "weights" / "quant-configs-nvfp4smla"
DATA = HERE / "data" / "sm90-sparse-mla"
#: 0.29.0: the control (no FLASHINFER_MLA_SPARSE_SM90: fp8_e4m3 has no sparse MLA backend, the name is unknown)
RELEASES = ("0.29.0", "0.30.0", "0.31.0", "0.32.0", "0.33.0")
GPU = "H200"
BASE = ["--kv-cache-memory-bytes", "4G", "--max-model-len", "8192"]
TP8 = ["--tensor-parallel-size", "8"]
SM90 = ["--attention-backend", "FLASHINFER_MLA_SPARSE_SM90"]

#: config name -> architecture file (tiny stand-in) or ``None`` (a published config directory)
CONFIGS: dict[str, str | None] = {
    "nvidia--DeepSeek-V3.2-NVFP4": None,
    "nvidia--GLM-5-NVFP4": None,
    "dsv32": "DeepseekV32ForCausalLM",
    "glm5": "GlmMoeDsaForCausalLM",
}
#: (config, case suffix, flags)
CASES: tuple[tuple[str, str, list[str]], ...] = (
    ("nvidia--DeepSeek-V3.2-NVFP4", "tp8-auto", TP8),
    ("nvidia--DeepSeek-V3.2-NVFP4", "tp8-bfloat16", [*TP8, "--kv-cache-dtype", "bfloat16"]),
    ("nvidia--DeepSeek-V3.2-NVFP4", "tp8-sm90", [*TP8, *SM90]),
    ("nvidia--DeepSeek-V3.2-NVFP4", "tp8-sm90-bfloat16", [*TP8, *SM90, "--kv-cache-dtype", "bfloat16"]),
    ("nvidia--GLM-5-NVFP4", "tp8-auto", TP8),
    ("nvidia--GLM-5-NVFP4", "tp8-sm90-bfloat16", [*TP8, *SM90, "--kv-cache-dtype", "bfloat16"]),
    ("dsv32", "fp8_e4m3", ["--kv-cache-dtype", "fp8_e4m3"]),
    ("dsv32", "fp8", ["--kv-cache-dtype", "fp8"]),
    ("dsv32", "auto", []),
    ("dsv32", "sm90-auto", SM90),
    ("dsv32", "sm90-fp8", [*SM90, "--kv-cache-dtype", "fp8"]),
    ("dsv32", "sm90-fp8_e4m3", [*SM90, "--kv-cache-dtype", "fp8_e4m3"]),
    ("dsv32", "fp8_e4m3-block128", ["--kv-cache-dtype", "fp8_e4m3", "--block-size", "128"]),
    ("dsv32", "fp8_e4m3-block32", ["--kv-cache-dtype", "fp8_e4m3", "--block-size", "32"]),
    ("dsv32", "sm90-block192", [*SM90, "--block-size", "192"]),
    ("dsv32", "fp8_e4m3-float16", ["--kv-cache-dtype", "fp8_e4m3", "--dtype", "float16"]),
    ("dsv32", "sm90-float16", [*SM90, "--dtype", "float16"]),
    ("glm5", "fp8_e4m3", ["--kv-cache-dtype", "fp8_e4m3"]),
    ("glm5", "sm90-auto", SM90),
)


def config(name: str) -> dict[str, Any]:
    arch = CONFIGS[name]
    path = PUBLISHED / name / "config.json" if arch is None else ARCH / f"{arch}.json"
    data: dict[str, Any] = json.loads(path.read_text())
    return data


def cases(release: str) -> dict[str, tuple[str, list[str]]]:
    """Case id -> (config name, vLLM flags) recorded on ``release`` (dryboot adds ``--gpu H200``)."""
    return {f"{name}:{suffix}": (name, [*BASE, *flags]) for name, suffix, flags in CASES}


def record_path(release: str) -> Path:
    return DATA / f"vllm-{release}.json"


def recorded(release: str) -> dict[str, dict[str, Any]]:
    path = record_path(release)
    if not path.exists():
        return {}
    doc: dict[str, Any] = json.loads(path.read_text())
    assert doc["vllm"] == release
    out: dict[str, dict[str, Any]] = doc["cases"]
    return out

"""Sparse and dense MLA models on the SM 12.x GPUs (RTX 5090 and RTX PRO 6000 Blackwell: SM 12.0;
GB10 / DGX Spark: SM 12.1), every release 0.27.1-0.33.0 where the architecture is registered, with
an ``auto`` and an fp8 KV cache (and a bfloat16 one on the RTX 5090): ``record_sm12_mla.py`` records
each release's engine start through ``tests/data/gpus/run_oracle_as.py`` (the oracle answering as
that row of ``gpus.toml``, FlashInfer arm ``cubin``, as vLLM's images ship it), ``test_sm12_mla.py``
checks dryboot against the records.

On SM 12.x vLLM's only sparse MLA backend is ``FLASHINFER_MLA_SPARSE_SM120``: it takes a bfloat16
model whose config sets ``index_topk`` to 2048, and stores an ``auto`` / fp8 / fp8_e4m3 KV cache
in DeepSeek's ``fp8_ds_mla`` layout (``_canonicalize_sparse_mla_kv_cache_dtype``). The configs are
the tiny ones of ``data/architectures/`` (stand-ins, no published config is this small); the
``-2048`` ones set ``index_topk`` to 2048, as every published DeepSeek-V3.2 / GLM-5 config does
(``tests/data/configs/public/deepseek-ai--DeepSeek-V3.2``, ``zai-org--GLM-5``), so that the SM120
backend's index_topk condition holds. Dense MLA models (DeepSeek-V3, Mistral-Large-3, LongCat-Flash)
are the control: TRITON_MLA, the SM 12.x MLA backend.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parent
ARCH = HERE / "data" / "architectures"
#: published configs (the public corpus's copies, each with its SOURCE)
PUBLIC = HERE.parent / "data" / "configs" / "public"
DATA = HERE / "data" / "sm12-mla"
RELEASES = ("0.27.1", "0.28.0", "0.29.0", "0.30.0", "0.31.0", "0.32.0", "0.33.0")
GPUS = ("RTX 5090", "GB10", "RTX PRO 6000 Blackwell")
BASE = ["--kv-cache-memory-bytes", "2G", "--max-model-len", "8192"]

#: config name -> (architecture file, overrides, releases it is recorded on)
CONFIGS: dict[str, tuple[str, dict[str, Any], tuple[str, ...]]] = {
    "dsv32": ("DeepseekV32ForCausalLM", {}, RELEASES),
    "dsv32-2048": ("DeepseekV32ForCausalLM", {"index_topk": 2048}, RELEASES),
    "glm5-2048": ("GlmMoeDsaForCausalLM", {"index_topk": 2048}, RELEASES),
    "hyv4": ("HYV4ForCausalLM", {}, RELEASES[2:]),
    "dots3": ("Dots3NoteForCausalLM", {}, RELEASES[-1:]),
    "dsv4-2048": ("DeepseekV4ForCausalLM", {"index_topk": 2048}, RELEASES),
    "step5": ("Step5ForCausalLM", {}, RELEASES[-1:]),
    # dense MLA: the control
    "dsv3": ("DeepseekV3ForCausalLM", {}, RELEASES),
    "mistral-large-3": ("MistralLarge3ForCausalLM", {}, RELEASES),
    "longcat": ("LongcatFlashForCausalLM", {}, RELEASES),
    # published: DeepSeek-V3.2 (index_topk 2048) and Kimi-K2 (dense MLA, fp8 checkpoint), TP 8 only
    "deepseek-ai--DeepSeek-V3.2": ("public", {}, RELEASES),
    "moonshotai--Kimi-K2-Instruct": ("public", {}, RELEASES),
}
#: configs recorded only as :data:`EXTRA` cases (not on every GPU and KV dtype)
EXTRA_ONLY = frozenset({"deepseek-ai--DeepSeek-V3.2", "moonshotai--Kimi-K2-Instruct"})
TP8 = ["--tensor-parallel-size", "8"]
#: (config, case suffix, flags) recorded on the RTX 5090 besides the KV dtypes: the published configs
#: at TP 8, the SM120 sparse backend's block sizes (0.27.1-0.31.0: 64 or 256; 0.32+: multiples of 64),
#: its fp8_e4m3 and fp8_ds_mla caches and a float16 model (not served: its dtypes are bfloat16 only)
EXTRA: tuple[tuple[str, str, list[str]], ...] = (
    ("deepseek-ai--DeepSeek-V3.2", "tp8-auto", [*TP8, "--kv-cache-dtype", "auto"]),
    ("deepseek-ai--DeepSeek-V3.2", "tp8-fp8", [*TP8, "--kv-cache-dtype", "fp8"]),
    ("moonshotai--Kimi-K2-Instruct", "tp8-auto", [*TP8, "--kv-cache-dtype", "auto"]),
    ("moonshotai--Kimi-K2-Instruct", "tp8-fp8", [*TP8, "--kv-cache-dtype", "fp8"]),
    ("dsv32-2048", "block128", ["--block-size", "128"]),
    ("dsv32-2048", "block256", ["--block-size", "256"]),
    ("dsv32-2048", "block32", ["--block-size", "32"]),
    ("dsv32-2048", "fp8_e4m3", ["--kv-cache-dtype", "fp8_e4m3"]),
    ("dsv32-2048", "fp8_ds_mla", ["--kv-cache-dtype", "fp8_ds_mla"]),
    ("dsv32-2048", "float16", ["--dtype", "float16"]),
    ("glm5-2048", "block256", ["--block-size", "256"]),
    ("glm5-2048", "fp8_e4m3", ["--kv-cache-dtype", "fp8_e4m3"]),
    ("hyv4", "block128", ["--block-size", "128"]),
    ("dsv3", "block32", ["--block-size", "32"]),
)
#: files a config's model directory needs beside config.json
EXTRA_FILES: dict[str, dict[str, Any]] = {"dots3": {"added_tokens.json": {"<|imgpad|>": 1000}}}


def config(name: str) -> dict[str, Any]:
    arch, overrides, _ = CONFIGS[name]
    path = PUBLIC / name / "config.json" if arch == "public" else ARCH / f"{arch}.json"
    data: dict[str, Any] = json.loads(path.read_text())
    data.update(overrides)
    return data


def cases(release: str) -> dict[str, tuple[str, list[str], str]]:
    """Case id -> (config name, vLLM flags, GPU) recorded on ``release`` (dryboot adds ``--gpu``)."""
    out: dict[str, tuple[str, list[str], str]] = {}
    for name, (_, _, releases) in CONFIGS.items():
        if release not in releases or name in EXTRA_ONLY:
            continue
        for gpu in GPUS:
            kvs = ("auto", "fp8", "bfloat16") if gpu == "RTX 5090" else ("auto", "fp8")
            for kv in kvs:
                gid = gpu.lower().replace(" ", "-")
                out[f"{name}@{gid}:{kv}"] = (name, [*BASE, "--kv-cache-dtype", kv], gpu)
    for name, suffix, flags in EXTRA:
        if release in CONFIGS[name][2]:
            out[f"{name}@rtx-5090:{suffix}"] = (name, [*BASE, *flags], "RTX 5090")
    return out


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

"""The newest published configs (issue 37, item 5): checkpoints published in 2026 (some in
2025: each ``SOURCE`` dates its own), stored verbatim under ``data/newest/configs/<org>--<name>/``
with a ``SOURCE`` each, started by vLLM on two named GPUs (SM 9.0 and SM 8.0) with a pinned
``--kv-cache-memory-bytes`` and a maximum length (``record_newest.py``), and checked against
dryboot by ``test_newest.py``.

Every config folder yields the same flag sets on each GPU, so a config added to the folder is a
case the next recording covers. A Gemma-4 config gets the stand-in tokenizer of
``frontier_cases`` (``gemma4-mm``), so that vLLM starts it with its multimodal inputs on, as
any real checkpoint directory does; a Qwen2.5-VL config gets ``qwen2-vl-mm`` (the same tokenizer
and an image-processor file naming ``Qwen2VLImageProcessor``), without which vLLM 0.28.0 fails
loading the processor before it sizes the KV cache; DeepSeek-OCR (``deepseek_vl_v2``) gets
``deepseek-ocr-mm`` (the tokenizer with an ``<image>`` token, which vLLM's processor looks up).
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import frontier_cases as F

HERE = Path(__file__).resolve().parent
DATA = HERE / "data" / "newest"
CONFIGS = F.NEWEST
#: the releases recorded
VERSIONS = ("0.28.0", "0.33.0")
#: SM 9.0 and SM 8.0 (rows of ``tests/data/gpus/gpus.toml``)
GPUS = ("H100", "A100-80GB")
#: the pinned KV cache budget (bytes)
BUDGET = "8000000000"
#: the flag sets every config is started with (``--kv-cache-memory-bytes`` added)
FLAG_SETS: tuple[tuple[str, ...], ...] = (
    ("--max-model-len", "32768"),
    ("--max-model-len", "32768", "--kv-cache-dtype", "fp8"),
    ("--max-model-len", "-1"),
    ("--max-model-len", "65536", "-tp", "2"),
    ("--max-model-len", "32768", "--no-enable-prefix-caching"),
)


def configs() -> list[str]:
    """The stored config folders, sorted."""
    return sorted(p.name for p in CONFIGS.iterdir() if (p / "config.json").is_file())


#: model_type -> the stand-in files added to its directory (``frontier_cases.FILES``)
STAND_INS = {"gemma4": "gemma4-mm", "qwen2_5_vl": "qwen2-vl-mm", "deepseek_vl_v2": "deepseek-ocr-mm"}


def files(name: str) -> str | None:
    """The files added to the config's directory: a stand-in tokenizer for Gemma-4, a stand-in
    tokenizer and image-processor file for Qwen2.5-VL (vLLM 0.28.0 builds its processor at engine
    start and fails without one, where any real checkpoint directory has it), a stand-in
    tokenizer holding ``<image>`` for DeepSeek-OCR (vLLM's own processor looks that token up)."""
    config = json.loads((CONFIGS / name / "config.json").read_text())
    return STAND_INS.get(str(config.get("model_type")))


def cases() -> list[dict[str, Any]]:
    """Every case: ``{id, model, files, argv, gpu}`` (``frontier_cases.materialize`` reads it)."""
    return [
        {
            "id": f"{gpu}|{name}#{i}",
            "model": f"newest:{name}",
            "files": files(name),
            "argv": [*flags, "--kv-cache-memory-bytes", BUDGET],
            "gpu": gpu,
        }
        for gpu in GPUS
        for name in configs()
        for i, flags in enumerate(FLAG_SETS)
    ]


def recorded(version: str) -> dict[str, dict[str, Any]]:
    """case id -> vLLM's answer, of ``data/newest/vllm-<version>.json`` (empty if absent)."""
    path = DATA / f"vllm-{version}.json"
    if not path.exists():
        return {}
    data: dict[str, dict[str, Any]] = json.loads(path.read_text())["cases"]
    return data

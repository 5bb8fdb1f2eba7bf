"""Inkling's cases whose log lines are checked (issue 37, vLLM 0.33.0): the tiny configs of
``data/architectures/`` (the text model with sliding and full layers of different heads, the wrapper
whose two layer types share one conv-state spec) and the text model's defaults config, under flag
sets that move the block (``--block-size``, an fp8 cache the conv page then outgrows), the length
(auto-fit) and the blocks (``--num-gpu-blocks-override``). ``record_inkling.py`` records vLLM's
answers with the KV cache lines it logs (``kv_log``); ``test_inkling.py`` checks dryboot's figures and
lines against them.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import test_architectures as T

HERE = Path(__file__).resolve().parent
DATA = HERE / "data" / "inkling"
RELEASE = "0.33.0"

#: (model, argv): ``arch:<Architecture>`` is the tiny config, ``defaults:<Architecture>`` its defaults config
_CASES: tuple[tuple[str, tuple[str, ...]], ...] = (
    ("arch:InklingForCausalLM", ("--kv-cache-memory-bytes", "2000000000")),
    ("arch:InklingForCausalLM", ("--kv-cache-memory-bytes", "2000000000", "--kv-cache-dtype", "fp8")),
    ("arch:InklingForCausalLM", ("--kv-cache-memory-bytes", "2000000000", "--block-size", "64", "-tp", "2")),
    ("arch:InklingForCausalLM", ("--kv-cache-memory-bytes", "300000", "--max-model-len", "-1")),
    ("arch:InklingForCausalLM", ("--kv-cache-memory-bytes", "2000000000", "--num-gpu-blocks-override", "20000")),
    ("arch:InklingForConditionalGeneration", ("--kv-cache-memory-bytes", "2000000000")),
    ("arch:InklingForConditionalGeneration", ("--kv-cache-memory-bytes", "2000000000", "--block-size", "32")),
    (
        "arch:InklingForConditionalGeneration",
        ("--kv-cache-memory-bytes", "2000000000", "--kv-cache-dtype", "fp8", "-pp", "2"),
    ),
    ("defaults:InklingForCausalLM", ("--kv-cache-memory-bytes", "4000000000", "--max-model-len", "-1")),
    ("defaults:InklingForCausalLM", ("--kv-cache-memory-bytes", "2000000000", "--block-size", "128", "-tp", "4")),
)


def cases() -> list[dict[str, Any]]:
    """Every case: ``{id, model, argv}``."""
    return [{"id": f"{model}#{i}", "model": model, "argv": list(argv)} for i, (model, argv) in enumerate(_CASES)]


def materialize(case: dict[str, Any]) -> str:
    """The case's model directory."""
    kind, arch = case["model"].split(":", 1)
    path = T.DEFAULTS / f"{arch}.json" if kind == "defaults" else T.tiny_configs()[arch]
    return T.materialize(arch, path)


def record_path(version: str = RELEASE) -> Path:
    return DATA / f"vllm-{version}.json"

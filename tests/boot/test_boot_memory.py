"""dryboot boot without --kv-cache-memory-bytes (issue 27 item 7): the budget is the requested
memory less the tree's own weights per rank (its model on the meta device) and dryboot's other
terms, so a patch that changes what a model holds shows in the arms. Needs the vLLM 0.28.0 boot
environment (``tests/boot/conftest.py``); the patch is dryboot's own
(``tests/boot/data/patches/extra-buffer``: LlamaModel holds a 256 MiB buffer)."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[2]
DATA = Path(__file__).resolve().parent / "data"
LLAMA = REPO / "tests" / "fidelity" / "data" / "releases" / "nullblk" / "config.json"
GIB = 1 << 30

pytestmark = pytest.mark.slow


def dryboot(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "dryboot", *args], capture_output=True, text=True, check=False)


def test_boot_without_a_budget_counts_the_trees_weights(boot_python: str, pristine: Path) -> None:
    """The pristine tree's model on the meta device holds what dryboot's weights model predicts
    (to vLLM's two decimals), and dryboot's plan at the tree's budget agrees."""
    r = dryboot(
        "boot", "--vllm", str(pristine.parent), "--python", boot_python, "--model", str(LLAMA),
        "--gpu", "RTX 3090", "--json", "--max-model-len", "8192",
    )  # fmt: skip
    assert r.returncode == 0, r.stdout[-2000:] + r.stderr[-2000:]
    doc = json.loads(r.stdout)
    budget = doc["boot"]["budget"]
    (weights,) = budget["weights_bytes"]
    low, est, high = budget["available"]
    assert low <= est <= high and est == budget["requested"] - weights - budget["other"][1]
    assert budget["requested"] == -(-25297357373 * 92 // 100)  # ceil(RTX 3090's CUDA total x 0.92)
    assert doc["agrees"] and doc["figures"]["tokens"] == doc["plan"]["capacity"]["kv_cache_size_tokens"]


def test_a_patch_holding_more_memory_shows_in_the_arms(boot_python: str) -> None:
    r = dryboot(
        "profiles", str(DATA / "memory-arms.toml"), "--compare", "pristine", "scratch", "--boot",
        "--gpu", "RTX 3090", "--python", boot_python, "--json",
    )  # fmt: skip
    assert r.returncode == 0, r.stderr[-2000:]
    doc = json.loads(r.stdout)
    for p in doc["profiles"]:
        assert not p["identical"], p["profile"]
        changes = "; ".join(p["changes"])
        assert "Model loading took (GiB): pristine 0.15, scratch 0.4" in changes  # +256 MiB
        assert "GPU KV cache tokens" in changes and "Available KV cache memory (GiB)" in changes
        a, b = (int(p[arm]["row"].split("/")[-1].replace(",", "")) for arm in ("pristine", "scratch"))
        # 256 MiB less KV: 32,768 tokens fewer at Llama-nullblk's 8 KiB per token (2 layers x 2 x 8 x 128 x 2 B)
        assert a - b == (256 << 20) // (2 * 2 * 8 * 128 * 2)
        assert p["dryboot_model"] == {"pristine": "agrees", "scratch": "agrees"}


def test_weights_above_the_gpu_are_an_answer_not_a_negative_pool(boot_python: str, pristine: Path) -> None:
    """New-user report item 3: Qwen3-32B (61.03 GiB per rank) on an RTX 3090 without a pinned pool:
    vLLM would fail loading it; the boot says so (exit 1) instead of pinning a negative pool."""
    qwen3_32b = REPO / "tests" / "data" / "configs" / "public" / "Qwen--Qwen3-32B" / "config.json"
    r = dryboot(
        "boot", "--vllm", str(pristine.parent), "--python", boot_python, "--model", str(qwen3_32b),
        "--gpu", "rtx3090", "--gpu-memory-utilization", "0.92", "--max-model-len", "32768",
    )  # fmt: skip
    assert r.returncode == 1, r.stdout[-2000:] + r.stderr[-2000:]
    assert "won't: weights 61.03 GiB per rank exceed the requested 21.68 GiB" in r.stdout
    assert "must be >= 0" not in r.stdout + r.stderr

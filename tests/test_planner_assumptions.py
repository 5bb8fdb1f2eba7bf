"""Every assumption the figures depend on is stated, in the report and in --json.

The values are vLLM 0.28.0's: ``EngineArgs.get_batch_defaults`` gives ``vllm serve`` 2048 batched
tokens below 70 GiB of GPU memory and 8192 from 70 GiB (H100, H200); the CUDA platform's first
attention backend on SM90 is FLASH_ATTN; ``kv_cache_memory_bytes`` makes vLLM ignore
``gpu_memory_utilization``.
"""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path
from typing import Any

REPO = Path(__file__).resolve().parents[1]
MODELS = REPO / "examples" / "models"
GPT_OSS = str(MODELS / "gpt-oss-20b.config.json")  # sliding-window layers: blocks count in-flight tokens
QWEN3_NEXT = str(MODELS / "Qwen3-Next-80B-A3B-Thinking.config.json")  # no sliding window


def dryboot(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "dryboot", *args], capture_output=True, text=True, cwd=REPO, timeout=60
    )


def plan_json(*args: str) -> dict[str, Any]:
    r = dryboot("plan", *args, "--json")
    assert r.returncode in (0, 1, 3, 4), r.stderr  # 3: a named GPU beside weights not modelled (gpt-oss)
    data: dict[str, Any] = json.loads(r.stdout)
    return data


def by_flag(data: dict[str, Any]) -> dict[str, dict[str, Any]]:
    return {a["flag"]: a for a in data["assumptions"]}


GPT_OSS_64K = ("--model", GPT_OSS, "--max-model-len", "65536", "--kv-cache-memory", "20G")


def test_batched_tokens_default_is_stated_with_its_value_and_reason() -> None:
    a = by_flag(plan_json(*GPT_OSS_64K))["--max-num-batched-tokens"]
    # no GPU named: an H200 (139.80 GiB) is assumed, whose `vllm serve` default is 8192
    assert (a["kind"], a["value"]) == ("assumed", 8192)
    assert "the GPU is unknown: an H200 (139.80 GiB) is assumed" in a["reason"]
    small = by_flag(plan_json(*GPT_OSS_64K[:4], "--gpu-memory", "48G", "--non-kv-memory", "20G"))
    assert small["--max-num-batched-tokens"]["value"] == 2048
    h100 = by_flag(plan_json(*GPT_OSS_64K[:4], "--gpu-memory", "80G", "--non-kv-memory", "40G"))
    assert h100["--max-num-batched-tokens"]["value"] == 8192
    assert "--max-num-batched-tokens" not in by_flag(plan_json(*GPT_OSS_64K, "--max-num-batched-tokens", "2048"))


def test_batched_tokens_are_not_mentioned_when_no_figure_depends_on_them() -> None:
    # Qwen3-Next has no sliding-window layer: the README's 1,725,423 tokens hold at any batch size
    base = ("--model", QWEN3_NEXT, "--max-model-len", "262144", "--kv-cache-memory", "40G")
    for extra in ((), ("--max-num-batched-tokens", "8192")):
        data = plan_json(*base, *extra)
        assert data["capacity"]["kv_cache_size_tokens"] == 1_725_423
        assert "--max-num-batched-tokens" not in by_flag(data)


def test_default_attention_backend_is_stated() -> None:
    a = by_flag(plan_json(*GPT_OSS_64K))["--attention-backend"]
    assert (a["kind"], a["value"]) == ("assumed", "FLASH_ATTN")
    assert "FLASHINFER" in a["reason"]  # what vLLM picks on SM100 instead
    assert "--attention-backend" not in by_flag(plan_json(*GPT_OSS_64K, "--attention-backend", "FLASH_ATTN"))


def test_ignored_gpu_memory_utilization_is_stated_when_given() -> None:
    for value in ("0.95", "0.92"):  # given explicitly, even at vLLM's default value
        a = by_flag(plan_json(*GPT_OSS_64K, "--gpu-memory-utilization", value))["--gpu-memory-utilization"]
        assert a["kind"] == "ignored" and a["value"] == float(value)
    assert "--gpu-memory-utilization" not in by_flag(plan_json(*GPT_OSS_64K))
    text = dryboot("plan", *GPT_OSS_64K, "--gpu-memory-utilization", "0.95").stdout
    assert "ignored --gpu-memory-utilization 0.95: --kv-cache-memory-bytes sets the KV" in text


def test_every_unverified_version_says_so() -> None:
    pinned = (*GPT_OSS_64K, "--max-num-batched-tokens", "2048", "--attention-backend", "FLASH_ATTN", "--gpu", "H200")
    # verified: 2,000 harness cases against that release (tests/fidelity/data/releases/HARNESS.md)
    for version in ("0.28", "0.28.0", "0.27.1", "0.29.0", "0.31.0", "0.32.0", "0.33.0"):
        assert plan_json(*pinned, "--vllm-version", version)["assumptions"] == []
    # versions between table entries take a neighbour's rules but are not verified themselves
    for version in ("0.28.3", "0.31.2", "0.33.1"):
        [a] = plan_json(*pinned, "--vllm-version", version)["assumptions"]
        assert (a["kind"], a["flag"], a["value"]) == ("unverified", "--vllm-version", version)
        assert a["reason"].endswith("are)") and "(only 0.27.1, 0.28.0, 0.29.0" in a["reason"]


def test_profiles_state_assumptions_once(tmp_path: Path) -> None:
    import shutil

    shutil.copytree(MODELS, tmp_path / "models")
    text = (REPO / "examples" / "reference-deployment.toml").read_text()
    toml = tmp_path / "p.toml"
    toml.write_text(text.replace("max-num-batched-tokens = 2048\n", ""))
    r = dryboot("profiles", str(toml), "--compare", "main", "pr")
    assert r.stdout.count("assumed --max-num-batched-tokens 2048:") == 1  # its RTX 3090 (24 GiB)
    rows = json.loads(dryboot("profiles", str(toml), "--json").stdout)
    assert all(row["assumptions"][0]["value"] == 2048 for row in rows)
    toml.write_text(text.replace("max-num-batched-tokens = 2048\n", "").replace('gpu = "RTX 3090"\n', ""))
    r = dryboot("profiles", str(toml), "--compare", "main", "pr")
    assert r.stdout.count("assumed --max-num-batched-tokens 8192:") == 1  # no GPU named: H200
    # the shipped file pins every GPU-dependent default
    rows = json.loads(dryboot("profiles", str(REPO / "examples" / "reference-deployment.toml"), "--json").stdout)
    assert all(row["assumptions"] == [] for row in rows)

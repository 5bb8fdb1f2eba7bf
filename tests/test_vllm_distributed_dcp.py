"""``-dcp`` / ``--decode-context-parallel-size``: vLLM's checks, then dryboot's named limit.

vLLM 0.28.0's answers (``tests/fidelity/data/deepseek_v4/recorded.json``, the ``-dcp 2 -tp 2``
case: ``AssertionError: DCP not support sliding window attn now.``) are checked by
``tests/fidelity/test_deepseek_v4.py``; these pin the rest of the rule on its own.
"""

from __future__ import annotations

import shutil
import subprocess
import sys
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[1]
ARCHS = REPO / "tests" / "fidelity" / "data" / "architectures"


def _plan(tmp_path: Path, config: Path, *flags: str) -> subprocess.CompletedProcess[str]:
    model = tmp_path / "m"
    model.mkdir()
    shutil.copy(config, model / "config.json")
    argv = ["plan", "--model", str(model), "--kv-cache-memory-bytes", "1000000000", "--max-model-len", "4096", *flags]
    return subprocess.run([sys.executable, "-m", "dryboot", *argv], capture_output=True, text=True, check=False)


@pytest.mark.parametrize(
    ("config", "flags", "says"),
    [
        # ParallelConfig: without PCP, DCP divides TP
        ("LlamaForCausalLM", ["-dcp", "2"], "tp_size=1 must be divisible by dcp_size=2."),
        ("LlamaForCausalLM", ["-tp", "2", "-dcp", "4"], "tp_size=2 must be divisible by dcp_size=4."),
        # ModelConfig.verify_with_parallel_config (GQA/MQA: 2 KV heads, 8 query heads here)
        ("LlamaForCausalLM", ["-tp", "2", "-dcp", "2"], "requires `--tensor-parallel-size` (2) to be greater"),
        ("LlamaForCausalLM", ["-tp", "4", "-dcp", "4"], "exceeds the maximum supported value (2)"),
        # a sliding-window cache (SlidingWindowSpec.max_memory_usage_bytes asserts)
        ("Gemma3ForCausalLM", ["-tp", "2", "-dcp", "2"], "AssertionError: DCP not support sliding window."),
        # dryboot's limits: MLA and mamba state under DCP are not planned
        ("Qwen3NextForCausalLM", ["-tp", "4", "-dcp", "2"], "not modelled"),
        ("DeepseekV3ForCausalLM", ["--decode-context-parallel-size", "2", "-tp", "2"], "not modelled"),
        # 0.30+: only FlashAttention and FlashInfer support DCP
        (
            "LlamaForCausalLM",
            ["-tp", "4", "-dcp", "2", "--attention-backend", "TRITON_ATTN", "--vllm-version", "0.33.0"],
            "Reason: ['DCP not supported']",
        ),
    ],
)
def test_dcp_is_checked_as_vllm_checks_it_then_refused_by_name(
    tmp_path: Path, config: str, flags: list[str], says: str
) -> None:
    r = _plan(tmp_path, ARCHS / f"{config}.json", *flags)
    assert r.returncode == 2, r.stdout
    assert says in r.stderr and len(r.stderr.splitlines()) == 1


def test_dcp_shards_a_full_attention_request_by_tokens(tmp_path: Path) -> None:
    """vLLM 0.27.1-0.33.0 (engine start, tiny Llama, TP 4, 1 GB, 4,096 tokens): DCP 1 gives
    1,302,080 tokens, 317.89x; DCP 2 2,604,160 tokens, 635.78x (each rank holds half of a
    request's tokens: ``cdiv(cdiv(4096, 2), 16)`` = 128 blocks per request)."""
    r = _plan(tmp_path, ARCHS / "LlamaForCausalLM.json", "-tp", "4", "-dcp", "2")
    assert r.returncode == 0, r.stderr
    assert "GPU KV cache size: 2,604,160 tokens, Maximum concurrency for 4,096 tokens per request: 635.78x" in r.stdout


def test_dcp_1_is_the_default(tmp_path: Path) -> None:
    r = _plan(tmp_path, ARCHS / "LlamaForCausalLM.json", "-dcp", "1")
    assert r.returncode == 0, r.stderr
    (tmp_path / "b").mkdir()
    r = _plan(tmp_path / "b", ARCHS / "LlamaForCausalLM.json", "-dcp", "0")
    assert r.returncode == 2 and "--decode-context-parallel-size" in r.stderr and "must be >= 1" in r.stderr

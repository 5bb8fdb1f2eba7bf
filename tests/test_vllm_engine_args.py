"""``EngineArgs``: the user's input, checked once where it enters, for the API and the CLI alike."""

from __future__ import annotations

import dataclasses
import math
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from dryboot import EngineArgs, InputError, load_model, plan

REPO = Path(__file__).resolve().parents[1]
LLAMA = REPO / "tests" / "fidelity" / "data" / "architectures" / "LlamaForCausalLM.json"


def _cli(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "dryboot", "plan", "--model", str(LLAMA), *args],
        capture_output=True,
        text=True,
        timeout=60,
    )


@pytest.mark.parametrize(
    ("fields", "named"),
    [
        ({"max_model_len": "abc"}, "max_model_len: must be int or None"),
        ({"kv_cache_memory_bytes": math.nan}, "kv_cache_memory_bytes: must be int or None"),
        ({"gpu_memory_utilization": math.nan}, "gpu_memory_utilization: must be a finite number"),
        ({"tensor_parallel_size": 1.5}, "tensor_parallel_size: must be int"),
        ({"enable_prefix_caching": "yes"}, "enable_prefix_caching: must be bool or None"),
        ({"block_size": True}, "block_size: must be int or None"),
        ({"attention_backend": 5}, "attention_backend: must be str or None"),
    ],
)
def test_api_arguments_of_the_wrong_type_are_input_errors(fields: dict[str, Any], named: str) -> None:
    with pytest.raises(InputError, match=named):
        plan(load_model(LLAMA), EngineArgs(**fields))


@pytest.mark.parametrize(
    ("argv", "named"),
    [
        (["-tp", "1.5"], "--tensor-parallel-size: must be a whole number, got '1.5'"),
        (["--non-kv-memory", "10G"], "--non-kv-memory: needs --gpu-memory"),
        (["--kv-cache-memory", "100000000000000000000000000000000000T"], "--kv-cache-memory-bytes: 1.1e+47 bytes"),
    ],
)
def test_cli_flags_are_refused_in_one_line(argv: list[str], named: str) -> None:
    r = _cli(*argv)
    assert r.returncode == 2, r.stdout + r.stderr
    assert r.stderr.strip().splitlines() == [r.stderr.strip()] and named in r.stderr, r.stderr


def test_api_memory_bound_and_non_kv_without_gpu_memory() -> None:
    with pytest.raises(InputError, match="more than any GPU has"):
        EngineArgs(kv_cache_memory_bytes=10**35).validate()
    with pytest.raises(InputError, match="--non-kv-memory: needs --gpu-memory"):
        EngineArgs(non_kv_memory_bytes=1 << 30).validate()
    EngineArgs(kv_cache_memory_bytes=1 << 30, non_kv_memory_bytes=1 << 30).validate()  # noted, as vLLM ignores it


def test_evolve_is_replace_and_checks_again() -> None:
    args = EngineArgs(max_model_len=4096)
    args.validate()
    assert args.evolve(block_size=32) == dataclasses.replace(args, block_size=32)
    with pytest.raises(InputError, match="block_size"):
        args.evolve(block_size="32").validate()
    with pytest.raises(TypeError, match="no field 'nope'"):
        args.evolve(nope=1)


def test_async_scheduling_resolved_with_the_release_rules() -> None:
    from dryboot.vllm.config.resolve import async_scheduling_refusal, resolve_async_scheduling
    from dryboot.vllm.versions import rules_for

    rules = rules_for("0.28.0")
    blocked = EngineArgs(speculative_method="eagle", disable_padded_drafter_batch=True)
    why = "Async scheduling is not compatible with disable_padded_drafter_batch=True"
    assert resolve_async_scheduling(blocked, rules) == (False, why)
    assert async_scheduling_refusal(blocked, why) is None  # the default turns it off
    assert resolve_async_scheduling(EngineArgs(), rules) == (True, None)
    # a given flag it blocks is refused where VllmConfig refuses it (create_engine_config), not resolved
    given = blocked.evolve(async_scheduling=True)
    assert resolve_async_scheduling(given, rules) == (True, why)
    refusal = async_scheduling_refusal(given, why)
    assert refusal is not None and refusal.line().startswith("--async-scheduling: " + why)

"""The KV budget's verdict when a GPU is named: weights per rank that cannot load or leave no KV
cache (vLLM 0.28 ``Worker``: ``init_device``'s startup gate, ``load_model``,
``determine_available_memory``, ``initialize_kv_cache``), a budget that cannot be estimated
(undetermined, with its reason first), ``--gpu-memory`` contradicting ``--gpu``, and the boot's
check before it would pin a negative pool."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from dryboot.boot.budget import boot_budget
from dryboot.errors import InputError
from dryboot.planner.budget import plan_with_budget, weights_check
from dryboot.planner.plan import plan
from dryboot.planner.runner import build_engine_args
from dryboot.vllm.gpus import parse_gpu
from dryboot.vllm.model_executor.model_loader.loader import model_weights
from dryboot.vllm.worker.budget import load_verdict
from dryboot.vllm.worker.interval import GIB, Interval

REPO = Path(__file__).resolve().parents[1]
PUBLIC = REPO / "tests/data/configs/public"
QWEN3_32B = PUBLIC / "Qwen--Qwen3-32B/config.json"
QWEN3_8B = PUBLIC / "Qwen--Qwen3-8B/config.json"
GPT_OSS = PUBLIC / "openai--gpt-oss-20b/config.json"
QWEN35_27B = REPO / "examples/models/Qwen3.5-27B.config.json"
QWEN3_NEXT = REPO / "examples/models/Qwen3-Next-80B-A3B-Thinking.config.json"
ENV = {"PYTHONPATH": str(REPO / "src"), "PATH": "/usr/bin:/bin", "COLUMNS": "200"}


def _plan(*flags: str) -> subprocess.CompletedProcess[str]:
    cmd = [sys.executable, "-m", "dryboot", "plan", *flags]
    return subprocess.run(cmd, capture_output=True, text=True, env=ENV, check=False, cwd=REPO)


FREE = Interval(22 * GIB, 23 * GIB)


def _last(out: str) -> str:
    """The report's one verdict (its last paragraph), unwrapped."""
    tail = out[out.rindex("\nverdict: ") + 1 :]
    return " ".join(line.strip() for line in tail.splitlines())


def test_load_verdict_follows_vllms_order() -> None:
    kw: dict[str, Any] = {"total_bytes": 24 * GIB, "requested_bytes": 21 * GIB, "free": FREE}
    oom = load_verdict(30 * GIB, **kw)
    assert oom is not None and oom.word == "won't" and oom.fails_in == "load_model"
    assert "exceed the requested 21.00 GiB" in oom.reason and "CUDA out of memory" in oom.reason
    no_kv = load_verdict(22 * GIB, **kw)
    assert no_kv is not None and no_kv.fails_in == "" and "No available memory for the cache blocks" in no_kv.reason
    assert load_verdict(15 * GIB, **kw) is None
    pinned = load_verdict(15 * GIB, kv_cache_memory_bytes=10 * GIB, **kw)
    assert pinned is not None and pinned.fails_in == "initialize_kv_cache"
    # a pinned pool ignores the utilization: weights above requested but within the GPU load and run
    assert load_verdict(22 * GIB, kv_cache_memory_bytes=GIB // 2, **kw) is None
    assert load_verdict(24 * GIB, kv_cache_memory_bytes=GIB, **kw).fails_in == "load_model"


def test_weights_above_the_named_gpu_are_a_verdict_not_a_negative_budget() -> None:
    flags = ["--model", str(QWEN3_32B), "--gpu", "RTX 3090", "--gpu-memory-utilization", "0.92"]
    r = _plan(*flags, "--max-model-len", "32768")
    assert r.returncode == 1, r.stderr
    out = r.stdout
    assert (
        "verdict: won't (exit 1): weights-fit-the-gpu: weights 61.03 GiB per rank exceed the requested 21.68 GiB" in out
    )
    assert "CUDA out of memory" in out and "before any KV sizing" in out
    assert "Available KV cache memory" not in out
    assert "--kv-cache-memory-bytes=0" not in out
    assert "No available memory for the cache blocks" not in out
    assert out.count("verdict:") == 1 and "Verdict:" not in out  # one verdict, the last line
    j = _plan(*flags, "--max-model-len", "32768", "--json")
    assert j.returncode == 1
    doc = json.loads(j.stdout)
    assert doc["budget"]["verdict"]["word"] == "won't" and doc["budget"]["verdict"]["fails_in"] == "load_model"
    assert doc["budget"]["available_kv_cache_bytes"] is None and "safe_kv_cache_memory_bytes" not in doc["budget"]
    assert doc["log"] == [] and doc["ok"] is False


def test_weights_above_requested_but_within_the_gpu_reach_vllms_value_error() -> None:
    model, args = build_engine_args(str(QWEN3_8B), {"max-model-len": "32768", "gpu-memory-utilization": "0.5"}, [])
    args = args.evolve(gpu=parse_gpu("RTX 3090"))
    w = model_weights(QWEN3_8B).stages[0].allocated_bytes
    bp = plan_with_budget(model, args, config=json.loads(QWEN3_8B.read_text()), weights_bytes=w)
    assert bp.verdict is not None and bp.verdict.word == "won't" and bp.verdict.fails_in == ""
    assert "exceed the requested 11.78 GiB" in bp.verdict.reason
    assert bp.safe_kv_cache_memory_bytes is None
    assert bp.plan.memory_error is not None  # vLLM does log a negative budget, then raises
    assert weights_check(args, w) == bp.verdict.__class__("won't", None, bp.verdict.reason)
    assert not bp.plan.ok


@pytest.mark.parametrize(
    "flags",
    [
        ["--kv-cache-memory", "30G"],
        ["--gpu-memory", "24G", "--non-kv-memory", "12G"],
    ],
    ids=["pinned-pool", "non-kv"],
)
def test_a_given_budget_beside_weights_above_the_named_gpu_wont(flags: list[str]) -> None:
    r = _plan("--model", str(QWEN3_32B), "--gpu", "RTX 3090", "--max-model-len", "32768", *flags)
    assert r.returncode == 1, r.stderr
    assert "[FAIL] weights-fit-the-gpu: weights 61.03 GiB per rank exceed" in r.stdout
    assert "GPU KV cache size" not in r.stdout.split("Layers")[0]


def test_a_pinned_pool_above_what_the_weights_leave_wont() -> None:
    r = _plan("--model", str(QWEN3_8B), "--gpu", "RTX 3090", "--max-model-len", "32768", "--kv-cache-memory", "10G")
    assert r.returncode == 1, r.stderr
    assert "plus the pinned pool 10.00 GiB exceed the GPU's 23.56 GiB" in r.stdout
    assert "initialize_kv_cache" in r.stdout


def test_without_a_named_gpu_only_a_note() -> None:
    r = _plan("--model", str(QWEN3_NEXT), "--max-model-len", "262144", "--kv-cache-memory", "40G")
    assert r.returncode == 0, r.stdout
    assert "no GPU named (--gpu): on the assumed H200, weights 148.44 GiB per rank exceed" in r.stdout


def test_weights_above_the_gpu_decide_even_when_the_budget_is_refused() -> None:
    r = _plan("--model", str(QWEN35_27B), "--gpu", "rtx3090", "--gpu-memory-utilization", "0.92")
    assert r.returncode == 1, r.stdout
    assert "verdict: won't (exit 1): weights-fit-the-gpu: weights 51.09 GiB per rank exceed" in r.stdout


def test_a_budget_not_estimated_says_why_first_and_is_undetermined() -> None:
    flags = [
        "--model",
        str(GPT_OSS),
        "--gpu",
        "sm110:64G",
        "--vllm-version",
        "0.33.0",
        "--gpu-memory-utilization",
        "0.92",
    ]
    r = _plan(*flags, "--max-model-len", "32768")
    assert r.returncode == 3, r.stderr  # undetermined
    out = r.stdout
    assert "No KV budget given" not in out
    head = out.split("Invariants:")[0]
    # gpt-oss's architecture is modelled; its MXFP4 experts on SM 11.0 with 0.33.0 (the OAI Triton
    # kernels' Blackwell layouts) are not
    assert "KV budget not estimated: weights: --gpu: MXFP4 experts on vLLM's TRITON backend" in head
    assert "(no KV cache line predicted: KV budget not estimated" in head  # under "vLLM would log:"
    assert _last(out).startswith("verdict: undetermined (exit 3): weights:")
    assert out.count("verdict:") == 1
    doc = json.loads(_plan(*flags, "--max-model-len", "32768", "--json").stdout)
    assert doc["budget"]["verdict"]["word"] == "undetermined"
    assert "MXFP4" in doc["budget"]["verdict"]["reason"]
    assert doc["log_note"].startswith("no KV cache line predicted")


def test_gpu_memory_above_the_named_gpu_is_refused_naming_both_flags() -> None:
    r = _plan("--model", str(QWEN3_8B), "--max-model-len", "32768", "--gpu", "rtx3090", "--gpu-memory", "80G")
    assert r.returncode == 2
    line = r.stderr.strip()
    assert "\n" not in line and "--gpu-memory" in line and "--gpu RTX 3090" in line and "Traceback" not in line
    _model, args = build_engine_args(str(QWEN3_8B), {}, [])
    with pytest.raises(InputError, match="contradicts --gpu RTX 3090"):
        args.evolve(gpu=parse_gpu("RTX 3090"), gpu_memory_bytes=80 * GIB).validate()
    args.evolve(gpu=parse_gpu("RTX 3090"), gpu_memory_bytes=24 * GIB).validate()  # NVML's 24 GiB: the card


def test_boot_without_a_pool_does_not_pin_a_negative_one() -> None:
    model, args = build_engine_args(str(QWEN3_32B), {"max-model-len": "32768", "gpu-memory-utilization": "0.92"}, [])
    p = plan(model, args.evolve(gpu=parse_gpu("RTX 3090")))
    bb = boot_budget(p, json.loads(QWEN3_32B.read_text()))
    verdict = bb.load_verdict([65_534_961_664])  # the tree's own count (Model loading took 61.03 GiB)
    assert verdict is not None and verdict.fails_in == "load_model"
    assert "weights 61.03 GiB per rank exceed the requested 21.68 GiB" in verdict.reason
    assert bb.load_verdict([8 * GIB]) is None
    assert bb.load_verdict([]) is None


# --- one verdict, exit codes, advice vLLM accepts (issue 33, item 5) -------------------------

QWEN3_VL_8B = PUBLIC / "Qwen--Qwen3-VL-8B-Instruct/config.json"


def test_the_issues_rtx3090_safe_pool_is_not_offered_when_one_request_does_not_fit_it() -> None:
    """The issue's case: 'fits' and a 4.07 GiB safe pool while one 32,768-token request needs
    4.5 GiB. Now the pool is refused with the length that fits it, and the verdict agrees."""
    flags = ["--model", str(QWEN3_8B), "--gpu", "RTX 3090", "--max-model-len", "32768"]
    r = _plan(*flags)
    assert r.returncode == 4, r.stdout  # tight
    out = r.stdout
    assert out.count("verdict:") == 1 and "Verdict:" not in out
    assert _last(out).startswith("verdict: tight (exit 4): ")
    assert "Safe pinned pool: none: one 32,768-token request needs 4.50 GiB" in out
    assert "won't at this max length pinned (the largest that fits: " in out
    doc = json.loads(_plan(*flags, "--json").stdout)
    assert doc["verdict"] == {"word": "tight", "exit_code": 4, "reason": doc["verdict"]["reason"]}
    longest = doc["budget"]["max_model_len_fits"]
    assert "safe_kv_cache_memory_bytes" not in doc["budget"] and 0 < longest < 32768
    # vLLM's estimate at the pool it refused: that length, pinned at the same pool, is accepted
    pool = doc["budget"]["refused_pool_bytes"]
    shorter = ["--model", str(QWEN3_8B), "--gpu", "RTX 3090", "--max-model-len", str(longest)]
    fed = _plan(*shorter, "--kv-cache-memory-bytes", str(pool))
    assert fed.returncode == 0, fed.stdout
    assert _last(fed.stdout).startswith("verdict: fits (exit 0)")
    longer = _plan(*shorter[:-1], str(longest + 16), "--kv-cache-memory-bytes", str(pool))
    assert longer.returncode == 1, longer.stdout  # vLLM's estimate is the largest


def test_a_shorter_length_gets_a_pool_that_vllm_accepts_pinned() -> None:
    flags = ["--model", str(QWEN3_8B), "--gpu", "RTX 3090", "--max-model-len", "8192"]
    r = _plan(*flags, "--json")
    assert r.returncode == 0, r.stdout
    doc = json.loads(r.stdout)
    assert doc["verdict"]["word"] == "fits"
    starts = {s["start"]: s for s in doc["budget"]["starts"]}
    assert set(starts) == {"first", "later"}
    assert starts["first"]["available_kv_cache_bytes"]["high"] < starts["later"]["available_kv_cache_bytes"]["high"]
    safe = doc["budget"]["safe_kv_cache_memory_bytes"]
    fed = _plan(*flags, "--kv-cache-memory-bytes", str(safe))
    assert fed.returncode == 0 and "verdict: fits (exit 0)" in fed.stdout


def test_a_pinned_pool_with_unknown_weights_on_a_named_gpu_is_undetermined_not_ok() -> None:
    """The issue: a Qwen3-VL-8B (about 17 GiB of weights) with an 11 GiB pool on an RTX 3090 got
    'verdict: OK'; its weights are not modelled, so whether it loads is not known."""
    flags = ["--model", str(QWEN3_VL_8B), "--gpu", "RTX 3090", "--kv-cache-memory", "11G", "--max-model-len", "32768"]
    r = _plan(*flags)
    assert r.returncode in (1, 3), r.stdout
    last = _last(r.stdout)
    assert not last.startswith("verdict: OK") and not last.startswith("verdict: fits")
    if r.returncode == 3:
        assert last.startswith("verdict: undetermined (exit 3): the weights per rank are not known")
    # without a GPU named the geometry alone decides (the H200 is an assumption)
    g = _plan("--model", str(QWEN3_VL_8B), "--kv-cache-memory", "11G", "--max-model-len", "32768")
    assert g.returncode == 0 and "verdict: OK (exit 0)" in g.stdout


def test_exit_codes_are_the_documented_table() -> None:
    from dryboot.planner.budget import EXIT_CODES

    doc = (REPO / "docs/plan.md").read_text()
    for word, code in EXIT_CODES.items():
        assert f"| {code} | {word}" in doc or f"| {code} | `{word}`" in doc, (word, code)
    assert len({EXIT_CODES[w] for w in ("fits", "won't", "undetermined", "tight")}) == 4
    assert 2 not in EXIT_CODES.values()


def test_wsl2_desktop_share_keeps_the_startup_gate_from_a_false_fits() -> None:
    """Posted: 'Free memory on device cuda:0 (22.45/23.99 GiB) on startup is less than desired GPU
    memory utilization (0.95, 22.79 GiB)' on an RTX 4090 under WSL2; 0.92 (22.07 GiB) started."""
    flags = ["--model", str(QWEN3_8B), "--gpu", "RTX 4090 (WSL2)", "--max-model-len", "8192"]
    refused = json.loads(_plan(*flags, "--gpu-memory-utilization", "0.95", "--json").stdout)
    gate = refused["budget"]["startup_gate"]
    assert gate["passes"] is not True and refused["verdict"]["word"] != "fits"
    assert gate["free_bytes"]["low"] <= round(22.45 * GIB) <= gate["free_bytes"]["high"]
    started = json.loads(_plan(*flags, "--gpu-memory-utilization", "0.92", "--json").stdout)
    assert started["budget"]["startup_gate"]["passes"] is not False

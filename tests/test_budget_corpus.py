"""The calibration corpus of public vLLM boots (tests/data/budget/calibration.json) is what it says.

Every entry names its log, source, release, GPU and flags; every figure under ``logged`` is printed
verbatim by vLLM on one line of that log; where a log shows every term of its release's budget
formula (tests/data/budget/FORMULAS.md) the arithmetic holds; every config named exists and parses.
Nothing here is dryboot's prediction: the figures come from the logs, the formulas from vLLM's source.
"""

from __future__ import annotations

import json
import math
import re
from pathlib import Path
from typing import Any

import pytest

REPO = Path(__file__).resolve().parents[1]
DATA = REPO / "tests" / "data" / "budget"
CORPUS = json.loads((DATA / "calibration.json").read_text())
LOGS: list[dict[str, Any]] = CORPUS["logs"]
FORMULAS = (DATA / "FORMULAS.md").read_text()
GPU_NAMES = set(re.findall(r'^name = "([^"]+)"', (REPO / "src/dryboot/data/gpus.toml").read_text(), re.M))

NUM = r"(-?[0-9]+(?:\.[0-9]+)?)"
#: each logged figure: the line vLLM prints it on (vLLM's wording, every release it appears in)
PATTERNS: dict[str, list[str]] = {
    "model_loading_gib": [rf"Model loading took {NUM} ?GiB"],
    "available_kv_cache_gib": [
        rf"Available KV cache memory: {NUM} ?GiB",
        rf"the rest of the memory reserved for KV Cache is {NUM}GiB",
        rf"available_kv_cache_memory\s+{NUM}GiB",
    ],
    "current_kv_cache_gib": [rf"Current kv cache memory in use is {NUM} GiB"],
    "free_on_startup_gib": [
        rf"Free memory on device \({NUM}/[0-9.]+ GiB\) on startup",
        rf"Initial free memory: {NUM} GiB; Requested memory",
        rf"Initial free memory: {NUM} GiB, free memory",
    ],
    "total_gib": [
        rf"Free memory on device \([0-9.]+/{NUM} GiB\) on startup",
        rf"total_gpu_memory \({NUM}GiB\)",
        rf"total_gpu_memory\s+{NUM}GiB",
    ],
    "requested_gib": [
        rf"Desired GPU memory utilization is \([0-9.]+, {NUM} GiB\)",
        rf"Requested memory: [0-9.]+ \(util\), {NUM} GiB",
        rf"x gpu_memory_utilization \([0-9.]+\) = {NUM}GiB",
        rf"requested GPU memory: {NUM} GiB",
        rf"the current vLLM instance can use\s+{NUM}GiB",
    ],
    "consumed_gib": [rf"Actual usage is {NUM} GiB for consumed memory \(weights \+ non-torch\)"],
    "weights_summary_gib": [rf"Actual usage is {NUM} GiB for weight,"],
    "peak_activation_gib": [rf"{NUM} GiB for peak activation"],
    "summary_non_torch_gib": [rf"{NUM} GiB for non-torch memory"],
    "cuda_graph_gib": [
        rf"{NUM} GiB for CUDAGraph memory",
        rf"Graph capturing finished in [0-9]+ secs?, took {NUM} GiB",
    ],
    "graph_pool_gib": [rf"CUDA graph pool memory: {NUM} GiB \(actual\)"],
    "cuda_graph_estimate_gib": [
        rf"Estimated CUDA graph memory: {NUM} GiB total",
        rf"CUDA graph pool memory: -?[0-9.]+ GiB \(actual\), {NUM} GiB \(estimated\)",
    ],
    "non_kv_cache_gib": [rf"Total non KV cache memory: {NUM} ?GiB"],
    "torch_peak_increase_gib": [
        rf"torch peak memory increase: {NUM} ?GiB",
        rf"PyTorch activation peak memory takes {NUM}GiB",
        rf"PyTorch activation peak memory\s+{NUM}GiB",
    ],
    "non_torch_gib": [
        rf"non-torch forward increase memory: {NUM} ?GiB",
        rf"non_torch_memory takes {NUM}GiB",
        rf"non_torch_memory\s+{NUM}GiB",
    ],
    "weights_memory_gib": [rf"weights memory: {NUM} ?GiB", rf"model weights take\s+{NUM}GiB"],
    "num_gpu_blocks": [r"# GPU blocks: ([0-9]+)"],
    "kv_cache_tokens": [r"GPU KV cache size: ([0-9,]+) tokens"],
    "gpu_memory_utilization_logged": [
        rf"Desired GPU memory utilization is \({NUM}, ",
        rf"The current --gpu-memory-utilization={NUM} is equivalent",
        rf"increase --gpu-memory-utilization from {NUM} to",
        rf"Requested memory: {NUM} \(util\)",
        rf"x gpu_memory_utilization \({NUM}\) = ",
        rf"\] gpu_memory_utilization\s+{NUM}",
    ],
}
REQUIRED = [
    "log",
    "source",
    "model",
    "config",
    "release",
    "gpu",
    "gpu_table",
    "tp",
    "pp",
    "dp",
    "gpu_memory_utilization",
    "max_num_batched_tokens",
    "max_num_seqs",
    "max_model_len",
    "enforce_eager",
    "kv_cache_dtype",
    "quantization",
    "speculative_config",
    "compilation",
    "runner",
    "flags",
    "logged",
    "formula",
]
#: a figure vLLM prints to two decimals carries up to half a hundredth of error
HALF = 0.005


def _path(entry: dict[str, Any]) -> Path:
    log = str(entry["log"])
    return REPO / log if log.startswith("tests/") else DATA / log


def _ids(entries: list[dict[str, Any]]) -> list[str]:
    return [Path(str(e["log"])).stem for e in entries]


def _value(raw: str) -> float:
    return float(raw.replace(",", ""))


def test_the_corpus_counts() -> None:
    new = [e for e in LOGS if "logged_gib" not in e]
    assert len(LOGS) >= 25
    assert len({e["log"] for e in LOGS}) == len(LOGS)
    assert all(e["release"] for e in new)


@pytest.mark.parametrize("entry", LOGS, ids=_ids(LOGS))
def test_entry_is_well_formed(entry: dict[str, Any]) -> None:
    assert not [k for k in REQUIRED if k not in entry]
    assert _path(entry).is_file()
    # a URL, a commit, or (where the code index names no repository) the index's store id, said so
    source = str(entry["source"])
    assert source.startswith("http") or "commit" in source or "store id" in source
    assert entry["gpu_table"] is None or entry["gpu_table"] in GPU_NAMES
    assert isinstance(entry["tp"], int) and entry["tp"] >= 1
    assert entry["formula"] is None or f"`{entry['formula']}`" in FORMULAS
    assert entry["config"] is not None or entry.get("config_note") or entry.get("refused")
    assert set(entry["logged"]) <= set(PATTERNS)
    assert entry["logged"] or entry.get("logged_gib") is not None


@pytest.mark.parametrize("entry", LOGS, ids=_ids(LOGS))
def test_logged_figures_are_on_their_lines(entry: dict[str, Any]) -> None:
    text = _path(entry).read_text()
    for key, value in entry["logged"].items():
        printed = {_value(m) for p in PATTERNS[key] for m in re.findall(p, text)}
        assert value in printed, (key, value, printed)


def _cfg_file(entry: dict[str, Any]) -> Path:
    path = REPO / str(entry["config"])
    return path / "config.json" if path.is_dir() else path


@pytest.mark.parametrize("entry", [e for e in LOGS if e["config"]], ids=_ids([e for e in LOGS if e["config"]]))
def test_config_exists_and_parses(entry: dict[str, Any]) -> None:
    config = json.loads(_cfg_file(entry).read_text())
    assert isinstance(config, dict) and ("architectures" in config or "model_type" in config)


def _with(*keys: str) -> list[dict[str, Any]]:
    return [e for e in LOGS if all(k in e.get("logged", {}) for k in keys)]


SUMMARY = _with("requested_gib", "consumed_gib", "peak_activation_gib", "current_kv_cache_gib")


@pytest.mark.parametrize("entry", SUMMARY, ids=_ids(SUMMARY))
def test_summary_kv_is_requested_minus_consumed_minus_activation(entry: dict[str, Any]) -> None:
    """0.27.1+ (`v1-consumed`): KV = requested − C − A, A holding the CUDA-graph estimate."""
    got = entry["logged"]
    kv = got["requested_gib"] - got["consumed_gib"] - got["peak_activation_gib"]
    assert abs(kv - got["current_kv_cache_gib"]) <= 4 * HALF


DEBUG = _with("requested_gib", "non_kv_cache_gib", "available_kv_cache_gib")


@pytest.mark.parametrize("entry", DEBUG, ids=_ids(DEBUG))
def test_debug_kv_is_requested_minus_non_kv_minus_graph_estimate(entry: dict[str, Any]) -> None:
    """KV = requested − non-KV (− the CUDA-graph estimate where the release applies it)."""
    got = entry["logged"]
    estimate = got.get("cuda_graph_estimate_gib", 0.0) if entry.get("cuda_graph_estimate_applied") else 0.0
    kv = got["requested_gib"] - got["non_kv_cache_gib"] - estimate
    assert abs(kv - got["available_kv_cache_gib"]) <= 3 * HALF


PARTS = _with("non_kv_cache_gib", "torch_peak_increase_gib", "non_torch_gib", "weights_memory_gib")


@pytest.mark.parametrize("entry", PARTS, ids=_ids(PARTS))
def test_non_kv_is_the_sum_of_its_parts(entry: dict[str, Any]) -> None:
    """≤ 0.26 (`v1-weights-peak-nontorch`): non-KV = weights + torch peak increase + non-torch increase."""
    got = entry["logged"]
    parts = got["weights_memory_gib"] + got["torch_peak_increase_gib"] + got["non_torch_gib"]
    assert abs(parts - got["non_kv_cache_gib"]) <= 4 * HALF


V0 = [
    e
    for e in _with(
        "requested_gib", "weights_memory_gib", "torch_peak_increase_gib", "non_torch_gib", "available_kv_cache_gib"
    )
    if e["formula"] == "v0-worker"
]


@pytest.mark.parametrize("entry", V0, ids=_ids(V0))
def test_v0_kv_is_requested_minus_weights_activation_non_torch(entry: dict[str, Any]) -> None:
    """≤ 0.8 V0 (`v0-worker`): KV = total × util − (weights + torch peak increase + non-torch)."""
    got = entry["logged"]
    used = got["weights_memory_gib"] + got["torch_peak_increase_gib"] + got["non_torch_gib"]
    assert abs(got["requested_gib"] - used - got["available_kv_cache_gib"]) <= 5 * HALF


REQUESTED = _with("total_gib", "requested_gib", "gpu_memory_utilization_logged")


@pytest.mark.parametrize("entry", REQUESTED, ids=_ids(REQUESTED))
def test_requested_is_total_times_utilization(entry: dict[str, Any]) -> None:
    """requested = ceil(total × util) in bytes; both totals are printed to two decimals."""
    got = entry["logged"]
    util = got["gpu_memory_utilization_logged"]
    assert abs(got["total_gib"] * util - got["requested_gib"]) <= HALF * (1 + util) + 1e-9


ESTIMATE = [e for e in LOGS if e.get("cuda_graph_estimate_share") is not None]


@pytest.mark.parametrize("entry", ESTIMATE, ids=_ids(ESTIMATE))
def test_equivalent_utilization_line_gives_the_estimate_share(entry: dict[str, Any]) -> None:
    """The graph estimate as a share of the total, as vLLM prints it: U − U′ where "the current
    --gpu-memory-utilization=U is equivalent to U′" (0.20+), U′ − U where 0.19 says "increase
    --gpu-memory-utilization from U to U′"."""
    text = _path(entry).read_text()
    pair = re.search(rf"--gpu-memory-utilization={NUM} is equivalent to --gpu-memory-utilization={NUM}", text)
    if pair is not None:
        share = _value(pair[1]) - _value(pair[2])
    else:
        pair = re.search(rf"increase --gpu-memory-utilization from {NUM} to {NUM}", text)
        assert pair is not None
        share = _value(pair[2]) - _value(pair[1])
    assert math.isclose(share, entry["cuda_graph_estimate_share"], abs_tol=1e-9)

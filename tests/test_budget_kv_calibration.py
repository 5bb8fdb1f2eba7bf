"""dryboot's KV budget against public boot logs (tests/data/budget/calibration.json): for every boot
whose config, GPU and release dryboot models, vLLM's logged ``Available KV cache memory`` lies in
dryboot's interval, the interval is at most max(1 GiB, 10 %) wide (warm compile cache assumed
where the log loads compiled graphs from the cache, cold where it compiles; where it shows neither,
the entry's ``compile_cache`` if its deployment forces one, else unknown), and the median
|estimate - logged| is at most 3 %. The others are listed with the reason they are out of range.

Run as a script (``PYTHONPATH=src python3 tests/test_budget_kv_calibration.py``) for the table.
"""

from __future__ import annotations

import json
import math
import re
import statistics
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

from dryboot.errors import InputError
from dryboot.planner.plan import plan
from dryboot.planner.runner import build_engine_args
from dryboot.vllm.gpus import GPU, parse_gpu
from dryboot.vllm.model_executor.model_loader.loader import model_weights, serving_gpu
from dryboot.vllm.versions import VERSIONS, rules_for
from dryboot.vllm.worker.budget import Budget, estimate_budget
from dryboot.vllm.worker.interval import GIB
from dryboot.vllm.worker.profile_run import COLD_COMPILE_MIB, forward_shape

REPO = Path(__file__).resolve().parents[1]
DATA = REPO / "tests" / "data" / "budget"
ENTRIES: list[dict[str, Any]] = json.loads((DATA / "calibration.json").read_text())["logs"]

#: releases with vLLM's V1 engine whose budget formula dryboot models: 0.27.1-0.33 with their own
#: rules; 0.10-0.26 with the V1 runner and the nearest rules (0.27.1): the same
#: determine_available_memory, the graph estimate subtracted from 0.20 (tests/data/budget/FORMULAS.md: the 0.20.0 wheel
#: defaults VLLM_MEMORY_PROFILER_ESTIMATE_CUDAGRAPHS to 1; off before).
MODELLED = tuple(VERSIONS)


@dataclass
class Row:
    log: str
    release: str
    logged_gib: float
    low_gib: float = 0.0
    estimate_gib: float = 0.0
    high_gib: float = 0.0
    out_of_range: str = ""
    era: str = ""
    cache: str = "unknown"
    cold_gib: float = 0.0
    graph_logged_gib: float | None = None
    graph_low_gib: float = 0.0
    graph_high_gib: float = 0.0

    @property
    def inside(self) -> bool:
        return self.low_gib - 0.005 <= self.logged_gib <= self.high_gib + 0.005

    @property
    def error(self) -> float:
        return (self.estimate_gib - self.logged_gib) / self.logged_gib

    @property
    def width_gib(self) -> float:
        """The interval's width; where the log does not show the compile cache's state, without the
        cold-compile term (reported beside it)."""
        return self.high_gib - self.low_gib - (self.cold_gib if self.cache == "unknown" else 0.0)

    @property
    def width_ok(self) -> bool:
        return self.width_gib <= max(1.0, 0.10 * self.logged_gib)


def _release(text: str) -> tuple[int, int, int] | None:
    m = re.match(r"\s*(\d+)\.(\d+)(?:\.(\d+))?", text or "")
    return (int(m.group(1)), int(m.group(2)), int(m.group(3) or 0)) if m else None


def _era(release: tuple[int, int, int]) -> tuple[str, str, bool] | None:
    """(the rules' version, the era's name, graph estimate on), or None (not modelled)."""
    text = ".".join(map(str, release))
    if text in MODELLED:
        return text, f"{text} (own rules)", True
    if release[:2] in ((0, 29), (0, 30), (0, 31), (0, 32), (0, 33)):
        base = f"0.{release[1]}.0"
        return base, f"{base} (nearest release's rules)", True
    if (0, 10) <= release[:2] <= (0, 27):
        on = release[:2] >= (0, 20)
        return "0.27.1", f"V1 engine 0.10-0.26 (0.27.1's rules, V1 runner, graph estimate {'on' if on else 'off'})", on
    return None


def _gpu(entry: dict[str, Any]) -> GPU | None:
    logged = entry.get("logged") or {}
    table = parse_gpu(entry["gpu_table"]) if entry.get("gpu_table") else None
    # the CUDA total as the host shows it: logged, else stated in the post (a Server Edition, WSL2)
    total = logged.get("total_gib") or entry.get("gpu_total_gib")
    util = entry.get("gpu_memory_utilization")
    if total is None and logged.get("requested_gib") and util:
        # a DEBUG boot logs the requested share: total = requested / util (to its 0.01 GiB)
        total = logged["requested_gib"] / float(util)
    if total is None and logged.get("cuda_graph_estimate_gib") and entry.get("cuda_graph_estimate_share"):
        total = logged["cuda_graph_estimate_gib"] / entry["cuda_graph_estimate_share"]
    if total is None:
        return table
    base = table or GPU("logged", (8, 6), "logged GPU", int(total * GIB), int(total * GIB))
    return GPU(base.name, base.capability, base.device_name, base.nvml_total_bytes, int(total * GIB))


def calibrate(entry: dict[str, Any]) -> Row | None:
    """The row of one log with a logged ``Available KV cache memory`` (None: the log has none)."""
    logged = entry.get("logged") or {}
    # without a pinned pool the summary's "Current kv cache memory in use" is the same figure
    kv = logged.get("available_kv_cache_gib", logged.get("current_kv_cache_gib"))
    tokens = logged.get("kv_cache_tokens") if kv is None else None
    if kv is None and tokens is None:
        return None
    # a log that prints only "GPU KV cache size: N tokens" gives the budget to one block (below)
    row = Row(Path(str(entry["log"])).stem, str(entry.get("release")), float("nan") if kv is None else float(kv))
    release = _release(row.release)
    era = _era(release) if release else None
    if era is None:
        row.out_of_range = f"release {row.release}: not a V1-engine release dryboot models (0.10-0.33)"
        return row
    version, row.era, estimate_on = era
    if not entry.get("config"):
        row.out_of_range = "no published config for the checkpoint served"
        return row
    if entry.get("config_not_served"):  # a copy of the checkpoint's files that differs from the served ones
        row.out_of_range = str(entry["config_not_served"])
        return row
    if entry.get("speculative_config"):
        row.out_of_range = (
            "speculative decoding: not calibrated yet "
            "(drafter weights modelled: EAGLE-3 Llama, DFlash, Qwen/DeepSeek MTP)"
        )
        return row
    config = REPO / str(entry["config"])
    config_json = json.loads((config / "config.json" if config.is_dir() else config).read_text())
    quantized = (
        "quantization_config" in config_json
        or "quantization_config" in config_json.get("text_config", {})
        or (config.is_dir() and (config / "hf_quant_config.json").is_file())  # ModelOpt keeps it beside
    )
    if entry.get("quantization") and not quantized:
        row.out_of_range = f"{entry['quantization']} checkpoint served, the config is an unquantized stand-in"
        return row
    # a 4-bit copy served with the base model's own quantized config standing in (an AWQ copy of
    # MiniMax-M2.7, whose published config is FP8; an FP8 copy of Qwen3.6-27B, whose NVFP4 config
    # stands in): the config's layout is not the served one
    served = str(entry.get("quantization") or "").split(" ")[0].lower()
    method = str((config_json.get("quantization_config") or {}).get("quant_method", ""))
    if served in ("awq", "gptq", "fp8") and quantized and not method.startswith(served):
        stand_in = method or "quantized"
        row.out_of_range = f"{served} checkpoint served, the config is the base model's {stand_in} stand-in"
        return row
    gpu = _gpu(entry)
    if gpu is None:
        row.out_of_range = f"GPU {entry.get('gpu')!r}: its CUDA total is neither in the table nor logged"
        return row
    tp, pp = int(entry.get("tp") or 1), int(entry.get("pp") or 1)
    flags = {"tensor-parallel-size": str(tp), "pipeline-parallel-size": str(pp), "vllm-version": version}
    for key, flag in (
        ("max_num_batched_tokens", "max-num-batched-tokens"),
        ("max_num_seqs", "max-num-seqs"),
        ("max_model_len", "max-model-len"),
        ("kv_cache_dtype", "kv-cache-dtype"),
    ):
        if entry.get(key) is not None:
            flags[flag] = str(entry[key])
    if entry.get("enforce_eager"):
        flags["enforce-eager"] = "true"
    try:
        model, args = build_engine_args(str(config), flags, [])
    except InputError as e:
        row.out_of_range = f"plan refused: {e}"
        return row
    # vLLM's default utilization: 0.9 up to 0.19.0, 0.92 from 0.20.0 (FORMULAS.md)
    util = entry.get("gpu_memory_utilization") or (0.92 if release and release[:2] >= (0, 20) else 0.9)
    args = args.evolve(gpu=gpu, gpu_memory_utilization=float(util))
    if tokens is not None:
        try:
            row.logged_gib = _budget_of_tokens(model, args, int(tokens)) / GIB
        except InputError as e:  # what the release itself refuses (e.g. a ModelOpt quant_algo it does not know)
            row.out_of_range = f"plan refused: {e}"
            return row
    # the GPU as the log names it: its capability (and the table's SM count) decide the layouts
    # vLLM repacks per GPU (MXFP4's MoE backend, Marlin, W8A8/NVFP4 kernels), as `plan --gpu`
    # passes them; a GPU known only by its logged total has no capability (refused by name there)
    on_gpu = serving_gpu(gpu, version) if entry.get("gpu_table") else {"vllm_version": version}
    weights = model_weights(config, tp=tp, pp=pp, **on_gpu)
    if weights.refused:
        row.out_of_range = f"weights: {weights.refused}"
        return row
    if weights.stages[0].loaded_bytes > (args.gpu_memory_bytes or gpu.cuda_total_bytes):
        # vLLM cannot have booted these weights on this card: the config is not the served checkpoint's
        # (club-3090's Qwen3.6-27B on 24 GiB cards with Qwen3.5-27B's bf16 config standing in)
        row.out_of_range = "weights: the config's weights per rank exceed the GPU: a stand-in for the checkpoint served"
        return row
    # the compile cache's state as the log shows it (corpus logs are named relative to DATA);
    # warm: vLLM loads a compiled artifact ("Directly load the compiled graph", 0.27.1's "Directly
    # load AOT compilation"); cold: it compiles one
    log = str(entry["log"])
    log_path = REPO / log if log.startswith("tests/") else DATA / log
    log_text = log_path.read_text(errors="replace") if log_path.is_file() else ""
    if "Directly load the compiled graph" in log_text or "Directly load AOT compilation" in log_text:
        row.cache = "warm"
    elif "Compiling a graph for" in log_text or "torch.compile takes" in log_text:
        row.cache = "cold"
    elif entry.get("compile_cache") in ("cold", "warm"):
        # an excerpt without the compile lines: the state its deployment forces, as the entry's
        # compile_cache_note shows (a container started afresh without a volume on vLLM's cache)
        row.cache = str(entry["compile_cache"])
    # the V1-engine releases before 0.27.1 have only the V1 runner; from 0.27.1 dryboot decides
    # (uses_v2_model_runner) where the log does not name it
    runner = entry.get("runner") if entry.get("runner") in ("V1", "V2") else ("V1" if release < (0, 27, 1) else None)
    if not estimate_on:
        args = args.evolve(enforce_eager=args.enforce_eager)  # the graph term is dropped below
    try:
        budget = _estimate(model, args, weights.stages[0].loaded_bytes, gpu, version, config_json, runner, row.cache)
    except InputError as e:  # a term dryboot refuses to bound (a multimodal encoder...)
        row.out_of_range = e.line()
        return row
    row.cold_gib = sum(t.high for t in budget.terms if t.name == "activation: cold torch.compile") / GIB
    row.graph_logged_gib = logged.get("cuda_graph_estimate_gib")
    row.graph_low_gib, row.graph_high_gib = budget.cuda_graph_bytes.low / GIB, budget.cuda_graph_bytes.high / GIB
    kv = budget.available_kv_cache_bytes
    low, est, high = kv.low, kv.estimate, kv.high
    if not estimate_on:
        cg = budget.cuda_graph_bytes
        low, est, high = low + cg.high, est + (cg.low + cg.high) // 2, high + cg.low
    row.low_gib, row.estimate_gib, row.high_gib = low / GIB, est / GIB, high / GIB
    return row


def _budget_of_tokens(model: Any, args: Any, tokens: int) -> int:
    """The KV budget vLLM had when it printed ``GPU KV cache size: tokens``: the smallest budget
    whose plan prints those tokens (the budget lies less than one block of every group above).
    Found by bisection over dryboot's own capacity, so a hybrid model (sliding-window and full
    attention groups, whose tokens are not ``blocks x block_size``) is inverted as vLLM counts it."""
    low, high = 0, 1 << 40  # plan(low) < tokens <= plan(high)
    while high - low > 1:
        mid = (low + high) // 2
        capacity = plan(model, args.evolve(kv_cache_memory_bytes=mid)).capacity
        assert capacity is not None
        if capacity.kv_cache_size_tokens >= tokens:
            high = mid
        else:
            low = mid
    return high


def _estimate(
    model: Any, args: Any, weights: int, gpu: GPU, version: str, config: Any, runner: Any, cache: str
) -> Budget:
    return estimate_budget(
        model,
        args,
        weights_bytes=weights,
        gpu=gpu,
        rules=rules_for(version),
        shape=forward_shape(config),
        runner=runner,
        compile_cache=cache,
    )


ROWS = [r for r in (calibrate(e) for e in ENTRIES) if r is not None]
MODELLED_ROWS = [r for r in ROWS if not r.out_of_range]

#: modelled boots whose logged figure lies outside dryboot's interval, each with what the log shows
#: against the model (strict: a fix turns them into failures to remove from here)
KNOWN_MISSES = {
    "vllm-pr21429-qwen3-235b-fp8-tp4-debug-before": (
        "0.10 main, Qwen3-235B-A22B-FP8 TP 4 at util 0.5: the DEBUG line logs a torch peak increase of 5.62 GiB "
        "(dryboot 2.03-2.32, +1.86 cold compile: 1024 rows x 151,936 logits at 0.28's 14-16 B per logit) and "
        "non-torch 2.04 GiB (dryboot 0.15-1.07): 0.10's sampler warm-up and TP 4 non-torch growth are wider "
        "than 0.27.1's, not modelled per release before 0.27.1"
    ),
    "llmso-qwen25-7b-instruct-bf16-4090-wsl2": (
        "0.27.1, Qwen2.5-7B-Instruct on an RTX 4090 under WSL2 at util 0.92: 102,544 KV tokens are 5.48 GiB, "
        "dryboot 5.60-7.37 (V2 runner, max_num_batched_tokens 2048 as 0.27.1 gives the API server on a card under "
        "70 GiB; forward 0.24-0.37, cold compile 0-1.07, non-torch 0.15-0.68 GiB; the base config stands in, the "
        "Instruct checkpoint's 32,768 rotary positions would make its weights 48 MiB smaller). The same run's other "
        "boots (bench_local.sh, the same flags, one after another) say which term: the GPTQ-Int4 boot is 0.74 GiB "
        "under dryboot's estimate, this one 1.62, and the post's 'VRAM used' after each start is 908 MiB lower here "
        "(22,951 MiB against 23,859; FP8-dynamic 23,792). What stays resident after a start is the request less the "
        "profile's transient peak (plus the graphs), so the 0.89 GiB more that this boot lost is a profile-time "
        "transient of the unquantized boot, not non-torch memory: an activation peak ~0.9 GiB above the quantized "
        "boots' at the same shapes, which neither the forward (the same for both) nor the cold-compile span covers; "
        "the excerpt has no summary line to name it further. Re-read (eighth pass): the source names no other process "
        "on the GPU and no other flags (bench_local.sh serves the three checkpoints one after another at "
        "--max-model-len 8192 --gpu-memory-utilization 0.92, bf16 first; the Lab 2 commands at 4096 / 0.90 are not "
        "the logged run), and the checkpoint is Qwen/Qwen2.5-7B-Instruct; even a cold compile at its high bound "
        "leaves the interval's low end 0.12 GiB above the logged figure: a real miss, not modelled"
    ),
}

#: modelled boots inside the interval whose interval is wider than max(1 GiB, 10 %) (issue 33 (b))
WIDE = {
    "vllm-pr21429-qwen3-235b-fp8-tp4-debug-before": "1.49 GiB wide (TP 4 non-torch and NCCL ranges, 0.10 main)",
    "kubesimplify-qwen3-32b-rtxpro6000se-tp1-negative": (
        "1.36 GiB at TP 1 without the cold term: forward 1.33-1.99 (100-150 %, 8,192 batched tokens on the "
        "0.27.1 V2 runner), non-torch 0.15-0.68, runner buffers 0-0.16 GiB; the logged -24.42 needs every high bound "
        "(3.86 of 3.90 GiB non-KV with the cold term), so none narrows (EVIDENCE, eighth pass)"
    ),
    "kubesimplify-qwen3-32b-rtxpro6000se-tp2": (
        "1.83 GiB at TP 2 on a first start (a new container, vLLM's compile cache not on a volume): forward/sampler "
        "0.74-1.11, cold compile 0.70-1.07, non-torch 0.15-0.68, NCCL 0-0.39, buffers 0-0.16 GiB; the logged "
        "1.66 GiB of non-KV memory sits 0.08 above the sum of the low bounds while the TP 1 boot of the same host "
        "needs every high bound (EVIDENCE, eighth pass): no bound narrows without taking one of them out"
    ),
    "coldstart-recon-qwen3-8b-4090-runpod-cold-0": (
        "1.03 GiB on a first start (the log compiles): the later starts' 0.65 (non-torch 0.54, forward/sampler "
        "0.09, buffers 0.03) plus the cold-compile term's 0.37 (+0.70-1.07 GiB: the cold/warm boots of "
        "0.27.1-0.30 lose +0.73 (0.30.0, a note's eager boot), +0.87, +0.97, +0.99 and +1.05 GiB of KV)"
    ),
    "club3090-612-qwen36-35b-a3b-nvfp4-5090-v0.24.0": (
        "3.24 GiB (0.24.0): the multimodal encoder's profile, 0.25-2.58 GiB for one 16,384-token image through "
        "the Qwen3.5/3.6 ViT (no boot of 0.27.1-0.33 with its memory lines narrows it), and a cold compile the "
        "log does not rule out (0-1.07 GiB where its state is unknown)"
    ),
    "club3090-652-qwen36-35b-a3b-5090-v0.24.0": (
        "3.24 GiB (0.24.0): the multimodal encoder's profile (0.25-2.58 GiB) and the unknown compile cache, as "
        "the NVFP4 boot of the same host"
    ),
    "statecraft-qwen25-15b-4070laptop-wsl2-v0.30.0-smoke": (
        "1.26 GiB on a first start (every start is a fresh container without a volume on vLLM's compile cache): "
        "the cold-compile term +0.70-1.07, non-torch 0.15-0.68, the V2 runner's graph estimate 0.13-0.37 and the "
        "forward/sampler ranges; the logged 1.95 GiB is 8.9 % above the estimate, near the high bound (this "
        "machine's own eager note puts its cold share at ~0.73 GiB, the term's low end)"
    ),
    "kubesimplify-qwen3-32b-rtxpro6000se-pp2": (
        "2.12 GiB at PP 2 on a first start (a new container): forward 1.33-1.99 (stage 0 at 8,192 batched tokens), "
        "cold compile 0.70-1.07, non-torch 0.15-0.68, NCCL 0-0.39, buffers 0-0.16 GiB; between the TP 2 boot (at the "
        "low bounds) and the TP 1 boot (at the high bounds) of the same host (EVIDENCE, eighth pass)"
    ),
}


def _rows(rows: list[Row], misses: dict[str, str]) -> list[Any]:
    return [
        pytest.param(r, id=r.log, marks=pytest.mark.xfail(strict=True, reason=misses[r.log]))
        if r.log in misses
        else pytest.param(r, id=r.log)
        for r in rows
    ]


@pytest.mark.parametrize("row", _rows(MODELLED_ROWS, KNOWN_MISSES))
def test_logged_kv_inside_the_interval(row: Row) -> None:
    assert row.inside, f"{row.logged_gib} not in [{row.low_gib:.2f}, {row.high_gib:.2f}]"


@pytest.mark.parametrize("row", _rows(MODELLED_ROWS, WIDE))
def test_interval_width(row: Row) -> None:
    assert row.width_ok, f"width {row.high_gib - row.low_gib:.2f} GiB"


GRAPH_ROWS = [r for r in MODELLED_ROWS if r.graph_logged_gib is not None]


@pytest.mark.parametrize("row", GRAPH_ROWS, ids=[r.log for r in GRAPH_ROWS])
def test_logged_graph_estimate_inside_the_graph_term(row: Row) -> None:
    assert row.graph_logged_gib is not None
    assert row.graph_low_gib - 0.005 <= row.graph_logged_gib <= row.graph_high_gib + 0.005


RECENT_ROWS = [r for r in MODELLED_ROWS if (_release(r.release) or (0, 0, 0)) >= (0, 27, 1)]


def test_median_error_at_most_3_percent() -> None:
    """The issue's "median |estimate - logged| at most 3 %" over the boots of the releases dryboot models
    with their own rules (0.27.1-0.33)."""
    assert RECENT_ROWS
    assert statistics.median(abs(r.error) for r in RECENT_ROWS) <= 0.03


def test_median_error_of_the_v1_era_rows() -> None:
    """The older V1-engine rows (0.10-0.26, checked with 0.27.1's rules) as before: median at most 3 %."""
    older = [r for r in MODELLED_ROWS if r not in RECENT_ROWS]
    assert older
    assert statistics.median(abs(r.error) for r in older) <= 0.03


def _logged(log: str) -> dict[str, Any]:
    return next(e for e in ENTRIES if Path(str(e["log"])).stem == log)


def test_the_cold_compile_term_holds_the_releases_cold_warm_boots() -> None:
    """``activation: cold torch.compile`` (``COLD_COMPILE_MIB``) holds the KV a first start loses
    against a later one on every upstream release's boots that separate it, each figure printed to
    the hundredth (one hundredth of slack per figure): the corpus's three logged pairs (0.27.1 twice,
    0.29.0 at util 0.80 against 0.79, brought to equal util), and the two figures of posts that are
    not rows (the reference RTX 3090 deployment's peak +0.87; the 0.30.0 WSL2 note's eager boot,
    1.08 GiB more KV less its 0.35 GiB graph figure). The golite fork's pair (+0.40) is not a
    release's (its rows are out of range) and is not held."""
    lost = []
    for cold, warm in (
        ("coldstart-recon-qwen3-8b-4090-runpod-cold-0", "coldstart-recon-qwen3-8b-4090-runpod-warm-1"),
        ("coldstart-a4-qwen3-17b-4090-runpod-cold", "coldstart-a4-qwen3-17b-4090-runpod-warm"),
        ("pickr-qwen25-3b-awq-4050laptop-wsl2-v0.29.0-cold", "pickr-qwen25-3b-awq-4050laptop-wsl2-v0.29.0-warm"),
    ):
        c, w = _logged(cold)["logged"], _logged(warm)["logged"]
        # the share each requested (both summary lines print it): the cold pickr boot's util is 0.01 higher
        util_gap = c["requested_gib"] - w["requested_gib"]
        lost.append(w["available_kv_cache_gib"] - c["available_kv_cache_gib"] + util_gap)
    assert [round(x, 2) for x in lost] == [0.99, 1.05, 0.97]
    lost += [1.96 - 1.09, 3.01 - 1.93 - 0.35]
    lo, hi = COLD_COMPILE_MIB[0] / 1024, COLD_COMPILE_MIB[1] / 1024
    assert lo <= min(lost) - 0.02 and max(lost) + 0.02 <= hi


def test_out_of_range_rows_say_why() -> None:
    for r in ROWS:
        assert r.out_of_range or r.high_gib > r.low_gib
        assert "\n" not in r.out_of_range


def table() -> str:
    lines = [
        "| log | release (era) | logged | dryboot low / estimate / high | error | in | width (GiB) | compile cache |",
        "|---|---|---:|---|---:|---|---|---|",
    ]
    for r in ROWS:
        if r.out_of_range:
            logged = "tokens only" if math.isnan(r.logged_gib) else f"{r.logged_gib:.2f}"
            why = r.out_of_range.replace(f"{REPO}/", "")[:110]  # repository paths, not this checkout's
            lines.append(f"| {r.log} | {r.release} | {logged} | out of range: {why} | | | | |")
        else:
            lines.append(
                f"| {r.log} | {r.release} ({r.era}) | {r.logged_gib:.2f} | {r.low_gib:.2f} / {r.estimate_gib:.2f} / "
                f"{r.high_gib:.2f} | {r.error:+.1%} | {'yes' if r.inside else 'NO'} | "
                f"{r.width_gib:.2f}{'' if r.width_ok else ' (wide)'} | {r.cache}"
                f"{f' (+{r.cold_gib:.2f} cold-compile high)' if r.cache == 'unknown' and r.cold_gib else ''} |"
            )
    return "\n".join(lines)


if __name__ == "__main__":
    print(table())

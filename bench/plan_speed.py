"""Time dryboot's planner: in-process time per full plan, and the CLI's wall time.

Run from the repository root: ``python bench/plan_speed.py [--runs N] [--cli-runs N]``.

Cases (in process, median of ``--runs`` plans after a warm-up):

* ``qwen3-next``: the issue-2 acceptance case (Qwen3-Next-80B-A3B-Thinking, TP 1, bf16,
  ``--max-model-len 262144``, 40 GiB of KV budget): 48 layers, capacity included.
* ``section7-fast``: the section-7 reference profile CTX=fast (Qwen3.5-27B geometry,
  ``--mamba-ssm-cache-dtype float16``, 7 speculative tokens, the 5-layer DFlash2 drafter,
  ``promote-granular`` + ``pad-sliding-window-buckets``, 5,583,457,484 B).

CLI: wall time of ``dryboot plan --model examples/models/Qwen3-Next-80B-A3B-Thinking.config.json
--max-model-len 262144 --kv-cache-memory-bytes 40G`` (subprocess, median of ``--cli-runs``),
or of ``dryboot --help`` when the ``plan`` command is not installed yet (said in the output).

Targets: <= 1 ms per plan, <= 0.3 s per CLI call. Exit 0 always (the figures are the output).
"""

from __future__ import annotations

import argparse
import shutil
import statistics
import subprocess
import sys
import time
from collections.abc import Callable
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
MODELS = ROOT / "examples" / "models"
PLAN_TARGET_MS = 1.0
CLI_TARGET_S = 0.3
CLI_PLAN = [
    "plan",
    "--model",
    "examples/models/Qwen3-Next-80B-A3B-Thinking.config.json",
    "--max-model-len",
    "262144",
    "--kv-cache-memory-bytes",
    "40G",
]


def _cases() -> dict[str, Callable[[], object]]:
    from dryboot.planner.plan import Drafter, Policies, plan
    from dryboot.vllm.engine_args import EngineArgs
    from dryboot.vllm.transformers_utils.config import load_model

    qwen_next = load_model(MODELS / "Qwen3-Next-80B-A3B-Thinking.config.json")
    next_args = EngineArgs(max_model_len=262144, kv_cache_memory_bytes=42949672960)
    target = load_model(MODELS / "Qwen3.5-27B.config.json")
    drafter = Drafter(load_model(MODELS / "dflash2-drafter-sw5.config.json"), method="dflash")
    fast_args = EngineArgs(
        mamba_ssm_cache_dtype="float16",
        num_speculative_tokens=7,
        max_model_len=65536,
        max_num_batched_tokens=2048,
        kv_cache_memory_bytes=5583457484,
    )
    pol = Policies(grouping="pad-sliding-window-buckets", unification="promote-granular")
    return {
        "qwen3-next": lambda: plan(qwen_next, next_args),
        "section7-fast": lambda: plan(target, fast_args, drafter=drafter, policies=pol),
    }


def time_in_process(runs: int) -> dict[str, float]:
    """Median milliseconds per plan for each case."""
    out: dict[str, float] = {}
    for name, fn in _cases().items():
        for _ in range(min(50, runs)):
            fn()
        samples = []
        for _ in range(runs):
            t0 = time.perf_counter()
            fn()
            samples.append(time.perf_counter() - t0)
        out[name] = statistics.median(samples) * 1e3
    return out


def _dryboot_cmd() -> list[str]:
    exe = shutil.which("dryboot")
    return [exe] if exe else [sys.executable, "-m", "dryboot"]


def plan_command_available() -> bool:
    proc = subprocess.run([*_dryboot_cmd(), "plan", "--help"], cwd=ROOT, capture_output=True, text=True, check=False)
    return proc.returncode == 0


def time_cli(runs: int) -> tuple[list[str], float, float, int]:
    """(argv, median s, min s, exit code of the last run)."""
    argv = CLI_PLAN if plan_command_available() else ["--help"]
    cmd = [*_dryboot_cmd(), *argv]
    subprocess.run(cmd, cwd=ROOT, capture_output=True, check=False)  # warm the page cache
    samples = []
    rc = 0
    for _ in range(runs):
        t0 = time.perf_counter()
        proc = subprocess.run(cmd, cwd=ROOT, capture_output=True, check=False)
        samples.append(time.perf_counter() - t0)
        rc = proc.returncode
    return ["dryboot", *argv], statistics.median(samples), min(samples), rc


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0] if __doc__ else None)
    ap.add_argument("--runs", type=int, default=2000, help="plans per in-process case")
    ap.add_argument("--cli-runs", type=int, default=10, help="CLI invocations")
    ns = ap.parse_args(argv)

    print(f"in-process, median of {ns.runs} plans (target <= {PLAN_TARGET_MS} ms):")
    for name, ms in time_in_process(ns.runs).items():
        verdict = "ok" if ms <= PLAN_TARGET_MS else "OVER TARGET"
        print(f"  {name:<14} {ms:8.3f} ms/plan  ({1e3 / ms:,.0f} plans/s)  {verdict}")

    cmd, median, best, rc = time_cli(ns.cli_runs)
    if cmd[1:] == ["--help"]:
        print("note: `dryboot plan` is not installed yet; timing `dryboot --help` instead")
    verdict = "ok" if median <= CLI_TARGET_S else "OVER TARGET"
    print(f"CLI, {ns.cli_runs} runs (target <= {CLI_TARGET_S} s): {' '.join(cmd)}")
    print(f"  median {median:.3f} s, best {best:.3f} s, exit {rc}  {verdict}")
    return 0


if __name__ == "__main__":
    sys.exit(main())

"""What the weights and the KV budget add to a plan (issue 33: at most 20 ms at the 95th percentile).

For a few configs on the GPUs named, three ways to answer the same command line:

- ``plan``: the geometry alone with a pinned pool (``plan --kv-cache-memory-bytes``, no weights);
- ``+weights``: that, plus the per-rank weights (``model_weights``) and their check against the GPU
  (what ``dryboot plan --gpu G --kv-cache-memory-bytes`` does);
- ``+budget``: ``plan_with_budget`` with the weights (``dryboot plan --gpu G``): the first and the
  later starts' budgets, the plans at each bound, the verdict and the safe pool's check.

Prints the 50th and 95th percentiles (ms) of each, what the weights and the budget add at the 95th
percentile (difference, ms) and the ratio against the plain plan.

    PYTHONPATH=src python3 bench/budget_speed.py [REPEATS]   (default 60)
"""

from __future__ import annotations

import json
import statistics
import sys
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

from dryboot.planner.budget import plan_with_budget, with_weights_check
from dryboot.planner.plan import plan
from dryboot.planner.runner import build_engine_args
from dryboot.vllm.gpus import parse_gpu
from dryboot.vllm.model_executor.model_loader.loader import model_weights

REPO = Path(__file__).resolve().parents[1]
CASES = [
    ("tests/data/configs/public/Qwen--Qwen3-8B/config.json", "RTX 3090", "32768"),
    ("tests/data/configs/public/Qwen--Qwen3-32B-FP8/config.json", "L40S", "40960"),
    ("tests/data/configs/public/Qwen--Qwen3-30B-A3B/config.json", "H100", "40960"),
    ("tests/data/configs/public/Qwen--Qwen3.5-27B/config.json", "RTX PRO 6000 Blackwell", "65536"),
]
LIMIT_MS = 20.0


def _clear_caches() -> None:
    """Each repeat as a fresh ``dryboot plan`` process sees it: the planner's per-args caches
    (resolve, dtypes, kv_cache_spec, promotion) emptied; the GPU table and the rules stay loaded."""
    from dryboot.planner.policies import promotion
    from dryboot.vllm import dtypes, kv_cache_spec
    from dryboot.vllm.config import resolve

    for mod in (resolve, dtypes, kv_cache_spec, promotion):
        for name in dir(mod):
            clear = getattr(getattr(mod, name), "cache_clear", None)
            if callable(clear) and getattr(getattr(mod, name), "__module__", "") == mod.__name__:
                clear()


def _times_ms(fn: Callable[[], None], repeats: int) -> list[float]:
    out = []
    for _ in range(repeats):
        _clear_caches()
        t = time.perf_counter()
        fn()
        out.append((time.perf_counter() - t) * 1000)
    return out


def _p(values: list[float], q: int) -> float:
    return statistics.quantiles(values, n=100, method="inclusive")[q - 1]


def main(repeats: int) -> int:
    cols = f"{'plan p50/p95':>13} {'+weights p95':>12} {'+budget p95':>11} {'added p95':>9} {'ratio':>6}"
    print(f"{'config':34} {'gpu':22} {cols}")
    worst = 0.0
    for rel, gpu_name, length in CASES:
        path = REPO / rel
        if not path.exists():
            continue
        model, args = build_engine_args(str(path), {"max-model-len": length}, [])
        args = args.evolve(gpu=parse_gpu(gpu_name))
        config = json.loads(path.read_text())
        pinned = args.evolve(kv_cache_memory_bytes=8 << 30)

        def plain(model: Any = model, pinned: Any = pinned) -> None:
            plan(model, pinned)

        def weighted(path: Path = path, model: Any = model, pinned: Any = pinned) -> None:
            w = model_weights(path)
            with_weights_check(plan(model, pinned), pinned, max(s.allocated_bytes for s in w.stages))

        def budgeted(path: Path = path, model: Any = model, args: Any = args, config: Any = config) -> None:
            w = model_weights(path)
            plan_with_budget(model, args, config=config, weights_bytes=w.stages[0].allocated_bytes)

        for fn in (plain, weighted, budgeted):
            fn()  # warm caches (the GPU table, the rules)
        a, b, c = (_times_ms(fn, repeats) for fn in (plain, weighted, budgeted))
        added = _p(c, 95) - _p(a, 95)
        worst = max(worst, added)
        name = rel.split("/")[-2][-34:]
        print(
            f"{name:34} {gpu_name:22} {_p(a, 50):6.2f}/{_p(a, 95):6.2f} {_p(b, 95):12.2f} {_p(c, 95):11.2f} "
            f"{added:9.2f} {_p(c, 95) / _p(a, 95):5.1f}x"
        )
    verdict = "within" if worst <= LIMIT_MS else "ABOVE"
    print(f"largest addition at the 95th percentile: {worst:.2f} ms ({verdict} the {LIMIT_MS:.0f} ms target)")
    return 0 if worst <= LIMIT_MS else 1


if __name__ == "__main__":
    sys.exit(main(int(sys.argv[1]) if len(sys.argv) > 1 else 60))

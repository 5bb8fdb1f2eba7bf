"""What the KV budget adds to a plan's time (issue 27: route b, at most 20 ms).

For a few configs, on the GPUs named: the median wall time of ``plan`` with a pinned budget (the
plan the user would otherwise run) against ``plan_with_budget`` (the budget estimate, the plan at
the estimate and at both bounds, the verdict), the weights' own read included in both as
``dryboot plan`` does it. Prints each time, the difference in ms and the ratio.

    PYTHONPATH=src python3 bench/budget_speed.py [REPEATS]   (default 30)
"""

from __future__ import annotations

import json
import statistics
import sys
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

from dryboot.planner.budget import plan_with_budget
from dryboot.planner.plan import plan
from dryboot.planner.runner import build_engine_args
from dryboot.vllm.gpus import parse_gpu
from dryboot.vllm.model_executor.model_loader.loader import model_weights

REPO = Path(__file__).resolve().parents[1]
CASES = [
    ("tests/data/checklog/public/configs/Qwen--Qwen3-8B.config.json", "RTX 3090"),
    ("tests/data/checklog/public/configs/Qwen--Qwen3-14B.config.json", "L40S"),
    ("tests/fidelity/data/weights/configs/Qwen--Qwen3-30B-A3B/config.json", "H100"),
]


def _median_ms(fn: Callable[[], None], repeats: int) -> float:
    times = []
    for _ in range(repeats):
        t = time.perf_counter()
        fn()
        times.append(time.perf_counter() - t)
    return statistics.median(times) * 1000


def main(repeats: int) -> None:
    print(f"{'config':55} {'gpu':9} {'plan ms':>8} {'+budget ms':>10} {'added ms':>9} {'ratio':>6}")
    for rel, gpu_name in CASES:
        path = REPO / rel
        if not path.exists():
            continue
        model, args = build_engine_args(str(path), {}, [])
        gpu = parse_gpu(gpu_name)
        args = args.evolve(gpu=gpu)
        config = json.loads(path.read_text())
        pinned = args.evolve(kv_cache_memory_bytes=8 << 30)

        def plain(path: Path = path, model: Any = model, pinned: Any = pinned) -> None:
            model_weights(path)
            plan(model, pinned)

        def budgeted(path: Path = path, model: Any = model, args: Any = args, config: Any = config) -> None:
            w = model_weights(path)
            plan_with_budget(model, args, config=config, weights_bytes=w.stages[0].allocated_bytes)

        plain()
        budgeted()  # warm caches (the GPU table, the rules)
        a, b = _median_ms(plain, repeats), _median_ms(budgeted, repeats)
        print(f"{rel[-55:]:55} {gpu_name:9} {a:8.2f} {b:10.2f} {b - a:9.2f} {b / a:6.2f}x")


if __name__ == "__main__":
    main(int(sys.argv[1]) if len(sys.argv) > 1 else 30)

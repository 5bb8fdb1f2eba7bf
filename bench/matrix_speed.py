"""``dryboot matrix`` throughput: cells per second at 1, 2 and N local workers, and the cost of a
cell on a warm worker against one ``dryboot boot`` process per cell.

Run from the repository root (needs vLLM 0.28.0's boot environment)::

    python bench/matrix_speed.py [--python PYTHON] [--cells N] [--processes K]

1. A matrix of ``--cells`` cells (light published configs of tests/data/configs/public x six
   GPUs, one pinned flag set) with one arm, the 0.28.0 release, no cache, run on
   :class:`dryboot.matrix.local.LocalBackend` with 1, 2 and N = ``os.cpu_count()`` workers, each a
   fresh pool (vLLM's import in each worker is part of the wall time) -> cells per second and the
   speed-up against 1 worker (target: >= 0.8 x workers).
2. Per-cell cost on a warm worker: the median engine start of the 1-worker run after its first
   cell (dryboot's plan of the cell included in its own task).
3. The alternative: ``--processes`` cells each run as its own ``dryboot boot`` process (vLLM's
   import every time) -> seconds per cell, and the ratio to the warm per-cell cost.
4. With ``--ray`` (needs ``dryboot[ray]``): the same matrix on a local Ray cluster the bench
   starts (``ray start --head`` on loopback, two CPUs: two actors,
   :func:`dryboot.matrix.ray_backend.local_head`) -> cells per second against 1 and 2 local
   workers (the actors' start and vLLM's import in each are part of the wall time, as the pool's
   are; attaching to the cluster is not).

The interpreter: ``--python``, else ``$DRYBOOT_BOOT_PYTHON``, else ``~/.cache/dryboot/boot-env/0.28.0``.
Wall times on a shared machine vary with its load: the script prints the 1-minute load average
beside them.
"""

from __future__ import annotations

import argparse
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "src"))

from dryboot.boot.env import default_env_dir, installed_vllm  # noqa: E402
from dryboot.matrix.cache import Cache  # noqa: E402
from dryboot.matrix.local import LocalBackend  # noqa: E402
from dryboot.matrix.model import PLAN_ARM, MatrixResult  # noqa: E402
from dryboot.matrix.run import run_matrix  # noqa: E402
from dryboot.matrix.spec import load_matrix  # noqa: E402

CONFIGS = ROOT / "tests" / "data" / "configs" / "public"
MODELS = (
    "Qwen--Qwen3-0.6B",
    "Qwen--Qwen3-1.7B",
    "Qwen--Qwen2.5-1.5B",
    "Qwen--Qwen2.5-7B",
    "Qwen--Qwen3-8B",
    "meta-llama--Llama-2-7b-hf",
    "meta-llama--Meta-Llama-3-8B-Instruct",
    "meta-llama--Meta-Llama-3.1-8B",
    "mistralai--Mistral-Nemo-Base-2407",
    "google--gemma-2-9b-it",
)
GPUS = ("RTX 3090", "RTX 4090", "L40S", "A100-80GB", "H100", "B200")
FLAGS = "vllm serve --max-model-len 4096 --kv-cache-memory-bytes 3G"
#: more flag sets, for matrices beyond models x GPUs (the issue's matrices have several)
MORE_LENGTHS = (8192, 2048, 16384, 1024, 32768)


def _matrix_file(directory: Path, python: str, cells: int) -> Path:
    n_models = max(1, min(len(MODELS), -(-cells // len(GPUS))))
    n_flags = max(1, min(1 + len(MORE_LENGTHS), -(-cells // (len(GPUS) * len(MODELS)))))
    models = "\n".join(f'"{m}" = "{CONFIGS / m}"' for m in MODELS[:n_models])
    gpus = ", ".join(f'"{g}"' for g in GPUS)
    flags = [f'pinned = "{FLAGS}"'] + [
        f'len{n} = "{FLAGS.replace("4096", str(n))}"' for n in MORE_LENGTHS[: n_flags - 1]
    ]
    text = (
        f"gpus = [{gpus}]\n[models]\n{models}\n[flags]\n" + "\n".join(flags) + "\n"
        f'[arms.release]\nrelease = "0.28.0"\npython = "{python}"\n'
    )
    p = directory / "bench-matrix.toml"
    p.write_text(text)
    return p


def _run(path: Path, workers: int, work: Path) -> tuple[MatrixResult, float]:
    matrix = load_matrix(path, work / "models")
    t0 = time.perf_counter()
    with LocalBackend(workers) as backend:
        res = run_matrix(matrix, backend, Cache(None), None, work / f"w{workers}")
    return res, time.perf_counter() - t0


def _ray_column(path: Path, work: Path, rates: dict[int, float]) -> None:
    from dryboot.matrix.ray_backend import RayBackend, local_head

    with local_head(cpus=2) as address:
        backend = RayBackend(address)
        try:
            matrix = load_matrix(path, work / "models")
            t0 = time.perf_counter()
            res = run_matrix(matrix, backend, Cache(None), None, work / "ray")
            wall = time.perf_counter() - t0
        finally:
            backend.close()
    n = len(res.cells)
    rate = n / wall
    bad = [c.id for c in res.cells if c.status != "met"]
    versus = ", ".join(f"x{rate / rates[w]:.2f} of {w} local worker(s)" for w in sorted(rates) if w <= 2)
    print(
        f"  Ray, 2 actors on a local cluster: {n} cells in {wall:.1f} s = {rate:.2f} cells/s ({versus}; load {_load()})"
        + (f"; not met: {bad[:3]}" if bad else "")
    )


def _load() -> str:
    try:
        return f"{os.getloadavg()[0]:.1f}"
    except OSError:
        return "?"


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--python", default=os.environ.get("DRYBOOT_BOOT_PYTHON"))
    ap.add_argument("--cells", type=int, default=60, help="cells (whole models x 6 GPUs; past 60, more flag sets)")
    ap.add_argument("--processes", type=int, default=3, help="cells run as one `dryboot boot` process each")
    ap.add_argument("--ray", action="store_true", help="also on a local two-CPU Ray cluster (dryboot[ray])")
    opts = ap.parse_args()
    python = opts.python or str(default_env_dir("0.28.0") / "bin" / "python")
    if not Path(python).is_file():
        print(f"no boot environment: build it (dryboot boot-env --vllm-version 0.28.0) or pass --python ({python})")
        return 2
    cores = os.cpu_count() or 1
    counts = sorted({1, 2, cores})
    with tempfile.TemporaryDirectory(prefix="dryboot-bench-matrix-") as tmp:
        work = Path(tmp)
        path = _matrix_file(work, python, opts.cells)
        rates: dict[int, float] = {}
        warm: list[float] = []
        print(f"matrix: {path.read_text().count(chr(10))} lines; {cores} cores; load {_load()}")
        for w in counts:
            res, wall = _run(path, w, work)
            n = len(res.cells)
            bad = [c.id for c in res.cells if c.status != "met"]
            rates[w] = n / wall
            print(
                f"  {w} worker(s): {n} cells in {wall:.1f} s = {rates[w]:.2f} cells/s"
                f" (speed-up x{rates[w] / rates[1]:.2f}; load {_load()})" + (f"; not met: {bad[:3]}" if bad else "")
            )
            if w == 1:
                boots = [c.arms["release"].seconds for c in res.cells if c.arms["release"].status == "ok"]
                plans = [c.plan.seconds for c in res.cells if c.plan.arm == PLAN_ARM]
                warm = boots[1:]
                plan_s = statistics.median(plans)
                print(
                    f"  warm worker: median engine start {statistics.median(warm):.2f} s a cell "
                    f"(first cell, with vLLM's import: {boots[0]:.1f} s); dryboot's plan {plan_s:.3f} s"
                )
        if opts.ray:
            _ray_column(path, work, rates)
        tree = installed_vllm(python).parent
        per_process = []
        for model, gpu in list(zip(MODELS, GPUS, strict=False))[: opts.processes]:
            cmd = [sys.executable, "-m", "dryboot", "boot", "--vllm", str(tree), "--python", python]
            cmd += ["--model", str(CONFIGS / model), "--gpu", gpu, *FLAGS.split()[2:]]
            env = {**os.environ, "PYTHONPATH": str(ROOT / "src")}
            t0 = time.perf_counter()
            done = subprocess.run(cmd, capture_output=True, text=True, env=env, check=False)
            per_process.append(time.perf_counter() - t0)
            if done.returncode not in (0, 1):
                print(f"  dryboot boot failed ({done.returncode}): {done.stderr.strip()[-300:]}")
        one = statistics.median(per_process)
        warm_cell = statistics.median(warm)
        print(
            f"  one `dryboot boot` process per cell: {one:.1f} s a cell (median of {len(per_process)}; load {_load()})"
        )
        print(f"ratios: warm cell {warm_cell:.2f} s vs a process per cell {one:.1f} s = x{one / warm_cell:.0f} faster;")
        print(
            "        workers "
            + ", ".join(f"{w}: x{rates[w] / rates[1]:.2f} ({rates[w] / rates[1] / w:.2f} of linear)" for w in counts)
        )
    return 0


if __name__ == "__main__":
    sys.exit(main())

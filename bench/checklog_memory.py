"""check-log's peak memory against the number of boots in one log: the boot vLLM wrote in
tests/data/checklog/tp2.log repeated N times (each repeat a boot of its own, as a server
restarted N times appends to one file), checked by ``dryboot check-log`` in its own process
with its report sent to /dev/null.

    python bench/checklog_memory.py [N ...]   (default 1 10 100 1000 10000)

Prints, per N: the log's size, the time, the peak RSS (ru_maxrss) and its ratio to the peak
with one boot (flat memory: a ratio near 1 whatever N). The real alternative is the same
command holding every boot's report until the end, as check-log did before (1.35 GB for
27,671 boots); add ``--json`` to measure the JSON report.
"""

from __future__ import annotations

import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
CONFIG = REPO / "examples" / "models" / "Qwen3-Next-80B-A3B-Thinking.config.json"

PEAK = """
import resource, runpy, sys
sys.argv = ["dryboot", *sys.argv[1:]]
try:
    runpy.run_module("dryboot", run_name="__main__")
except SystemExit as exit:
    code = exit.code
print(resource.getrusage(resource.RUSAGE_SELF).ru_maxrss, code, file=sys.stderr)
"""


def measure(path: Path, extra: list[str]) -> tuple[float, float, int]:
    """(seconds, peak RSS in MB, exit code) of check-log on ``path``."""
    env = {**os.environ, "PYTHONPATH": str(REPO / "src")}
    start = time.perf_counter()
    out = subprocess.run(
        [sys.executable, "-c", PEAK, "check-log", str(path), "--model", str(CONFIG), *extra],
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
        text=True,
        env=env,
        check=False,
    )
    elapsed = time.perf_counter() - start
    rss_kb, code = out.stderr.strip().splitlines()[-1].split()
    return elapsed, int(rss_kb) / 1024, int(code)


def main() -> None:
    args = [a for a in sys.argv[1:] if not a.startswith("--")]
    extra = [a for a in sys.argv[1:] if a.startswith("--")]
    counts = [int(a) for a in args] or [1, 10, 100, 1000, 10000]
    boot = (REPO / "tests" / "data" / "checklog" / "tp2.log").read_bytes()
    print(f"{'boots':>7} {'log MB':>8} {'seconds':>8} {'peak RSS MB':>12} {'vs 1 boot':>10}  exit")
    base = None
    with tempfile.TemporaryDirectory() as tmp:
        for n in counts:
            path = Path(tmp) / f"boots-{n}.log"
            with path.open("wb") as f:
                for _ in range(n):
                    f.write(boot)
            seconds, rss, code = measure(path, extra)
            base = base or rss
            mb = path.stat().st_size / (1 << 20)
            print(f"{n:>7,} {mb:>8.1f} {seconds:>8.1f} {rss:>12.1f} {rss / base:>10.2f}  {code}")
            path.unlink()


if __name__ == "__main__":
    main()

"""check-log reading speed and memory on a large log: the streaming reader against reading the
whole file into memory first (what check-log did before), on the same synthetic log: the boot
vLLM wrote in tests/data/checklog/tp2.log followed by 2,000 serve-time lines in vLLM's formats
(the engine's periodic stats line and the HTTP access line, written by this script), repeated
to SIZE_MB (every repeat a boot of its own).

    python bench/checklog_speed.py [SIZE_MB]   (default 1024)

Prints MB/s and peak RSS (ru_maxrss) for each way, each run in its own process.
"""

from __future__ import annotations

import resource
import subprocess
import sys
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]

STREAM = """
import sys
from dryboot.checklog.parse import iter_boots, iter_numbered_log_lines, iter_relevant_lines
n = 0
with open(sys.argv[1], "rb") as f:
    for facts in iter_boots(iter_numbered_log_lines(iter_relevant_lines(f))):
        n += len(facts.kv_lines)
print(n)
"""
WHOLE = """
import sys
from dryboot.checklog.parse import iter_boots, iter_log_lines
text = open(sys.argv[1], "rb").read().decode("utf-8", "replace")
n = 0
for facts in iter_boots(iter_log_lines(text)):
    n += len(facts.kv_lines)
print(n)
"""


def run(code: str, path: Path) -> tuple[float, float, str]:
    start = time.perf_counter()
    before = resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss
    out = subprocess.run([sys.executable, "-c", code, str(path)], capture_output=True, text=True, check=True)
    elapsed = time.perf_counter() - start
    peak = resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss
    return elapsed, max(peak, before) / 1024, out.stdout.strip()


def main() -> None:
    size_mb = int(sys.argv[1]) if len(sys.argv) > 1 else 1024
    stats = (
        "(APIServer pid=23916) INFO 11-30 17:20:01 [loggers.py:257] Engine 000: Avg prompt throughput: 1234.5 "
        "tokens/s, Avg generation throughput: 56.7 tokens/s, Running: 3 reqs, Waiting: 0 reqs, GPU KV cache usage: "
        "12.3%, Prefix cache hit rate: 45.6%\n"
    )
    access = '(APIServer pid=23916) INFO:     127.0.0.1:51234 - "POST /v1/chat/completions HTTP/1.1" 200 OK\n'
    unit = (REPO / "tests/data/checklog/tp2.log").read_bytes() + ((stats + access * 9) * 200).encode()
    with tempfile.TemporaryDirectory() as tmp:
        path = Path(tmp) / "big.log"
        with path.open("wb") as f:
            written = 0
            while written < size_mb << 20:
                f.write(unit)
                written += len(unit)
        mb = written / (1 << 20)
        t, rss, n = run(STREAM, path)
        print(f"streamed : {mb:,.0f} MB in {t:.1f} s = {mb / t:,.1f} MB/s, peak RSS {rss:,.0f} MB ({n} KV lines)")
        if size_mb <= 256:
            t2, rss2, _ = run(WHOLE, path)
            print(f"whole    : {mb:,.0f} MB in {t2:.1f} s = {mb / t2:,.1f} MB/s, peak RSS {rss2:,.0f} MB")
            print(f"ratio    : streamed / whole time {t / t2:.2f}, memory {rss / rss2:.3f}")
        else:
            print("whole    : skipped above 256 MB (it holds the whole text: several GB of RSS)")


if __name__ == "__main__":
    main()

"""Record vLLM's answers for the newest configs (``newest_cases.py``).

    python3 tests/fidelity/record_newest.py ~/.cache/dryboot/boot-env/0.28.0/bin/python [--all] [GPU...]

The same recorder as ``record_frontier.py`` (``tests/data/gpus/run_oracle_as.py GPU``, the e2e
oracle answering as that row of ``gpus.toml``); writes ``data/newest/vllm-X.json``. Nothing
recorded comes from dryboot.
"""

from __future__ import annotations

import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

import newest_cases as N
import record_frontier


def main() -> int:
    args = sys.argv[1:]
    every = "--all" in args
    args = [a for a in args if a != "--all"]
    python, gpus = args[0], args[1:] or list(N.GPUS)
    have = [N.recorded(v) for v in N.VERSIONS]
    todo = [c for c in N.cases() if every or any(c["id"] not in h for h in have)]
    record_frontier.record(python, gpus, todo, N.DATA)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())

"""Record the release cases of ``test_releases.py`` with one release's oracle.

    python3 tests/fidelity/record_releases.py /work/venvs/vllm-0.29.0/bin/python [CASE ...] > out.jsonl

Runs ``src/dryboot/boot/engine_start.py`` in that venv over ``test_releases.CASES`` and prints one JSON line per
case (the oracle's answer, with the vLLM version). The figures in ``test_releases.RECORDED`` are
copied from such runs; nothing there comes from dryboot.
"""

from __future__ import annotations

import json
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

import e2e_harness as H
import test_releases as T


def main() -> int:
    python = sys.argv[1]
    runner = H.OracleRunner(python, jobs=1)
    cases = [T.case(cid) for cid in (sys.argv[2:] or T.CASES)]
    res = runner.run([c.oracle_input() for c in cases])
    version = next((m["vllm_version"] for m in runner.meta if m.get("vllm_version")), "?")
    for c in cases:
        r = res[c.id]
        keep = {
            k: r.get(k)
            for k in (
                "ok",
                "stage",
                "error",
                "block_size",
                "groups",
                "num_blocks",
                "tokens",
                "concurrency",
                "max_model_len",
                "kv_log",
            )
        }
        print(json.dumps({"vllm": version, "id": c.id, "command": c.command(), **keep}))
    return 0


if __name__ == "__main__":
    sys.path.insert(0, str(H.REPO / "src"))
    sys.exit(main())

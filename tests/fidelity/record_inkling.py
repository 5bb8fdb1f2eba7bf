"""Record vLLM 0.33.0's answers, with the KV cache lines it logs, to the cases of ``inkling_cases.py``.

    python3 tests/fidelity/record_inkling.py ~/.cache/dryboot/boot-env/0.33.0/bin/python

Runs ``src/dryboot/boot/engine_start.py`` in that environment and writes
``data/inkling/vllm-<release>.json``. Nothing recorded comes from dryboot.
"""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))

import e2e_harness as H
import inkling_cases as C
import test_architectures as T

KEPT = (*T.KEPT, "kv_log")
RUN_AS = H.REPO / "tests" / "data" / "gpus" / "run_oracle_as.py"


def main() -> int:
    python = sys.argv[1]
    all_cases = C.cases()
    cases = [H.Case(id=c["id"], family="inkling", model=C.materialize(c), argv=c["argv"]) for c in all_cases]
    gpu_of = {c["id"]: c.get("gpu") for c in all_cases}
    res: dict[str, dict[str, Any]] = {}
    version = "?"
    for gpu in dict.fromkeys(gpu_of.values()):
        mine = [c for c in cases if gpu_of[c.id] == gpu]
        runner = H.OracleRunner(python, jobs=1, oracle_argv=[str(RUN_AS), gpu] if gpu else None)
        res.update(runner.run([c.oracle_input() for c in mine]))
        version = next((m["vllm_version"] for m in runner.meta if m.get("vllm_version")), version)
    if H.crashed_cases(res):
        return 1
    rows = []
    for c in cases:
        v = res[c.id]
        kept = H.kept_answer(v, KEPT, 500)
        rows.append({"id": c.id, "argv": c.argv, "vllm": kept})
        print(f"{c.id:48} {'served' if kept.get('ok') else kept.get('error', '?')[:80]}")
    path = C.record_path(version)
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps({"vllm": version, "cases": rows}, indent=1) + "\n")
    print(f"vLLM {version}: {len(rows)} cases recorded into {path}")
    return 0


if __name__ == "__main__":
    sys.path.insert(0, str(H.REPO / "src"))
    sys.exit(main())

"""Record one release's answers to ``test_rnj1.py``'s cases (RNJ-1's tiny config on TRITON_ATTN).

    python3 tests/fidelity/record_rnj1.py ~/.cache/dryboot/boot-env/0.33.0/bin/python

Runs ``src/dryboot/boot/engine_start.py`` in that environment over ``test_rnj1.cases()`` and
writes the answers into ``data/rnj1/vllm-<release>.json``. Nothing recorded comes from dryboot.
"""

from __future__ import annotations

import json
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

import e2e_harness as H
import test_architectures as T
import test_rnj1 as R


def main() -> int:
    python = sys.argv[1]
    version = H.vllm_version(python)
    cases = R.cases()
    res = H.OracleRunner(python, jobs=1).run([c.oracle_input() for c in cases])
    if H.crashed_cases(res):
        return 1
    rows = []
    for c in cases:
        v = res[c.id]
        kept = H.kept_answer(v, T.KEPT, 500)
        rows.append({"id": c.id, "argv": c.argv, "vllm": kept})
    path = R.record_path(version)
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps({"vllm": version, "cases": rows}, indent=1) + "\n")
    print(f"vLLM {version}: {sum(1 for r in rows if r['vllm'].get('ok'))}/{len(rows)} served, recorded into {path}")
    return 0


if __name__ == "__main__":
    sys.path.insert(0, str(H.REPO / "src"))
    sys.exit(main())

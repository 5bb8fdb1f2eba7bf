"""Record vLLM's answers for ``test_numeric_fields.py``'s cases.

    python tests/fidelity/record_numeric_fields.py /root/.cache/dryboot/boot-env/0.28.0/bin/python

Runs vLLM's own engine start (``src/dryboot/boot/engine_start.py`` in that environment) on every
case and writes ``data/numeric_fields/recorded.json``; prints each case dryboot disagrees with.
Nothing recorded comes from dryboot. Exits 1 (recording nothing) when the oracle process died.
"""

from __future__ import annotations

import json
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

import e2e_harness as H
import test_config_reading
import test_numeric_fields as T


def main() -> int:
    python = sys.argv[1]
    all_cases = [T.make_case(*ids) for ids in T.case_ids()]
    runner = H.OracleRunner(python, jobs=1)
    res = runner.run([c.oracle_input() for c in all_cases])
    version = next((m["vllm_version"] for m in runner.meta if m.get("vllm_version")), "?")
    if any("OracleCrash" in str(v.get("error")) for v in res.values()):
        print("the oracle crashed; nothing recorded, run again", file=sys.stderr)
        return 1
    out: dict[str, dict[str, object]] = {}
    for c in all_cases:
        v = res[c.id]
        kept = {k: v.get(k) for k in test_config_reading.KEPT if v.get(k) is not None}
        if "error" in kept:
            kept["error"] = str(kept["error"])[:500]
        out[c.id] = kept
        problem = T.disagreement(c, kept)
        print(f"{c.id:60} {'agrees' if problem is None else 'DIFFERS'}")
        if problem:
            print("  " + problem)
    T.RECORDED.write_text(json.dumps({"vllm": version, "cases": out}, indent=1, sort_keys=True) + "\n")
    return 0


if __name__ == "__main__":
    sys.path.insert(0, str(H.REPO / "src"))
    sys.exit(main())

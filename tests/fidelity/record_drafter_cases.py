"""Record vLLM's answers for the drafter stand-ins of ``test_drafter_cases.py``.

    .venv/bin/python tests/fidelity/record_drafter_cases.py /path/to/vllm-0.28.0/bin/python

Runs vLLM's own engine start (``src/dryboot/boot/engine_start.py``) on every stand-in under its
flag sets and writes the answers into ``data/drafters/vllm-<version>.json``; prints how many
dryboot agrees with. Nothing recorded comes from dryboot.
"""

from __future__ import annotations

import json
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

import e2e_harness as H
import record_corpus as R
import test_drafter_cases as D


def main() -> int:
    python = sys.argv[1]
    sets = {n: D.flag_sets(n) for n in D.STANDINS}
    cases = {n: [D.make_case(n, i, a) for i, a in enumerate(s)] for n, s in sets.items()}
    res, version = R.run_oracle(python, [c for cs in cases.values() for c in cs])
    if any(v.get("stage") == "crash" for v in res.values()):
        print("the oracle crashed; nothing recorded", file=sys.stderr)
        return 1
    out = {
        n: [D.T.mark({"argv": a, "vllm": R.kept(res[c.id])}) for c, a in zip(cases[n], sets[n], strict=True)]
        for n in sets
    }
    (D.DATA / f"vllm-{version}.json").write_text(json.dumps({"vllm": version, "cases": out}, indent=1) + "\n")
    for n, rows in out.items():
        pairs = [(c, r) for c, r in zip(cases[n], rows, strict=True) if not r.get("env_gap")]
        agree = sum(D.T.verdict(c, r["vllm"], version)[1]["agree"] for c, r in pairs)
        served = sum(1 for r in rows if r["vllm"].get("ok"))
        print(f"{n:50} {agree}/{len(pairs)} agree ({served} served by vLLM, {len(rows) - len(pairs)} env gaps)")
    return 0


if __name__ == "__main__":
    sys.path.insert(0, str(H.REPO / "src"))
    sys.exit(main())

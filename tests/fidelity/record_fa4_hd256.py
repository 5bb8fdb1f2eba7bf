"""Record a release's engine start on the head-256 cases of ``fa4_hd256_cases.py``.

    python3 tests/fidelity/record_fa4_hd256.py ~/.cache/dryboot/boot-env/<release>/bin/python [CASE ...]

Runs ``src/dryboot/boot/engine_start.py`` as each case's GPU and FlashInfer arm (through
``tests/data/gpus/run_oracle_as.py``) and writes ``data/fa4-hd256/vllm-<release>.json`` (the cases
named replace theirs; the others recorded are kept). Nothing recorded comes from dryboot.
"""

from __future__ import annotations

import json
import sys
import tempfile
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

import e2e_harness as H
import fa4_hd256_cases as C

RUN_AS = H.REPO / "tests" / "data" / "gpus" / "run_oracle_as.py"


def main() -> int:
    python = sys.argv[1]
    only = sys.argv[2:] or list(C.CASES)
    version = H.vllm_version(python)
    work = Path(tempfile.mkdtemp(prefix="fa4-hd256-"))
    models = {name: H.materialize_file(work, path) for name, path in C.MODELS.items()}
    path = C.record_path(version)
    doc = json.loads(path.read_text()) if path.exists() else {"vllm": version, "cases": {}}
    for gpu, arm in sorted({(g, a) for cid, (_, _, g, a) in C.CASES.items() if cid in only}):
        inputs = [
            {"id": cid, "model": models[m], "argv": C.drafter_argv(argv, models)}
            for cid, (m, argv, g, a) in C.CASES.items()
            if cid in only and (g, a) == (gpu, arm)
        ]
        runner = H.OracleRunner(python, jobs=1, oracle_argv=[str(RUN_AS), gpu, arm])
        for cid, r in runner.run(inputs).items():
            kept = {k: r.get(k) for k in H.LOGGED_KEPT}
            if kept.get("error"):
                kept["error"] = str(kept["error"]).replace(str(work), "<work>")[:600]
            doc["cases"][cid] = kept
            said = "served" if r.get("ok") else str(r.get("error"))[:160]
            print(f"{cid:24} {r.get('block_size')} {r.get('final_block_size')} {said}")
    doc["cases"] = {cid: doc["cases"][cid] for cid in C.CASES if cid in doc["cases"]}
    path.write_text(json.dumps(doc, indent=1) + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())

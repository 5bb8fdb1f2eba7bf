"""Record a release's engine start on the stage-layout cases of ``pp_layout_cases.py``.

    python3 tests/fidelity/record_pp_layouts.py ~/.cache/dryboot/boot-env/<release>/bin/python

Runs ``src/dryboot/boot/engine_start.py`` (as each case's GPU through
``tests/data/gpus/run_oracle_as.py``, else its default H200) and writes
``data/pipeline/layouts/vllm-<release>.json``. Nothing recorded comes from dryboot.
"""

from __future__ import annotations

import json
import sys
import tempfile
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

import e2e_harness as H
import pp_layout_cases as C
from record_frontier import KEPT

RUN_AS = H.REPO / "tests" / "data" / "gpus" / "run_oracle_as.py"


def main() -> int:
    python = sys.argv[1]
    version = H.vllm_version(python)
    out: dict[str, dict[str, object]] = {}
    model = H._write_config(
        Path(tempfile.mkdtemp(prefix="pp-layouts-")), "qwen3_5-tiny", json.loads(C.CONFIG.read_text())
    )
    for gpu in sorted({g or "" for _, g, _ in C.CASES.values()}):
        inputs = []
        for cid, (argv, g, env) in C.CASES.items():
            if (g or "") == gpu:
                inputs.append({"id": cid, "model": model, "argv": argv, **({"env": env} if env else {})})
        runner = H.OracleRunner(python, jobs=1, oracle_argv=[str(RUN_AS), gpu] if gpu else None)
        res = runner.run(inputs)
        for cid, r in res.items():
            out[cid] = {k: r.get(k) for k in KEPT}
            print(f"{cid:24} {'served' if r.get('ok') else str(r.get('error'))[:100]}")
    cases = {cid: out[cid] for cid in C.CASES}
    doc = {"vllm": version, "config": C.CONFIG.name, "cases": cases}
    C.record_path(version).write_text(json.dumps(doc, indent=1) + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())

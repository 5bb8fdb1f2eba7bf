"""Record a release's engine start on Flint's cases (``flint_cases.py``).

    python3 tests/fidelity/record_flint.py ~/.cache/dryboot/boot-env/<release>/bin/python [CASE...]

Writes each config into a model directory, runs ``src/dryboot/boot/engine_start.py`` as each case's
GPU (``tests/data/gpus/run_oracle_as.py``) and writes ``data/flint/vllm-<release>.json`` (other
cases' answers kept when only some are named; ``RECORD_OUT`` writes elsewhere). Nothing recorded
comes from dryboot.
"""

from __future__ import annotations

import json
import os
import sys
import tempfile
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))

import e2e_harness as H
import flint_cases as C

RUN_AS = H.REPO / "tests" / "data" / "gpus" / "run_oracle_as.py"


def model_dir(work: Path, cid: str, name: str) -> str:
    """``name``'s model directory under ``work`` (for case ``cid``): its config.json."""
    return str(H._write_config(work, cid, C.config(name)))


def main() -> int:
    python, only = sys.argv[1], set(sys.argv[2:])
    version = H.vllm_version(python)
    if version not in C.RELEASES:
        print(f"these cases are recorded on vLLM {', '.join(C.RELEASES)} only", file=sys.stderr)
        return 1
    every = C.CASES
    cases = {k: v for k, v in every.items() if not only or k in only}
    res: dict[str, dict[str, object]] = {}
    with tempfile.TemporaryDirectory() as tmp:
        work = Path(tmp)
        for as_gpu in sorted({g or "" for _, _, g in cases.values()}):
            inputs = [
                {"id": cid, "model": model_dir(work, cid, name), "argv": argv}
                for cid, (name, argv, g) in cases.items()
                if (g or "") == as_gpu
            ]
            oracle = [str(RUN_AS), as_gpu] if as_gpu else None
            res.update(H.OracleRunner(python, jobs=1, oracle_argv=oracle).run(inputs))
    if H.crashed_cases(res):
        return 1
    record = C.record_path(version)
    path = Path(os.environ.get("RECORD_OUT") or record)
    doc: dict[str, Any] = json.loads(record.read_text()) if record.exists() else {"vllm": version, "cases": {}}
    for cid, (name, argv, gpu) in cases.items():
        kept = H.kept_answer(res[cid], H.LOGGED_KEPT, 400)
        entry: dict[str, object] = {"config": name, "argv": argv}
        if gpu:
            entry["gpu"] = gpu
        entry["vllm"] = kept
        doc["cases"][cid] = entry
        print(f"{cid:20} {'served' if kept.get('ok') else str(kept.get('error', ''))[:110]}")
    doc["cases"] = {k: doc["cases"][k] for k in every if k in doc["cases"]}
    path.write_text(json.dumps(doc, indent=1) + "\n")
    print(f"vLLM {version}: {len(cases)} cases recorded into {path}")
    return 0


if __name__ == "__main__":
    sys.path.insert(0, str(H.REPO / "src"))
    sys.exit(main())

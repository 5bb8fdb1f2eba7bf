"""Record a release's engine start on the tiny HY V4 configs of ``hy_v4_cases.py``.

    python3 tests/fidelity/record_hy_v4.py ~/.cache/dryboot/boot-env/0.33.0/bin/python [CASE...]

Runs ``src/dryboot/boot/engine_start.py`` (as its default H200, or as a case's GPU through
``tests/data/gpus/run_oracle_as.py``) and writes ``data/hy-v4/vllm-<release>.json`` (other cases'
answers kept when only some are named). Nothing recorded comes from dryboot.
"""

from __future__ import annotations

import json
import sys
import tempfile
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

import e2e_harness as H
import hy_v4_cases as C

RUN_AS = H.REPO / "tests" / "data" / "gpus" / "run_oracle_as.py"


def main() -> int:
    python, only = sys.argv[1], set(sys.argv[2:])
    version = H.vllm_version(python)
    path = C.record_path(version)
    cases = {k: v for k, v in C.CASES.items() if not only or k in only}
    res: dict[str, dict[str, object]] = {}
    with tempfile.TemporaryDirectory() as tmp:
        work = Path(tmp)
        for gpu in sorted({g or "" for _, _, g in cases.values()}):
            inputs = [
                {"id": cid, "model": H._write_config(work, cid, C.config(name)), "argv": argv}
                for cid, (name, argv, g) in cases.items()
                if (g or "") == gpu
            ]
            argv = [str(RUN_AS), gpu] if gpu else None
            res.update(H.OracleRunner(python, jobs=1, oracle_argv=argv).run(inputs))
    if H.crashed_cases(res):
        return 1
    doc = json.loads(path.read_text()) if path.exists() else {"vllm": version, "cases": {}}
    for cid, (name, argv, gpu) in cases.items():
        kept = H.kept_answer(res[cid], H.LOGGED_KEPT, 400)
        doc["cases"][cid] = {"config": name, "argv": argv, "gpu": gpu, "vllm": kept}
        print(f"{cid:24} {'served' if kept.get('ok') else str(kept.get('error', ''))[:100]}")
    doc["cases"] = {k: doc["cases"][k] for k in C.CASES if k in doc["cases"]}
    path.write_text(json.dumps(doc, indent=1) + "\n")
    print(f"vLLM {version}: {len(cases)} cases recorded into {path}")
    return 0


if __name__ == "__main__":
    sys.path.insert(0, str(H.REPO / "src"))
    sys.exit(main())

"""Record each release's engine start on the SM 12.x MLA cases of ``sm12_mla_cases.py``.

    python3 tests/fidelity/record_sm12_mla.py ~/.cache/dryboot/boot-env/0.33.0/bin/python [CASE...]

Writes each config (and the files it needs) into a model directory, runs the oracle as each case's
GPU (``tests/data/gpus/run_oracle_as.py GPU``: FlashInfer arm ``cubin``) and writes
``data/sm12-mla/vllm-X.json`` (other cases' answers kept when only some are named; ``RECORD_OUT``
writes elsewhere). Nothing recorded comes from dryboot.
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
import sm12_mla_cases as C

RUN_AS = H.REPO / "tests" / "data" / "gpus" / "run_oracle_as.py"


def model_dir(work: Path, name: str) -> str:
    d = Path(H._write_config(work, name, C.config(name)))
    for fname, content in C.EXTRA_FILES.get(name, {}).items():
        (d / fname).write_text(json.dumps(content))
    return str(d)


def main() -> int:
    python, only = sys.argv[1], set(sys.argv[2:])
    version = H.vllm_version(python)
    cases = {k: v for k, v in C.cases(version).items() if not only or k in only}
    res: dict[str, dict[str, Any]] = {}
    with tempfile.TemporaryDirectory() as tmp:
        work = Path(tmp)
        for gpu in sorted({g for _, _, g in cases.values()}):
            inputs = [
                {"id": cid, "model": model_dir(work, name), "argv": argv}
                for cid, (name, argv, g) in cases.items()
                if g == gpu
            ]
            res.update(H.OracleRunner(python, jobs=1, oracle_argv=[str(RUN_AS), gpu]).run(inputs))
    if H.crashed_cases(res):
        print("oracle crashed on " + ", ".join(H.crashed_cases(res)), file=sys.stderr)
        return 1
    path = Path(os.environ.get("RECORD_OUT") or C.record_path(version))
    old = C.record_path(version)
    doc: dict[str, Any] = json.loads(old.read_text()) if old.exists() else {"vllm": version, "cases": {}}
    for cid, (name, argv, gpu) in cases.items():
        kept = H.kept_answer(res[cid], H.LOGGED_KEPT, 400)
        doc["cases"][cid] = {"config": name, "argv": argv, "gpu": gpu, "vllm": kept}
        print(f"{cid:40} {'served' if kept.get('ok') else str(kept.get('error', ''))[:110]}")
    order = list(C.cases(version))
    doc["cases"] = {k: doc["cases"][k] for k in order if k in doc["cases"]}
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps(doc, indent=1) + "\n")
    print(f"vLLM {version}: {len(cases)} cases recorded into {path}")
    return 0


if __name__ == "__main__":
    sys.path.insert(0, str(H.REPO / "src"))
    sys.exit(main())

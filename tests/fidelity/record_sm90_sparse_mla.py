"""Record each release's engine start on the SM 9.0 sparse MLA cases of ``sm90_sparse_mla_cases.py``.

    python3 tests/fidelity/record_sm90_sparse_mla.py ~/.cache/dryboot/boot-env/0.31.0/bin/python [CASE...]

Writes each tiny config into a model directory (a published one is used as it is: its config.json and
hf_quant_config.json), runs the oracle as an H200 (``tests/data/gpus/run_oracle_as.py H200``) and writes
``data/sm90-sparse-mla/vllm-X.json`` (other cases' answers kept when only some are named; ``RECORD_OUT``
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
import sm90_sparse_mla_cases as C

RUN_AS = H.REPO / "tests" / "data" / "gpus" / "run_oracle_as.py"


def model_dir(work: Path, name: str) -> str:
    """The model directory of config ``name``: the published directory, or the tiny config written."""
    if C.CONFIGS[name] is None:
        return str((C.PUBLISHED / name).resolve())
    return H._write_config(work, name, C.config(name))


def main() -> int:
    python, only = sys.argv[1], set(sys.argv[2:])
    version = H.vllm_version(python)
    cases = {k: v for k, v in C.cases(version).items() if not only or k in only}
    with tempfile.TemporaryDirectory() as tmp:
        work = Path(tmp)
        inputs = [{"id": cid, "model": model_dir(work, name), "argv": argv} for cid, (name, argv) in cases.items()]
        res = H.OracleRunner(python, jobs=1, case_timeout=900, oracle_argv=[str(RUN_AS), C.GPU]).run(inputs)
    if H.crashed_cases(res):
        print("oracle crashed on " + ", ".join(H.crashed_cases(res)), file=sys.stderr)
        return 1
    path = Path(os.environ.get("RECORD_OUT") or C.record_path(version))
    old = C.record_path(version)
    doc: dict[str, Any] = json.loads(old.read_text()) if old.exists() else {"vllm": version, "cases": {}}
    for cid, (name, argv) in cases.items():
        kept = H.kept_answer(res[cid], H.LOGGED_KEPT, 400)
        doc["cases"][cid] = {"config": name, "argv": argv, "gpu": C.GPU, "vllm": kept}
        print(f"{cid:48} {'served' if kept.get('ok') else str(kept.get('error', ''))[:110]}")
    order = list(C.cases(version))
    doc["cases"] = {k: doc["cases"][k] for k in order if k in doc["cases"]}
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps(doc, indent=1) + "\n")
    print(f"vLLM {version}: {len(cases)} cases recorded into {path}")
    return 0


if __name__ == "__main__":
    sys.path.insert(0, str(H.REPO / "src"))
    sys.exit(main())

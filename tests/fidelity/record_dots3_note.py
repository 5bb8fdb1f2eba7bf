"""Record vLLM 0.33.0's engine start on the tiny Dots3-Note configs of ``dots3_note_cases.py``.

    python3 tests/fidelity/record_dots3_note.py ~/.cache/dryboot/boot-env/0.33.0/bin/python [CASE...]

Writes each config with its ``added_tokens.json`` into a model directory, runs
``src/dryboot/boot/engine_start.py`` (as its default H200, or as a case's GPU through
``tests/data/gpus/run_oracle_as.py``) over the cases and writes ``data/dots3-note/vllm-0.33.0.json``
(other cases' answers kept when only some are named; ``RECORD_OUT`` writes elsewhere). Nothing
recorded comes from dryboot.
"""

from __future__ import annotations

import json
import os
import sys
import tempfile
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))

import dots3_note_cases as C
import e2e_harness as H

RUN_AS = H.REPO / "tests" / "data" / "gpus" / "run_oracle_as.py"


def model_dir(work: Path, cid: str, name: str) -> str:
    """``name``'s model directory under ``work`` (for case ``cid``): its config.json and added_tokens.json."""
    d = Path(H._write_config(work, cid, C.config(name)))
    (d / "added_tokens.json").write_text(json.dumps(C.ADDED_TOKENS))
    return str(d)


def main() -> int:
    python, only = sys.argv[1], set(sys.argv[2:])
    if H.vllm_version(python) != C.VERSION:
        print(f"these cases are recorded on vLLM {C.VERSION} only", file=sys.stderr)
        return 1
    cases = {k: v for k, v in C.CASES.items() if not only or k in only}
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
    path = Path(os.environ.get("RECORD_OUT") or C.RECORD)
    doc: dict[str, Any] = json.loads(C.RECORD.read_text()) if C.RECORD.exists() else {"vllm": C.VERSION, "cases": {}}
    for cid, (name, argv, gpu) in cases.items():
        kept = H.kept_answer(res[cid], H.LOGGED_KEPT, 400)
        entry: dict[str, object] = {"config": name, "argv": argv}
        if gpu:
            entry["gpu"] = gpu
        entry["vllm"] = kept
        doc["cases"][cid] = entry
        print(f"{cid:18} {'served' if kept.get('ok') else str(kept.get('error', ''))[:110]}")
    doc["cases"] = {k: doc["cases"][k] for k in C.CASES if k in doc["cases"]}
    path.write_text(json.dumps(doc, indent=1) + "\n")
    print(f"vLLM {C.VERSION}: {len(cases)} cases recorded into {path}")
    return 0


if __name__ == "__main__":
    sys.path.insert(0, str(H.REPO / "src"))
    sys.exit(main())

"""Record vLLM 0.33.0's engine start on the tiny Dots3-Note configs of ``dots3_note_cases.py``.

    python3 tests/fidelity/record_dots3_note.py ~/.cache/dryboot/boot-env/0.33.0/bin/python

Writes each config with its ``added_tokens.json`` into a model directory, runs
``src/dryboot/boot/engine_start.py`` (its default H200) over the cases and writes
``data/dots3-note/vllm-0.33.0.json``. Nothing recorded comes from dryboot.
"""

from __future__ import annotations

import json
import sys
import tempfile
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

import dots3_note_cases as C
import e2e_harness as H


def model_dir(work: Path, name: str) -> str:
    """``name``'s model directory under ``work``: its config.json and added_tokens.json."""
    d = Path(H._write_config(work, name, C.config(name)))
    (d / "added_tokens.json").write_text(json.dumps(C.ADDED_TOKENS))
    return str(d)


def main() -> int:
    python = sys.argv[1]
    if H.vllm_version(python) != C.VERSION:
        print(f"these cases are recorded on vLLM {C.VERSION} only", file=sys.stderr)
        return 1
    with tempfile.TemporaryDirectory() as tmp:
        work = Path(tmp)
        inputs = [{"id": cid, "model": model_dir(work, name), "argv": argv} for cid, (name, argv) in C.CASES.items()]
        res = H.OracleRunner(python, jobs=1).run(inputs)
    if H.crashed_cases(res):
        return 1
    out = {}
    for cid, (name, argv) in C.CASES.items():
        kept = H.kept_answer(res[cid], H.LOGGED_KEPT, 400)
        out[cid] = {"config": name, "argv": argv, "vllm": kept}
        print(f"{cid:16} {'served' if kept.get('ok') else str(kept.get('error', ''))[:100]}")
    C.RECORD.write_text(json.dumps({"vllm": C.VERSION, "cases": out}, indent=1) + "\n")
    print(f"vLLM {C.VERSION}: {len(out)} cases recorded into {C.RECORD}")
    return 0


if __name__ == "__main__":
    sys.path.insert(0, str(H.REPO / "src"))
    sys.exit(main())

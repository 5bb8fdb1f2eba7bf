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
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

import dots3_note_cases as C
import e2e_harness as H
import release_records as R


def model_dir(work: Path, cid: str, name: str) -> str:
    """``name``'s model directory under ``work`` (for case ``cid``): its config.json and added_tokens.json."""
    d = Path(H._write_config(work, cid, C.config(name)))
    (d / "added_tokens.json").write_text(json.dumps(C.ADDED_TOKENS))
    return str(d)


if __name__ == "__main__":
    sys.path.insert(0, str(H.REPO / "src"))
    sys.exit(
        R.record_gpu_cases(C, sys.argv[1:], releases=(C.VERSION,), record_path=lambda _: C.RECORD, model_dir=model_dir)
    )

"""Record each release's engine start on the SM 12.x MLA cases of ``sm12_mla_cases.py``.

    python3 tests/fidelity/record_sm12_mla.py ~/.cache/dryboot/boot-env/0.33.0/bin/python [CASE...]

Writes each config (and the files it needs) into a model directory, runs the oracle as each case's
GPU (``tests/data/gpus/run_oracle_as.py GPU``: FlashInfer arm ``cubin``) and writes
``data/sm12-mla/vllm-X.json`` (other cases' answers kept when only some are named; ``RECORD_OUT``
writes elsewhere). Nothing recorded comes from dryboot.
"""

from __future__ import annotations

import json
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

import e2e_harness as H
import release_records as R
import sm12_mla_cases as C


def model_dir(work: Path, name: str) -> str:
    """Config ``name``'s model directory under ``work``: its config.json and the files it needs."""
    d = Path(H._write_config(work, name, C.config(name)))
    for fname, content in C.EXTRA_FILES.get(name, {}).items():
        (d / fname).write_text(json.dumps(content))
    return str(d)


if __name__ == "__main__":
    sys.path.insert(0, str(H.REPO / "src"))
    sys.exit(R.record_gpu_cases(C, sys.argv[1:], cases=C.cases, model_dir=lambda work, _, name: model_dir(work, name)))

"""Record a release's engine start on Flint's cases (``flint_cases.py``).

    python3 tests/fidelity/record_flint.py ~/.cache/dryboot/boot-env/<release>/bin/python [CASE...]

Writes each config into a model directory, runs ``src/dryboot/boot/engine_start.py`` as each case's
GPU (``tests/data/gpus/run_oracle_as.py``) and writes ``data/flint/vllm-<release>.json`` (other
cases' answers kept when only some are named; ``RECORD_OUT`` writes elsewhere). Nothing recorded
comes from dryboot.
"""

from __future__ import annotations

import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

import e2e_harness as H
import flint_cases as C
import release_records as R

if __name__ == "__main__":
    sys.path.insert(0, str(H.REPO / "src"))
    sys.exit(R.record_gpu_cases(C, sys.argv[1:]))

"""Record a release's engine start on DeepSeek-V4's GPU cases (``deepseek_v4_gpu_cases.py``).

    python3 tests/fidelity/record_deepseek_v4_gpus.py ~/.cache/dryboot/boot-env/<release>/bin/python [CASE...]

Writes each config into a model directory, runs ``src/dryboot/boot/engine_start.py`` as each case's
GPU (``tests/data/gpus/run_oracle_as.py``) and writes ``data/deepseek_v4/gpus-<release>.json`` (other
cases' answers kept when only some are named; ``RECORD_OUT`` writes elsewhere). Nothing recorded
comes from dryboot.
"""

from __future__ import annotations

import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

import deepseek_v4_gpu_cases as C
import e2e_harness as H
import release_records as R

if __name__ == "__main__":
    sys.path.insert(0, str(H.REPO / "src"))
    sys.exit(R.record_gpu_cases(C, sys.argv[1:]))

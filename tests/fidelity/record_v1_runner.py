"""Record vLLM's engine start for the V1-model-runner cases
(``tests/fidelity/data/v1-runner/``): each release's boot environment
(``~/.cache/dryboot/boot-env/<release>``) runs the oracle; the answers go to ``recorded.json``.

    python3 tests/fidelity/record_v1_runner.py
"""

from __future__ import annotations

import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).parent))
import release_records
import v1_runner_cases as C

if __name__ == "__main__":
    sys.exit(release_records.record(C))

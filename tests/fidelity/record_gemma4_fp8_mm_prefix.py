"""Record vLLM's engine start for the Gemma-4 fp8 / multimodal-prefix cases on SM 9.0
(``tests/fidelity/data/gemma4-fp8-mm-prefix/``): each release's boot environment
(``~/.cache/dryboot/boot-env/<release>``) runs the oracle; the answers go to ``recorded.json``.

    python3 tests/fidelity/record_gemma4_fp8_mm_prefix.py
"""

from __future__ import annotations

import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).parent))
import gemma4_fp8_mm_prefix_cases as C
import release_records

if __name__ == "__main__":
    sys.exit(release_records.record(C))

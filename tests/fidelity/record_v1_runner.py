"""Record vLLM's engine start for the V1-model-runner cases
(``tests/fidelity/data/v1-runner/``): each release's boot environment
(``~/.cache/dryboot/boot-env/<release>``) runs the oracle; the answers go to ``recorded.json``.

    python3 tests/fidelity/record_v1_runner.py
"""

from __future__ import annotations

import json
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).parent))
import e2e_harness as H
import v1_runner_cases as C


def main() -> int:
    out: dict[str, dict[str, object]] = {}
    for release in C.RELEASES:
        python = Path.home() / ".cache/dryboot/boot-env" / release / "bin/python"
        cases = C.cases(H.default_workdir())
        res = H.OracleRunner(str(python)).run([c.oracle_input() for c in cases])
        for c in cases:
            out[f"{release}/{c.id}"] = H.kept_answer(res[c.id], C.KEPT, 600)
    C.RECORDS.write_text(json.dumps(out, indent=1, sort_keys=True) + "\n")
    print(f"{len(out)} answers -> {C.RECORDS}")
    return 0


if __name__ == "__main__":
    sys.exit(main())

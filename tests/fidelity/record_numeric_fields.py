"""Record vLLM's answers for ``test_numeric_fields.py``'s cases, as ``record_config_reading.py``
does for its own:

    python tests/fidelity/record_numeric_fields.py /root/.cache/dryboot/boot-env/0.28.0/bin/python

writes ``data/numeric_fields/recorded.json`` (nothing in it comes from dryboot).
"""

from __future__ import annotations

import json
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

import e2e_harness as H
import test_numeric_fields as T
from record_config_reading import record

if __name__ == "__main__":
    sys.path.insert(0, str(H.REPO / "src"))
    got = record(sys.argv[1], [T.make_case(*ids) for ids in T.case_ids()], T.disagreement)
    if got is None:
        sys.exit(1)
    version, out = got
    T.RECORDED.write_text(json.dumps({"vllm": version, "cases": out}, indent=1, sort_keys=True) + "\n")

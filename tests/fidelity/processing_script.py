"""Run a check script in a boot environment's interpreter: the processing-info checks
(``test_encoder_items*.py``) hand it their cases as JSON on stdin and read its answer, the JSON
object its last stdout line prints."""

from __future__ import annotations

import json
import subprocess
from typing import Any


def run_script(python: str, script: str, payload: Any) -> Any:
    """``script`` run by ``python -c`` with ``payload`` as JSON on stdin: its last line, parsed.

    :raises AssertionError: the script failed (its stderr's tail in the message)."""
    run = subprocess.run(
        [python, "-c", script],
        input=json.dumps(payload),
        capture_output=True,
        text=True,
        timeout=600,
        check=False,
    )
    assert run.returncode == 0, run.stderr[-4000:]
    return json.loads(run.stdout.strip().splitlines()[-1])

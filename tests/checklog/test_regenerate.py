"""The checked-in logs are what vLLM writes today: rerun vllm_log_writer.py in the vLLM venv.

Runs only with ``DRYBOOT_VLLM_PYTHON`` (a vLLM 0.28.0 venv, see tests/data/checklog/README.md).
Timestamps, pids, temporary paths and traceback line numbers vary between runs; the TP=2 workers
race, so lines are compared as multisets.
"""

from __future__ import annotations

import json
import os
import re
import subprocess
from collections import Counter
from pathlib import Path

import pytest

from .conftest import DATA

WRITER = Path(__file__).resolve().parent / "vllm_log_writer.py"
_VARIES = [
    (re.compile(r"\d\d-\d\d \d\d:\d\d:\d\d"), "MM-DD hh:mm:ss"),
    (re.compile(r"pid=\d+"), "pid=N"),
    (re.compile(r"/tmp/vllm-log-writer-[\w]+"), "/tmp/W"),
    (re.compile(r'File "[^"]+", line \d+'), 'File "F", line N'),
]


def normalized(text: str) -> Counter[str]:
    out: Counter[str] = Counter()
    for line in text.splitlines():
        for pattern, repl in _VARIES:
            line = pattern.sub(repl, line)
        if "^^^" not in line:  # traceback carets follow the (varying) source lines
            out[line] += 1
    return out


@pytest.mark.fidelity
@pytest.mark.slow
def test_logs_are_reproduced(tmp_path: Path) -> None:
    python = os.environ.get("DRYBOOT_VLLM_PYTHON")
    if not python:
        pytest.skip("DRYBOOT_VLLM_PYTHON is not set (a vLLM 0.28.0 venv: tests/data/checklog/README.md)")
    serve = subprocess.run([python, "-c", "import fastapi"], capture_output=True, check=False)
    if serve.returncode != 0:
        # dryboot's boot environment (CI's DRYBOOT_VLLM_PYTHON) carries the engine, not the API
        # server whose CLI parser (make_arg_parser) the writer runs as `vllm serve` does
        pytest.skip(f"{python} has no fastapi: vLLM's API server cannot import (tests/data/checklog/README.md adds it)")
    subprocess.run([python, str(WRITER), str(tmp_path)], check=True, timeout=1800)
    for name in ("tp2", "oom", "mtp", "colour", "edited"):
        assert normalized((tmp_path / f"{name}.log").read_text()) == normalized((DATA / f"{name}.log").read_text())
    fresh = json.loads((tmp_path / "figures.json").read_text())
    kept = json.loads((DATA / "figures.json").read_text())
    assert fresh == kept
    assert (tmp_path / "vllm-serve-args.txt").read_text() == (DATA / "vllm-serve-args.txt").read_text()

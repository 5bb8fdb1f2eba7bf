"""Fixtures for fidelity tests: run tests/fidelity/vllm_oracle.py in the vLLM venv.

Build the venv with ``bash scripts/fidelity-env.sh`` and point ``DRYBOOT_VLLM_PYTHON`` at the
python it prints. Without that variable every test using ``vllm_oracle`` is skipped.

    def test_x(vllm_oracle):
        [result] = vllm_oracle([{"id": "a", "config": {...}, "layers": {...}, ...}])
"""

from __future__ import annotations

import json
import os
import subprocess
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

ORACLE = Path(__file__).resolve().parent / "vllm_oracle.py"
ENV_VAR = "DRYBOOT_VLLM_PYTHON"

OracleRunner = Callable[[list[dict[str, Any]]], list[dict[str, Any]]]


def run_oracle(python: str, cases: list[dict[str, Any]], timeout: float = 600) -> dict[str, Any]:
    """Run the oracle once on ``cases``; return its whole output document."""
    proc = subprocess.run(
        [python, str(ORACLE)],
        input=json.dumps({"cases": cases}),
        capture_output=True,
        text=True,
        timeout=timeout,
        check=False,
    )
    if proc.returncode != 0:
        raise RuntimeError(f"oracle exited {proc.returncode}:\n{proc.stderr[-4000:]}")
    doc: dict[str, Any] = json.loads(proc.stdout)
    return doc


@pytest.fixture(scope="session")
def vllm_python() -> str:
    python = os.environ.get(ENV_VAR)
    if not python:
        pytest.skip(f"{ENV_VAR} is not set (build the venv: bash scripts/fidelity-env.sh)")
    if not Path(python).exists():
        pytest.fail(f"{ENV_VAR}={python} does not exist")
    return python


@pytest.fixture(scope="session")
def vllm_033_python() -> str:
    """vLLM 0.33.0's boot environment (``DRYBOOT_VLLM_PYTHON_033``, else the cached
    ``~/.cache/dryboot/boot-env/0.33.0``): the processing-info checks import transformers' image
    processors, whose torchvision 0.27.1-0.30's environments cannot load (``torchvision::nms``).
    Skipped where it is absent."""
    python = os.environ.get("DRYBOOT_VLLM_PYTHON_033") or str(
        Path.home() / ".cache" / "dryboot" / "boot-env" / "0.33.0" / "bin" / "python"
    )
    if not Path(python).exists():
        pytest.skip(f"vLLM 0.33.0's boot environment is absent ({python})")
    return python


@pytest.fixture(scope="session")
def vllm_oracle(vllm_python: str) -> OracleRunner:
    """A callable: list of oracle cases -> list of results (one oracle process per call)."""

    def run(cases: list[dict[str, Any]]) -> list[dict[str, Any]]:
        results: list[dict[str, Any]] = run_oracle(vllm_python, cases)["results"]
        return results

    return run

"""The project's own habits, checked by the test command CI runs: ruff's lint and format."""

from __future__ import annotations

import shutil
import subprocess
import sys
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[1]


def ruff(*args: str) -> subprocess.CompletedProcess[str]:
    if shutil.which("ruff") is None and subprocess.run([sys.executable, "-m", "ruff", "--version"]).returncode:
        pytest.skip("ruff is not installed (pip install -e '.[dev]')")
    return subprocess.run([sys.executable, "-m", "ruff", *args], cwd=REPO, capture_output=True, text=True, timeout=120)


def test_ruff_check_is_clean() -> None:
    r = ruff("check", "src", "tests", "bench", "scripts")
    assert r.returncode == 0, r.stdout + r.stderr


def test_ruff_format_is_applied() -> None:
    r = ruff("format", "--check", "src", "tests", "bench", "scripts")
    assert r.returncode == 0, r.stdout + r.stderr

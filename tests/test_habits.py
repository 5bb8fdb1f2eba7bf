"""The project's own habits, checked by the test command CI runs: ruff's lint and format, and
that CI and the pre-commit hooks run the same checks (mypy --strict before the tests)."""

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


def test_ci_and_pre_commit_run_the_same_checks_before_the_tests() -> None:
    ci = [line for line in (REPO / ".ci" / "run").read_text().splitlines() if line.startswith("python3 ")]
    steps = [
        next((k for k in ("ruff check", "ruff format", "mypy", "importlinter", "pytest") if k in line), line)
        for line in ci
    ]
    # the setup before them: a fresh virtualenv, then the install the README gives
    setup = [s for s in steps if "-m venv" in s or "pip install" in s]
    assert len(setup) == 2 and steps[: len(setup)] == setup, steps
    assert steps[len(setup) :] == ["ruff check", "ruff format", "mypy", "importlinter", "pytest"], steps
    hooks = (REPO / ".pre-commit-config.yaml").read_text()
    for entry in ("ruff check", "ruff format --check", "mypy", "lint_imports", "pytest"):
        assert f"entry: python -m {entry}" in hooks or entry in hooks, entry


def test_xfail_marks_are_strict() -> None:
    """An XPASS fails the run: a fixed kind's mark goes with the fix."""
    assert "xfail_strict = true" in (REPO / "pyproject.toml").read_text()
    for path in (REPO / "tests").rglob("*.py"):
        if path.name == "test_habits.py":
            continue
        assert "strict=False" not in path.read_text(encoding="utf-8"), path

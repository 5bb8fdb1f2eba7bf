"""A command whose standard output cannot be written (``> /dev/full``) ends in one line and
exit 2 (``dryboot.errors.OUTPUT_ERROR_EXIT``), not an ``OSError`` traceback (issue 35 item 6);
a reader that goes away (``| head``) ends it quietly with exit 1."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[1]
QWEN35 = "examples/models/Qwen3.5-27B.config.json"
QWEN3_NEXT = "examples/models/Qwen3-Next-80B-A3B-Thinking.config.json"

#: One run of every command that writes a report on stdout; ``series status`` and ``series
#: apply`` take the fast start (no click), the others click's path.
COMMANDS = {
    "plan": ["plan", "--model", QWEN35, "--max-model-len", "32768", "--kv-cache-memory", "20G"],
    "plan --json": ["plan", "--model", QWEN35, "--max-model-len", "32768", "--kv-cache-memory", "20G", "--json"],
    "check-log": ["check-log", "tests/data/checklog/tp2.log", "--model", QWEN3_NEXT],
    "profiles": ["profiles", "examples/reference-deployment.toml", "--compare", "main", "pr"],
    "sweep": ["sweep", "--limit", "50", "--jobs", "1"],
    "series status": ["series", "status", "examples/patch-stack/patches", "--on", "examples/patch-stack/pkg"],
    "series list": ["series", "list", "examples/patch-stack/patches"],
    "hunks check": ["hunks", "check", "examples/patch-stack/patches/0001-block-size-32.patch"],
    "--help": ["plan", "--help"],
    "--version": ["--version"],
}

pytestmark = pytest.mark.skipif(not os.path.exists("/dev/full"), reason="no /dev/full on this platform")


def run(args: list[str], stdout: object) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "PYTHONPATH": str(REPO / "src"), "HF_HUB_CACHE": str(REPO / ".no-hub-cache")}
    return subprocess.run(
        [sys.executable, "-m", "dryboot", *args],
        stdout=stdout,
        stderr=subprocess.PIPE,
        text=True,
        cwd=REPO,
        env=env,
        timeout=120,
        check=False,
    )


@pytest.mark.parametrize("which", list(COMMANDS))
def test_a_full_stdout_is_one_line_and_exit_2(which: str) -> None:
    with open("/dev/full", "w") as full:
        r = run(COMMANDS[which], full)
    assert r.returncode == 2, (r.returncode, r.stderr[-800:])
    assert r.stderr == "dryboot: error: standard output: cannot write: No space left on device\n", r.stderr[-800:]


@pytest.mark.parametrize("which", ["plan", "series status"])
def test_a_reader_that_goes_away_ends_the_command_quietly(which: str) -> None:
    """The output is read a few bytes at a time and the pipe closed early; whatever was written
    before, the command ends without a traceback."""
    env = {**os.environ, "PYTHONPATH": str(REPO / "src"), "HF_HUB_CACHE": str(REPO / ".no-hub-cache")}
    p = subprocess.Popen(
        [sys.executable, "-m", "dryboot", *COMMANDS[which]],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        cwd=REPO,
        env=env,
    )
    assert p.stdout is not None and p.stderr is not None
    p.stdout.read(1)
    p.stdout.close()
    err = p.stderr.read().decode()
    code = p.wait(timeout=120)
    assert "Traceback" not in err, err[-800:]
    assert code in (0, 1), (code, err)

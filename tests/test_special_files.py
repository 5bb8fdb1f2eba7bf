"""A FIFO (or a device) given as any input file is refused in one line, exit 2, naming the
input, instead of blocking on a read that waits for a writer (issue 28)."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from dryboot.errors import InputError
from dryboot.inputs import check_regular, open_regular

REPO = Path(__file__).resolve().parents[1]
CONFIG = REPO / "examples" / "models" / "Qwen3.5-27B.config.json"
LOG = REPO / "tests" / "data" / "checklog" / "public" / "lmcache-1739-qwen3-14b.log"

pytestmark = pytest.mark.skipif(not hasattr(os, "mkfifo"), reason="no FIFOs on this platform")


@pytest.fixture
def fifo(tmp_path: Path) -> Path:
    path = tmp_path / "input.fifo"
    os.mkfifo(path)
    return path


def dryboot(*args: str) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "PYTHONPATH": str(REPO / "src"), "HF_HUB_CACHE": "/nonexistent-hub"}
    return subprocess.run(
        [sys.executable, "-m", "dryboot", *args], capture_output=True, text=True, cwd=REPO, timeout=60, env=env
    )


def commands(fifo: Path) -> dict[str, list[str]]:
    f = str(fifo)
    return {
        "plan --model": ["plan", "--model", f],
        "check-log LOG": ["check-log", f],
        "check-log --model": ["check-log", str(LOG), "--model", f],
        "check-log --speculative-model": ["check-log", str(LOG), "--model", str(CONFIG), "--speculative-model", f],
        "plan --speculative-model": [
            "plan",
            "--model",
            str(CONFIG),
            "--speculative-config",
            '{"method": "eagle", "num_speculative_tokens": 2}',
            "--speculative-model",
            f,
        ],
        "plan --serve --config": ["plan", "--serve", f"vllm serve {CONFIG} --config {f}.yaml"],
        "profiles": ["profiles", f],
    }


@pytest.mark.parametrize("which", list(commands(Path("x"))))
def test_fifo_input_is_refused_in_one_line(which: str, fifo: Path, tmp_path: Path) -> None:
    args = commands(fifo)[which]
    if which == "plan --serve --config":
        yaml_fifo = Path(f"{fifo}.yaml")
        os.mkfifo(yaml_fifo)
    result = dryboot(*args)  # before the fix: killed by the timeout, blocked in open()
    assert result.returncode == 2, (which, result.stdout, result.stderr)
    err = result.stderr.strip().splitlines()
    assert len(err) == 1, err
    assert str(fifo) in err[0] and "FIFO" in err[0], err[0]
    assert "Traceback" not in result.stderr


def test_open_regular_refuses_devices_and_directories(tmp_path: Path) -> None:
    with pytest.raises(InputError, match="character device"):
        open_regular("/dev/null")
    with pytest.raises(InputError, match="a directory"):
        open_regular(tmp_path)
    with pytest.raises(InputError, match="no such file"):
        open_regular(tmp_path / "absent")
    ok = tmp_path / "ok.txt"
    ok.write_bytes(b"x")
    with open_regular(ok) as fh:
        assert fh.read() == b"x"
    check_regular(tmp_path, "dir", allow_dir=True)
    check_regular(tmp_path / "absent", "absent")  # the caller says what is missing

"""check-log's and series port's reports fit the terminal they are printed on, as plan's do
(issue 35 item 8: lines of 163 and 213 characters on an 80-column terminal): run on a
pseudo-terminal of 80 and of 200 columns, no line is longer than the terminal except vLLM's own
log lines, quoted whole; a line that fits is not broken. Piped, their lines stay whole (one
finding per line, for ``grep``): ``dryboot.textout.terminal_width``."""

from __future__ import annotations

import fcntl
import os
import struct
import subprocess
import sys
import termios
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[1]
TP2 = ["check-log", "tests/data/checklog/tp2.log", "--model", "examples/models/Qwen3-Next-80B-A3B-Thinking.config.json"]
#: vLLM's lines in tp2.log that the report quotes (after "matches:")
QUOTED = (
    "Mamba cache mode is set to 'align' for Qwen3NextForCausalLM by default when prefix caching is enabled",
    "Setting attention block size to 544 tokens to ensure that attention page size is >= mamba page size.",
    "Padding mamba page size by 1.49% to ensure that mamba page size and attention page size are exactly equal.",
    "GPU KV cache size: 4,479,546 tokens, Maximum concurrency for 262,144 tokens per request: 17.09x",
)


def on_terminal(args: list[str], columns: int, cwd: Path = REPO) -> tuple[int, list[str]]:
    """``dryboot ARGS`` with stdout on a pseudo-terminal ``columns`` wide (no ``COLUMNS``)."""
    master, slave = os.openpty()
    fcntl.ioctl(slave, termios.TIOCSWINSZ, struct.pack("HHHH", 50, columns, 0, 0))
    env = {k: v for k, v in os.environ.items() if k not in ("COLUMNS", "LINES")}
    env.update(PYTHONPATH=str(REPO / "src"), HF_HUB_CACHE=str(REPO / ".no-hub-cache"))
    p = subprocess.Popen(
        [sys.executable, "-m", "dryboot", *args],
        stdin=subprocess.DEVNULL,
        stdout=slave,
        stderr=subprocess.PIPE,
        cwd=cwd,
        env=env,
    )
    os.close(slave)
    chunks = []
    while True:
        try:
            chunk = os.read(master, 65536)
        except OSError:  # EIO: the child closed the terminal
            break
        if not chunk:
            break
        chunks.append(chunk)
    os.close(master)
    assert p.stderr is not None
    err = p.stderr.read().decode()
    code = p.wait(timeout=120)
    assert "Traceback" not in err, err
    return code, b"".join(chunks).decode().replace("\r\n", "\n").split("\n")


def long_lines(lines: list[str], columns: int) -> list[str]:
    """Lines over ``columns`` but vLLM's quoted ones and a single word (a name or path longer
    than the terminal, which is never cut)."""
    return [line for line in lines if len(line) > columns and line.strip() not in QUOTED and " " in line.strip()]


@pytest.mark.parametrize("columns", [80, 200])
def test_check_log_fits_the_terminal(columns: int) -> None:
    code, lines = on_terminal(TP2, columns)
    assert code == 0, lines
    assert not long_lines(lines, columns)
    assert all(line.rstrip() == line for line in lines)
    for quoted in QUOTED:  # vLLM's line whole, on its own line under its "matches:"
        assert f"    {quoted}" in lines or any(line.endswith(f"matches: {quoted}") for line in lines)
    budget = [line for line in lines if line.startswith("KV budget:")]
    assert len(budget) == 1
    if columns == 200:  # 165 characters: fits, not broken
        assert budget[0].endswith("vLLM keeps the fewest blocks of all workers)")
    else:
        assert not budget[0].endswith("workers)")


def test_check_log_piped_keeps_its_lines_whole() -> None:
    env = {**os.environ, "PYTHONPATH": str(REPO / "src"), "COLUMNS": "80"}
    r = subprocess.run(
        [sys.executable, "-m", "dryboot", *TP2], capture_output=True, text=True, cwd=REPO, env=env, check=False
    )
    assert any(len(line) > 150 and line.startswith("KV budget:") for line in r.stdout.splitlines())


def port_case(tmp: Path) -> list[str]:
    """A series of one patch whose hunk conflicts with NEW, on a deep path: the report names the
    file, the reject and the conflicts directory (each line over 80 columns)."""
    deep = "vllm/model_executor/layers/quantization/utils/a_module_with_a_rather_long_name.py"
    old = "".join(f"line {i}\n" for i in range(1, 61))
    for root, text in (("old", old), ("new", old.replace("line 30\n", "line 30 upstream\n"))):
        (tmp / root / deep).parent.mkdir(parents=True)
        (tmp / root / deep).write_text(text)
    series = tmp / "a-series-directory-whose-name-is-long"
    series.mkdir()
    body = "".join(f" line {i}\n" for i in range(27, 30)) + "-line 30\n+line 30 patched\n"
    body += "".join(f" line {i}\n" for i in range(31, 34))
    name = "0001-a-patch-with-the-long-name-git-format-patch-gives-its-subject-line.patch"
    (series / name).write_text(f"--- a/{deep}\n+++ b/{deep}\n@@ -27,7 +27,7 @@\n{body}")
    (series / "series").write_text(name + "\n")
    out = tmp / "ported-series-output-directory-with-a-long-name"
    return ["series", "port", str(series), "--from", str(tmp / "old"), "--to", str(tmp / "new"), "--out", str(out)]


@pytest.mark.parametrize("columns", [80, 200])
def test_series_port_fits_the_terminal(columns: int, tmp_path: Path) -> None:
    args = port_case(tmp_path)
    code, lines = on_terminal(args, columns)
    assert code == 1, lines  # the hunk conflicts
    assert not long_lines(lines, columns), lines
    text = " ".join(" ".join(lines).split())
    assert "a_module_with_a_rather_long_name.py" in text and "conflict" in text
    assert "ported-series-output-directory-with-a-long-name/conflicts/" in text
    assert max(len(line) for line in lines) > 80 or columns == 80

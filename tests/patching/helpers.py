"""Helpers for the patching tests: run GNU patch and the dryboot CLI for comparison."""

from __future__ import annotations

import os
import re
import subprocess
import tempfile
from pathlib import Path

from click.testing import CliRunner, Result

from dryboot.cli import cli

GNU_HUNK = re.compile(r"^Hunk #(\d+) (succeeded|FAILED) at (-?\d+)(?: with fuzz (\d+))?(?: \(offset (-?\d+) lines?\))?")


def gnu_patch(
    data: bytes, patch: bytes, reverse: bool = False, fuzz: int = 0
) -> tuple[int, bytes | None, list[tuple[int, str, int]]]:
    """Apply ``patch`` (one file section) to ``data`` with GNU patch (-f, no reversal guess).

    Returns (exit code, output bytes or None when GNU patch failed, notable hunks in GNU's
    report as (hunk, 'offset'|'fuzz'|'FAILED', offset))."""
    with tempfile.TemporaryDirectory() as d:
        src = os.path.join(d, "in")
        out = os.path.join(d, "out")
        Path(src).write_bytes(data)
        Path(os.path.join(d, "p")).write_bytes(patch)
        cmd = [
            "patch",
            "-f",
            "--fuzz",
            str(fuzz),
            "--no-backup-if-mismatch",
            "-r",
            "-",
            "-o",
            out,
            src,
            "-i",
            os.path.join(d, "p"),
        ]
        if reverse:
            cmd.insert(1, "-R")
        p = subprocess.run(cmd, capture_output=True, text=True, env={**os.environ, "LC_ALL": "C"})
        notable = []
        for line in p.stdout.splitlines():
            m = GNU_HUNK.match(line)
            if m:
                kind = "FAILED" if m.group(2) == "FAILED" else ("fuzz" if m.group(4) else "offset")
                notable.append((int(m.group(1)), kind, int(m.group(5) or 0)))
        result = Path(out).read_bytes() if p.returncode == 0 and os.path.exists(out) else None
        return p.returncode, result, notable


def run_cli(*args: str) -> Result:
    """Run ``dryboot ARGS`` in-process; stdout/stderr captured separately."""
    return CliRunner().invoke(cli, list(args), catch_exceptions=False)


def snapshot(root: Path) -> dict[str, bytes]:
    """Every file under ``root`` (relative path -> bytes), directories included as b'<dir>'."""
    out: dict[str, bytes] = {}
    for dirpath, dirnames, filenames in os.walk(root):
        for d in dirnames:
            out[os.path.relpath(os.path.join(dirpath, d), root) + "/"] = b"<dir>"
        for f in filenames:
            p = os.path.join(dirpath, f)
            out[os.path.relpath(p, root)] = (
                b"<link>" + os.readlink(p).encode() if os.path.islink(p) else Path(p).read_bytes()
            )
    return out

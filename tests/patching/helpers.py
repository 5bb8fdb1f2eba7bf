"""Helpers for the patching tests: run GNU patch and the dryboot CLI for comparison."""

from __future__ import annotations

import functools
import os
import re
import shutil
import subprocess
import tempfile
from dataclasses import dataclass, field
from pathlib import Path

import pytest
from click.testing import CliRunner, Result

from dryboot.cli import cli
from dryboot.patching.parse import parse_patch
from dryboot.patching.place import run_hunks, sides, split_keep

#: The GNU patch release dryboot reproduces: its messages and placement are the differential tests' truth.
GNU_PATCH_VERSION = "GNU patch 2.7.6"


@functools.cache
def _patch_on_path() -> tuple[str | None, str]:
    found = shutil.which("patch")
    if found is None:
        return None, "no patch on PATH"
    r = subprocess.run([found, "--version"], capture_output=True, text=True, check=False, env={"LC_ALL": "C"})
    first = (r.stdout.splitlines() or ["(no output)"])[0].strip()
    return (found if first == GNU_PATCH_VERSION else None), f"{found} --version says {first!r}"


def gnu_patch_bin() -> str:
    """The path of the ``patch`` the tests compare dryboot with, checked to be GNU patch 2.7.6;
    the calling test is skipped, saying which ``patch`` it found, where it is another one."""
    found, what = _patch_on_path()
    if found is None:
        pytest.skip(f"needs {GNU_PATCH_VERSION} as `patch` (the release dryboot reproduces): {what}")
    return found


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
            gnu_patch_bin(),
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
    """Every file under ``root`` (relative path -> bytes), directories as ``<dir>`` (with a
    trailing ``/``), symlinks (to files or directories) as ``<link>`` and their target."""
    out: dict[str, bytes] = {}
    for dirpath, dirnames, filenames in os.walk(root):
        for d in dirnames:
            p = os.path.join(dirpath, d)
            out[os.path.relpath(p, root) + "/"] = b"<link>" + os.readlink(p).encode() if os.path.islink(p) else b"<dir>"
        for f in filenames:
            p = os.path.join(dirpath, f)
            out[os.path.relpath(p, root)] = (
                b"<link>" + os.readlink(p).encode() if os.path.islink(p) else Path(p).read_bytes()
            )
    return out


class GnuTreeRun:
    """What GNU patch did to a directory: exit code, the per-hunk lines it printed for each file
    ("Hunk #k ..." and "misordered hunks! ..."), whether it detected a reversed patch for a file,
    the files afterwards, and its raw output."""

    def __init__(
        self, rc: int, messages: dict[str, list[str]], reversed_files: set[str], files: dict[str, bytes], output: str
    ) -> None:
        self.rc = rc
        self.messages = messages
        self.reversed_files = reversed_files
        self.files = files
        self.output = output


def gnu_patch_tree(
    files: dict[str, bytes],
    patch: bytes,
    fuzz: int = 0,
    reverse: bool = False,
    forward_only: bool = False,
) -> GnuTreeRun:
    """Run ``patch -p1 --fuzz N [-R]`` on a directory holding ``files`` (relative names).

    By default with ``-f`` (never guess a reversed patch, apply what fits, write partial results
    as GNU patch does); with ``forward_only`` as ``-N --dry-run`` instead, which is how GNU patch
    reports "Reversed (or previously applied) patch detected!"."""
    with tempfile.TemporaryDirectory() as d:
        root = Path(d, "t")
        for rel, data in files.items():
            p = root / rel
            p.parent.mkdir(parents=True, exist_ok=True)
            p.write_bytes(data)
        Path(d, "p").write_bytes(patch)
        cmd = [
            gnu_patch_bin(),
            "-p1",
            "--fuzz",
            str(fuzz),
            "--no-backup-if-mismatch",
            "-r",
            "-",
            "-d",
            str(root),
            "-i",
            os.path.join(d, "p"),
        ]
        cmd[1:1] = ["-N", "--dry-run"] if forward_only else ["-f"]
        if reverse:
            cmd.insert(1, "-R")
        p = subprocess.run(cmd, capture_output=True, stdin=subprocess.DEVNULL, env={**os.environ, "LC_ALL": "C"})
        out = p.stdout.decode("utf-8", "replace")
        messages: dict[str, list[str]] = {}
        reversed_files: set[str] = set()
        current = ""
        for line in out.splitlines():
            if line.startswith(("patching file ", "checking file ")):
                current = line.split(" ", 2)[2]
                messages.setdefault(current, [])
            elif line.startswith(("Hunk #", "misordered hunks!")):
                messages.setdefault(current, []).append(line)
            elif "Reversed (or previously applied) patch detected!" in line or "Unreversed patch detected!" in line:
                reversed_files.add(current)
        after = {str(q.relative_to(root)): q.read_bytes() for q in root.rglob("*") if q.is_file()}
        return GnuTreeRun(p.returncode, messages, reversed_files, after, out + p.stderr.decode("utf-8", "replace"))


@dataclass
class Engine:
    ok: bool = True
    messages: dict[str, list[str]] = field(default_factory=dict)
    reversed_files: set[str] = field(default_factory=set)
    files: dict[str, bytes] = field(default_factory=dict)


def engine_tree(files: dict[str, bytes], patch: bytes, fuzz: int, reverse: bool) -> Engine:
    """dryboot's engine over the same tree: each file section's hunks through run_hunks, in patch
    order, keeping partial results as GNU patch's ``-f`` does."""
    pf = parse_patch(patch, "p")
    pf.require_valid()
    res = Engine(files=dict(files))
    for sec in pf.sections:
        name = sec.new or sec.old
        assert name is not None
        rel = name.stripped(1)
        assert rel is not None
        run = run_hunks(split_keep(res.files[rel]), [sides(h, reverse) for h in sec.hunks], fuzz)
        res.ok = res.ok and run.ok
        res.messages.setdefault(rel, []).extend(run.messages())
        if run.reversed:
            res.reversed_files.add(rel)
        res.files[rel] = run.data
    return res

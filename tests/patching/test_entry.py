"""The fast start of ``series apply`` / ``series status`` (no click): the same bytes, exit codes
and trees as the click commands, and none of the imports it exists to avoid."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from dryboot.cli.patch_report import parse

from .helpers import snapshot
from .test_series import diff, mk, numbered

ENV = {**os.environ, "PYTHONDONTWRITEBYTECODE": "1"}


def _fast(*args: str) -> subprocess.CompletedProcess[bytes]:
    """``python -m dryboot ARGS``: the fast start when the shape is plain."""
    return subprocess.run([sys.executable, "-m", "dryboot", *args], capture_output=True, env=ENV)


def _click(*args: str) -> subprocess.CompletedProcess[bytes]:
    """The same command through click (:func:`dryboot.cli.main`), in a process of its own."""
    code = "import sys; from dryboot.cli import main; sys.argv[0] = 'dryboot'; main()"
    return subprocess.run([sys.executable, "-c", code, *args], capture_output=True, env=ENV)


def _stack(tmp: Path) -> tuple[Path, Path]:
    a = mk(tmp / "a", {"m.py": numbered(40), "n.py": numbered(30, "n")})
    b = mk(tmp / "b", {"m.py": numbered(40).replace(b"l5\n", b"L5\n"), "n.py": numbered(30, "n")})
    c = mk(tmp / "c", {"m.py": (tmp / "b/m.py").read_bytes(), "n.py": numbered(30, "n").replace(b"n9\n", b"N9\n")})
    s = tmp / "stack"
    s.mkdir()
    (s / "0001-m.patch").write_bytes(diff(a, b, tmp))
    (s / "0002-n.patch").write_bytes(diff(b, c, tmp))
    (s / "series").write_bytes(b"0001-m.patch\n0002-n.patch\n")
    t = tmp / "t"
    shutil.copytree(a, t)
    (t / "m.py").write_bytes(b"# header\n" + numbered(40))  # hunks land at an offset
    return s, t


def test_shapes_taken_and_left_to_click() -> None:
    assert parse(["series", "apply", "s", "--to", "t"]) == ("apply", {"DIRECTORY": "s", "--to": "t"})
    assert parse(["series", "apply", "--fuzz=2", "--to=t", "s"]) == (
        "apply",
        {"--fuzz": "2", "--to": "t", "DIRECTORY": "s"},
    )
    assert parse(["series", "status", "s", "--on", "t", "--json"]) == (
        "status",
        {"DIRECTORY": "s", "--on": "t", "--json": "1"},
    )
    for argv in (
        ["series", "apply", "s"],  # --to missing: click's usage error
        ["series", "apply", "s", "--to", "t", "--help"],
        ["series", "apply", "s", "--to", "t", "--to", "u"],  # repeated
        ["series", "apply", "s", "--to", "t", "--fuzz", "101"],  # out of click's range
        ["series", "apply", "s", "--to", "t", "--fuzz", "-1"],
        ["series", "apply", "s", "t", "--to", "t"],  # two positionals
        ["series", "apply", "s", "--to", "t", "--json"],  # status only
        ["series", "status", "s", "--on", "t", "--json=1"],
        ["series", "apply", "s", "--to"],
        ["series", "list", "s"],
        ["series", "apply", "", "--to", "t"],
        ["plan", "x"],
        [],
    ):
        assert parse(argv) is None, argv


def test_a_file_for_a_directory_goes_to_click(tmp_path: Path) -> None:
    f = tmp_path / "f"
    f.write_bytes(b"")
    assert parse(["series", "apply", str(f), "--to", str(tmp_path)]) is None
    r = _fast("series", "apply", str(f), "--to", str(tmp_path))
    assert r.returncode == 2 and b"is a file" in r.stderr


def test_same_output_codes_and_trees_as_click(tmp_path: Path) -> None:
    s, t = _stack(tmp_path)
    t2 = tmp_path / "t2"
    shutil.copytree(t, t2)
    outs: list[bytes] = []
    for args in (
        ("series", "status", str(s), "--on", "{t}"),
        ("series", "status", str(s), "--on", "{t}", "--json"),
        ("series", "apply", str(s), "--to", "{t}"),
        ("series", "apply", str(s), "--to", "{t}"),  # again: already applied
        ("series", "status", str(s), "--on", "{t}"),
        ("series", "apply", str(tmp_path / "nope"), "--to", "{t}"),  # bad input: exit 2
    ):
        fast = _fast(*(a.replace("{t}", str(t)) for a in args))
        slow = _click(*(a.replace("{t}", str(t2)) for a in args))
        assert fast.returncode == slow.returncode, args
        assert fast.stdout == slow.stdout.replace(str(t2).encode(), str(t).encode()), args
        assert fast.stderr == slow.stderr.replace(str(t2).encode(), str(t).encode()), args
        assert snapshot(t) == snapshot(t2)
        outs.append(fast.stdout)
    assert outs[2].splitlines()[0] == b"== 0001-m.patch (1 hunk at an offset)"
    assert outs[3].splitlines()[-2] == b"2 patches already applied (skipped)"
    assert (t / "n.py").read_bytes() == numbered(30, "n").replace(b"n9\n", b"N9\n")


def test_failure_same_as_click(tmp_path: Path) -> None:
    s, t = _stack(tmp_path)
    (t / "n.py").write_bytes(numbered(30, "x"))  # 0002 cannot apply
    t2 = tmp_path / "t2"
    shutil.copytree(t, t2)
    fast = _fast("series", "apply", str(s), "--to", str(t))
    slow = _click("series", "apply", str(s), "--to", str(t2))
    assert fast.returncode == slow.returncode == 1
    assert fast.stdout == slow.stdout.replace(str(t2).encode(), str(t).encode())
    assert b"nothing was written" in fast.stdout
    assert snapshot(t) == snapshot(t2)


#: modules the fast path must not import (each costs start-up time: click alone is ~40 ms)
HEAVY = ("click", "dataclasses", "inspect", "typing", "json", "shutil", "re", "enum", "signal")
SRC = Path(__file__).resolve().parents[2] / "src"


def _bare_python(code: str) -> subprocess.CompletedProcess[str]:
    """``code`` in a fresh interpreter that imports nothing it is not asked to: ``-I`` (no
    PYTHON* variables, no user site, no current directory) and ``-S`` (no ``site``: no .pth hooks,
    which on some interpreters import ``typing``, ``re`` and ``enum`` at start-up). What is in
    ``sys.modules`` afterwards is the interpreter's own core plus what ``code`` imported."""
    return subprocess.run([sys.executable, "-I", "-S", "-c", code], capture_output=True, text=True, check=False)


def test_the_bare_interpreter_preloads_none_of_the_slow_modules() -> None:
    """The premise of the next test: nothing is subtracted there, so a heavy module found is the code's."""
    r = _bare_python(f"import sys; print(sorted(m for m in {HEAVY!r} if m in sys.modules))")
    assert r.stdout.strip() == "[]", r.stdout + r.stderr


@pytest.mark.parametrize("cmd", ["apply", "status"])
def test_fast_start_imports_none_of_the_slow_modules(tmp_path: Path, cmd: str) -> None:
    s, t = _stack(tmp_path)
    flag = "--to" if cmd == "apply" else "--on"
    code = (
        "import sys\n"
        f"sys.path.insert(0, {str(SRC)!r})\n"
        "from dryboot.__main__ import _patch_report\n"
        "main = _patch_report().main\n"
        f"rc = main(['series', {cmd!r}, {str(s)!r}, {flag!r}, {str(t)!r}])\n"
        f"heavy = sorted(m for m in {HEAVY!r} if m in sys.modules)\n"
        "print('RC', rc, 'HEAVY', heavy)\n"
    )
    r = _bare_python(code)
    assert r.stdout.splitlines()[-1] == "RC 0 HEAVY []", r.stdout + r.stderr

"""A real stack made here from real files: consecutive releases of a real PyPI package
(``packaging`` 23.0 -> 23.1 -> 23.2, wheels fetched with ``pip download --no-deps`` and cached
in the temp directory), ``diff -ruN`` between neighbours cut into one patch per changed file,
applied as a series to the oldest release. dryboot's result must be byte-identical to GNU
patch's and to the newest release, with the same offset census."""

from __future__ import annotations

import os
import re
import shutil
import subprocess
import zipfile
from pathlib import Path

import pytest

from .corpus import FetchError, pypi_release
from .helpers import gnu_patch_bin, run_cli, snapshot

#: fetched from the package registries: skipped unless DRYBOOT_NETWORK=1 (tests/conftest.py)
pytestmark = pytest.mark.network

PACKAGE = "packaging"
VERSIONS = ["23.0", "23.1", "23.2"]


def _fetch(version: str) -> Path:
    try:
        return pypi_release(f"{PACKAGE}=={version}", "wheel")
    except FetchError as exc:
        pytest.skip(f"cannot download {PACKAGE} {version}: {exc}")


def _unpack(whl: Path, dest: Path) -> Path:
    with zipfile.ZipFile(whl) as z:
        z.extractall(dest)
    return dest


def _cut(diff: bytes) -> list[tuple[str, bytes]]:
    """Cut ``diff -ruN`` output into one patch per file (named after the file)."""
    parts = re.split(rb"(?m)^(?=diff -ruN )", diff)
    out = []
    for part in parts:
        if not part.startswith(b"diff -ruN "):
            continue
        m = re.match(rb"^diff -ruN \S+?/(\S+) ", part)
        assert m
        out.append((m.group(1).decode().replace("/", "_"), part))
    return out


@pytest.mark.slow
def test_release_stack_matches_gnu_and_newest(tmp_path: Path) -> None:
    trees = []
    for k, v in enumerate(VERSIONS):
        trees.append(_unpack(_fetch(v), tmp_path / f"r{k}"))
    stack = tmp_path / "stack"
    stack.mkdir()
    names = []
    for k in range(len(trees) - 1):
        d = subprocess.run(["diff", "-ruN", f"r{k}", f"r{k + 1}"], cwd=tmp_path, capture_output=True)
        assert d.returncode == 1
        for n, (fname, part) in enumerate(_cut(d.stdout)):
            name = f"{k + 1:02d}{n:03d}-{fname}.patch"
            (stack / name).write_bytes(part)
            names.append(name)
    assert len(names) >= 10
    (stack / "series").write_text("".join(n + "\n" for n in names))
    mine = tmp_path / "mine"
    gnu = tmp_path / "gnu"
    shutil.copytree(trees[0], mine)
    shutil.copytree(trees[0], gnu)
    gnu_offsets = 0
    for n in names:
        p = subprocess.run(
            [
                gnu_patch_bin(),
                "-f",
                "-s",
                "--fuzz",
                "0",
                "--no-backup-if-mismatch",
                "-p1",
                "-d",
                str(gnu),
                "-i",
                str(stack / n),
            ],
            capture_output=True,
            text=True,
            env={**os.environ, "LC_ALL": "C"},
        )
        assert p.returncode == 0, p.stdout + p.stderr
        gnu_offsets += len(re.findall(r"\(offset -?\d+ lines?\)", p.stdout))
    r = run_cli("series", "apply", str(stack), "--to", str(mine))
    assert r.exit_code == 0, r.output
    assert snapshot(mine) == snapshot(gnu) == snapshot(trees[-1])
    last = r.stdout.splitlines()[-1]
    assert last == (f"{len(names)} patches applied with exact context, 0 of them at an offset, 0 with fuzz")
    assert gnu_offsets == 0
    # reversed in one go (series -R from newest back to oldest) gives the oldest release again
    rev = tmp_path / "rev"
    rev.mkdir()
    for n in names:
        shutil.copy(stack / n, rev / n)
    (rev / "series").write_text("".join(n + " -R\n" for n in reversed(names)))
    r = run_cli("series", "apply", str(rev), "--to", str(mine))
    assert r.exit_code == 0, r.output
    assert snapshot(mine) == snapshot(trees[0])

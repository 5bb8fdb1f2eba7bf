"""A real stack made here from real files: consecutive releases of a real PyPI package
(``packaging`` 23.0 -> 23.1 -> 23.2, wheels fetched with ``pip download --no-deps`` and cached
in the temp directory), ``diff -ruN`` between neighbours cut into one patch per changed file,
applied as a series to the oldest release. dryboot's result must be byte-identical to GNU
patch's and to the newest release, with the same offset census."""

from __future__ import annotations

import shutil
import zipfile
from pathlib import Path

import pytest

from .corpus import FetchError, gnu_apply, pypi_release, release_series
from .helpers import run_cli, snapshot

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


@pytest.mark.slow
def test_release_stack_matches_gnu_and_newest(tmp_path: Path) -> None:
    trees = []
    for k, v in enumerate(VERSIONS):
        trees.append(_unpack(_fetch(v), tmp_path / f"r{k}"))
    stack = tmp_path / "stack"
    names = release_series(trees, stack)
    assert len(names) >= 10
    mine = tmp_path / "mine"
    gnu = tmp_path / "gnu"
    shutil.copytree(trees[0], mine)
    shutil.copytree(trees[0], gnu)
    gnu_offsets = 0
    for n in names:
        rc, offsets, out = gnu_apply(gnu, stack / n, [])
        assert rc == 0, out
        gnu_offsets += len(offsets)
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

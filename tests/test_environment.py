"""The test run's own environment (issue 38): the git oracles read no user or system config, and
the differential tests' ``patch`` is GNU patch 2.7.6 or they skip saying which ``patch`` they found; the
Python floor has the tarball extraction filters the tests unpack with."""

from __future__ import annotations

import io
import os
import re
import subprocess
import tarfile
from pathlib import Path

import pytest
from tests.patching.helpers import GNU_PATCH_VERSION, _patch_on_path, gnu_patch_bin


def test_git_reads_no_user_or_system_config(tmp_path: Path) -> None:
    """A stray ``~/.gitconfig`` (``core.autocrlf``, ``apply.whitespace``) would change what
    ``git apply`` and ``git am -3`` answer: tests/conftest.py pins git's config for the whole run."""
    home = tmp_path / "home"
    home.mkdir()
    (home / ".gitconfig").write_text("[core]\n\tautocrlf = true\n[apply]\n\twhitespace = fix\n")
    (home / ".config" / "git").mkdir(parents=True)
    (home / ".config" / "git" / "config").write_text("[core]\n\tfilemode = false\n")
    repo = tmp_path / "repo"
    env = {**os.environ, "HOME": str(home), "XDG_CONFIG_HOME": str(home / ".config")}
    subprocess.run(["git", "init", "-q", str(repo)], check=True, env=env)
    r = subprocess.run(
        ["git", "config", "--list", "--show-origin"], cwd=repo, capture_output=True, text=True, check=True, env=env
    )
    origins = {line.split("\t")[0] for line in r.stdout.splitlines()}
    assert origins == {"file:.git/config"}, r.stdout
    assert "autocrlf" not in r.stdout and "whitespace" not in r.stdout


def test_patch_is_checked_to_be_gnu_patch_2_7_6(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    """Another ``patch`` first on PATH: the tests that run it skip, naming it."""
    fake = tmp_path / "bin" / "patch"
    fake.parent.mkdir()
    fake.write_text("#!/bin/sh\necho 'patch 2.8'\n")
    fake.chmod(0o755)
    monkeypatch.setenv("PATH", f"{fake.parent}{os.pathsep}{os.environ['PATH']}")
    _patch_on_path.cache_clear()
    try:
        with pytest.raises(pytest.skip.Exception, match=r"patch 2\.8"):
            gnu_patch_bin()
    finally:
        _patch_on_path.cache_clear()
    found, _ = _patch_on_path()
    if found is not None:  # this machine's patch is the one dryboot reproduces
        assert GNU_PATCH_VERSION in subprocess.run([found, "--version"], capture_output=True, text=True).stdout


REPO = Path(__file__).resolve().parents[1]


def test_the_python_floor_has_tarfile_extraction_filters() -> None:
    """``requires-python`` admits no Python without ``tarfile``'s extraction filters (3.11.4+, PEP 706;
    Debian 12's 3.11.2 lacks them), the README says the same floor, and every tarball the tests unpack
    goes through one (``filter="data"`` / ``"tar"``)."""
    floor = re.search(r'requires-python = ">=(\d+)\.(\d+)\.(\d+)"', (REPO / "pyproject.toml").read_text())
    assert floor is not None and tuple(int(x) for x in floor.groups()) >= (3, 11, 4)
    assert "Python 3.11.4 or later" in (REPO / "README.md").read_text()
    assert hasattr(tarfile, "data_filter")
    unfiltered = [
        f"{path.relative_to(REPO)}: {line.strip()}"
        for path in sorted((REPO / "tests").rglob("*.py"))
        for line in path.read_text().splitlines()
        if re.search(r"\bt\.extractall\(", line) and "filter=" not in line
    ]
    assert not unfiltered, unfiltered


@pytest.mark.parametrize("kind", ["data", "tar"])
def test_a_hostile_tarball_cannot_escape(tmp_path: Path, kind: str) -> None:
    """A member whose path leaves the destination is refused under either filter the tests use."""
    buf = io.BytesIO()
    with tarfile.open(fileobj=buf, mode="w") as t:
        info = tarfile.TarInfo("../escaped")
        info.size = 1
        t.addfile(info, io.BytesIO(b"x"))
    buf.seek(0)
    dest = tmp_path / "dest"
    dest.mkdir()
    with tarfile.open(fileobj=buf) as t, pytest.raises(tarfile.OutsideDestinationError):
        t.extractall(dest, filter=kind)
    assert not (tmp_path / "escaped").exists()

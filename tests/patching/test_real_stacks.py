"""Issue 9 on real public stacks: three consecutive releases of five PyPI packages from different
ecosystems (Python, C, C++, JavaScript/CSS/HTML, a PEM certificate bundle), fetched with ``pip
download --no-deps`` at test time (cached in the temp directory; skipped when the index cannot be
reached). ``diff -ruN`` between neighbouring releases is cut into one patch per changed file, so a
file changed by both releases gets two patches, the later editing the earlier's lines.

For each stack, with GNU patch and git as ground truth:
- every prefix k (the tree GNU patch leaves after the first k patches, k = 0 .. n) reads exactly k
  applied and the rest applicable;
- dryboot's apply equals GNU patch's loop, ``git apply``'s loop and the newest release;
- a second apply is a no-op (exit 0, every patch already applied, not a byte changed);
- reversing the stack (``-R``, newest first) restores the pristine tree byte for byte.
"""

from __future__ import annotations

import os
import re
import shutil
import subprocess
import tarfile
import zipfile
from pathlib import Path

import pytest

from dryboot.patching.apply import Tree
from dryboot.patching.series import load_series
from dryboot.patching.state import stack_state

from .corpus import FetchError, pypi_release
from .helpers import gnu_patch_bin, run_cli, snapshot

#: fetched from the package registries: skipped unless DRYBOOT_NETWORK=1 (tests/conftest.py)
pytestmark = pytest.mark.network

# (package, versions, kind): "sdist" for source archives (C, C++ sources), "wheel" otherwise
STACKS = [
    ("idna", ["3.4", "3.6", "3.7"], "wheel"),  # Python
    ("markupsafe", ["2.1.3", "2.1.4", "2.1.5"], "sdist"),  # C extension sources
    ("pybind11", ["2.11.1", "2.12.0", "2.13.1"], "sdist"),  # C++ headers, CMake
    ("furo", ["2024.1.29", "2024.4.27", "2024.5.6"], "wheel"),  # JavaScript, CSS, HTML templates
    ("certifi", ["2024.2.2", "2024.6.2", "2024.7.4"], "wheel"),  # PEM certificate bundle
]


def _fetch(package: str, version: str, kind: str) -> Path:
    try:
        return pypi_release(f"{package}=={version}", kind)
    except FetchError as exc:
        pytest.skip(f"cannot download {package} {version}: {exc}")


def _unpack(archive: Path, dest: Path) -> Path:
    if archive.name.endswith(".whl"):
        with zipfile.ZipFile(archive) as z:
            z.extractall(dest)
        root = dest
    else:
        with tarfile.open(archive) as t:
            t.extractall(dest, filter="data")
        (root,) = list(dest.iterdir())
        shutil.move(root, dest.parent / (dest.name + ".tmp"))
        dest.rmdir()
        shutil.move(dest.parent / (dest.name + ".tmp"), dest)
        root = dest
    # the releases' metadata differs in every file and is not source; binary files (a font, an
    # image) cannot be patched
    for meta in list(root.glob("*.dist-info")) + list(root.glob("*.egg-info")) + list(root.glob("*/*.egg-info")):
        shutil.rmtree(meta)
    for dirpath, _, filenames in os.walk(root):
        for fn in filenames:
            p = Path(dirpath) / fn
            if fn == "PKG-INFO" or b"\0" in p.read_bytes():
                p.unlink()
    return root


def _cut(diff: bytes) -> list[tuple[str, bytes]]:
    parts = re.split(rb"(?m)^(?=diff -ruN )", diff)
    out = []
    for part in parts:
        if not part.startswith(b"diff -ruN "):
            continue
        m = re.match(rb"^diff -ruN \S+?/(\S+) ", part)
        assert m
        out.append((re.sub(r"[^A-Za-z0-9.]+", "_", m.group(1).decode()), part))
    return out


def _gnu(target: Path, patch: Path, *opts: str) -> None:
    p = subprocess.run(
        [
            gnu_patch_bin(),
            "-f",
            "-s",
            "--fuzz",
            "0",
            "--no-backup-if-mismatch",
            "-p1",
            *opts,
            "-d",
            str(target),
            "-i",
            str(patch),
        ],
        capture_output=True,
        text=True,
        env={**os.environ, "LC_ALL": "C"},
    )
    assert p.returncode == 0, p.stdout + p.stderr


@pytest.mark.slow
@pytest.mark.parametrize(("package", "versions", "kind"), STACKS, ids=[s[0] for s in STACKS])
def test_real_stack_state(tmp_path: Path, package: str, versions: list[str], kind: str) -> None:
    trees = [_unpack(_fetch(package, v, kind), tmp_path / f"r{k}") for k, v in enumerate(versions)]
    stack = tmp_path / "stack"
    stack.mkdir()
    names: list[str] = []
    for k in range(len(trees) - 1):
        d = subprocess.run(["diff", "-ruN", f"r{k}", f"r{k + 1}"], cwd=tmp_path, capture_output=True)
        assert d.returncode == 1, d.stderr
        for n, (fname, part) in enumerate(_cut(d.stdout)):
            name = f"{k + 1:02d}{n:03d}-{fname}.patch"
            (stack / name).write_bytes(part)
            names.append(name)
    (stack / "series").write_text("".join(n + "\n" for n in names))
    twice = {n.split("-", 1)[1] for n in names if n.startswith("01")} & {
        n.split("-", 1)[1] for n in names if n.startswith("02")
    }
    assert len(names) >= 4 and twice, "both releases change some file: later patches edit earlier lines"
    patches = load_series(str(stack))
    pristine = snapshot(trees[0])

    # every prefix, ground truth from GNU patch
    gnu = shutil.copytree(trees[0], tmp_path / "gnu")
    for k in range(len(names) + 1):
        st = stack_state(patches, Tree.open(str(gnu)))
        got = [s.state for s in st.statuses]
        assert st.prefix == k and got == ["applied"] * k + ["applicable"] * (len(names) - k), (k, got)
        if k < len(names):
            _gnu(gnu, stack / names[k])

    # git apply, one patch at a time
    git = shutil.copytree(trees[0], tmp_path / "git")
    subprocess.run(["git", "init", "-q"], cwd=git, check=True)
    for n in names:
        subprocess.run(["git", "apply", "-p1", str(stack / n)], cwd=git, check=True, capture_output=True)
    shutil.rmtree(git / ".git")

    mine = shutil.copytree(trees[0], tmp_path / "mine")
    r = run_cli("series", "apply", str(stack), "--to", str(mine))
    assert r.exit_code == 0, r.output
    assert snapshot(mine) == snapshot(gnu) == snapshot(git) == snapshot(trees[-1])
    full = run_cli("series", "status", str(stack), "--on", str(mine))
    assert full.exit_code == 0 and full.stdout.splitlines()[-1] == f"series status: all {len(names)} patches applied"

    before = snapshot(mine)
    r = run_cli("series", "apply", str(stack), "--to", str(mine))
    assert r.exit_code == 0, r.output
    assert r.stdout.splitlines()[-2:] == [
        f"{len(names)} patches already applied (skipped)",
        "0 patches applied with exact context, 0 of them at an offset, 0 with fuzz",
    ]
    assert snapshot(mine) == before

    rev = tmp_path / "rev"
    rev.mkdir()
    for n in names:
        shutil.copy(stack / n, rev / n)
    (rev / "series").write_text("".join(n + " -R\n" for n in reversed(names)))
    r = run_cli("series", "apply", str(rev), "--to", str(mine))
    assert r.exit_code == 0, r.output
    assert snapshot(mine) == pristine

"""The syv-ai/qwen38-27b-rtx3090 stack (13 patches written on vLLM 0.27.1; see
``tests/data/port/syv-qwen38-27b-rtx3090/SOURCE``) and the files of vLLM 0.27.1, 0.28.0 and 0.29.0
it touches (``releases.tar.xz``, from the releases' wheels): the offline sample of issue 39's port,
and ``git am -3`` run patch by patch with each failing patch skipped, the answer its fates are
checked against."""

from __future__ import annotations

import shutil
import tarfile
from pathlib import Path

from .test_port import git, tree

DATA = Path(__file__).resolve().parent.parent / "data" / "port" / "syv-qwen38-27b-rtx3090"
PATCHES = DATA / "patches"


def release(version: str, dest: Path) -> Path:
    """The sample of release ``version`` under ``dest``: a tree holding ``vllm/`` (the touched
    files only), as ``series port --from-version`` lays a release out."""
    with tarfile.open(DATA / "releases.tar.xz") as t:
        t.extractall(dest, [m for m in t.getmembers() if m.name.split("/", 1)[0] == version], filter="data")
    return dest / version


def series_copy(dest: Path) -> Path:
    shutil.copytree(PATCHES, dest)
    return dest


def git_am3_skipping(
    old: Path, new: Path, series: Path, work: Path, strip: str = "-p1"
) -> tuple[dict[str, bytes], list[str]]:
    """``git am -3`` of the series (made into commits on OLD by ``git apply``) onto NEW, one
    patch at a time, ``git am --skip`` after each that fails: the tree it leaves and the names
    of the patches it skipped."""
    repo = work / "repo"
    shutil.copytree(old, repo, symlinks=True)
    git(repo, "init", "-q", "-b", "old")
    git(repo, "add", "-A")
    git(repo, "commit", "-q", "-m", "old")
    names = [ln.split()[0] for ln in (series / "series").read_text().splitlines() if ln and not ln.startswith("#")]
    for name in names:
        git(repo, "apply", "--index", strip, str(series / name))
        git(repo, "commit", "-q", "--allow-empty", "-m", name)
    git(repo, "format-patch", "-q", "-o", str(work / "mbox"), f"HEAD~{len(names)}")
    git(repo, "checkout", "-q", "-b", "new", f"HEAD~{len(names)}")
    for p in repo.iterdir():
        if p.name != ".git":
            shutil.rmtree(p) if p.is_dir() else p.unlink()
    shutil.copytree(new, repo, dirs_exist_ok=True, symlinks=True)
    git(repo, "add", "-A")
    git(repo, "commit", "-q", "--allow-empty", "-m", "new")
    skipped = []
    for name, mail in zip(names, sorted((work / "mbox").iterdir()), strict=True):
        if git(repo, "am", "-3", "-q", str(mail), check=False).returncode != 0:
            git(repo, "am", "--skip", check=False)
            skipped.append(name)
    return tree(repo), skipped

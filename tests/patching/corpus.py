"""Real patch stacks fetched by package name, and the GNU patch loop they are judged against.

Used by ``tests/patching/test_corpus.py`` (the slow real-stack test) and ``bench/corpus_speed.py``.

Sources (nothing is fetched except by package name from a package registry):

- **Debian source packages** of the machine's Debian release: ``apt-get source --download-only``
  with a private apt configuration (a ``deb-src`` list, package lists and cache all under the
  cache directory: the machine's own apt state is neither read nor changed). The pristine tree is
  the ``.orig`` tarball (component tarballs ``.orig-NAME`` unpacked into ``NAME/``, as
  dpkg-source does) plus the ``debian/`` directory; the stack is ``debian/patches`` with its
  ``series``, applied at ``-p1`` as dpkg-source's ``3.0 (quilt)`` format does.
- **PyPI releases** (``pip download --no-deps``) as the pristine tree of the stacks kept verbatim
  in ``tests/data/stacks/`` (conda-forge feedstock patches, a downstream vLLM stack), each
  directory's ``SOURCE`` naming where its patches come from and the release they apply to.

Downloads are cached in ``$DRYBOOT_STACK_CACHE`` (default ``~/.cache/dryboot-stacks``), which
survives between runs on one machine; a missing or damaged cache entry is fetched again.
"""

from __future__ import annotations

import os
import re
import shutil
import subprocess
import sys
import tarfile
import time
import zipfile
from dataclasses import dataclass, field
from pathlib import Path

from .helpers import gnu_patch_bin, snapshot

__all__ = ["snapshot"]  # the corpus tests and the bench compare trees with it

CACHE = Path(os.environ.get("DRYBOOT_STACK_CACHE", str(Path.home() / ".cache" / "dryboot-stacks")))
DATA = Path(__file__).resolve().parent.parent / "data" / "stacks"
ENV = {**os.environ, "LC_ALL": "C"}

# Debian source packages of the release the machine runs (bookworm for this corpus): the
# number of patches each series applies is in the test's table, from the fetched package.
DEBIAN = [
    "bash",
    "busybox",
    "bzip2",
    "coreutils",  # 3 patches
    "cpio",
    "cron",
    "curl",
    "dash",
    "file",
    "git",
    "glibc",  # over 100 patches
    "grep",
    "gzip",  # 3 patches
    "less",
    "libxml2",
    "lua5.4",  # 5 patches
    "nano",  # 4 patches
    "openssh",
    "openssl",
    "patch",
    "perl",
    "python3.11",
    "rsync",
    "screen",
    "sed",  # 1 patch
    "sqlite3",
    "sudo",
    "tar",
    "vim",
    "wget",  # 4 patches
    "xz-utils",
    "zsh",
]


class FetchError(Exception):
    """A package could not be fetched (no network, no such package)."""


def _release() -> str:
    """The machine's Debian codename (``VERSION_CODENAME`` of /etc/os-release)."""
    try:
        text = Path("/etc/os-release").read_text()
    except OSError:
        return "bookworm"
    m = re.search(r"^VERSION_CODENAME=(\w+)", text, re.M)
    return m.group(1) if m else "bookworm"


def _apt_options(suite: str | None = None) -> list[str]:
    """apt-get options of a private configuration for ``suite``'s sources (default: the machine's
    own release, under ``CACHE/apt``; another suite under ``CACHE/apt-SUITE``)."""
    root = CACHE / ("apt" if suite is None else f"apt-{suite}")
    for sub in ("lists/partial", "cache/archives/partial", "etc"):
        (root / sub).mkdir(parents=True, exist_ok=True)
    src = root / "etc" / "sources.list"
    want = f"deb-src http://deb.debian.org/debian {suite or _release()} main\n"
    if not src.exists() or src.read_text() != want:
        src.write_text(want)
    opts = [
        f"-oDir::Etc::SourceList={src}",
        "-oDir::Etc::SourceParts=/nonexistent",
        f"-oDir::State::Lists={root / 'lists'}",
        f"-oDir::Cache={root / 'cache'}",
        "-oDebug::NoLocking=1",
        "-oAPT::Sandbox::User=root",
    ]
    if suite is not None:  # the installed packages' versions never pick another release's source
        opts.append("-oDir::State::status=/dev/null")
    return opts


def _apt_update() -> None:
    """``apt-get update`` of the private source list, at most once a day."""
    stamp = CACHE / "apt" / "updated"
    if (
        stamp.exists()
        and time.time() - stamp.stat().st_mtime < 86400
        and any((CACHE / "apt" / "lists").glob("*Sources*"))
    ):
        return
    p = subprocess.run(["apt-get", "-qq", *_apt_options(), "update"], capture_output=True, text=True, timeout=600)
    if p.returncode != 0:
        raise FetchError(f"apt-get update: {p.stderr.strip()[-300:]}")
    stamp.touch()


def debian_source(package: str) -> Path:
    """The directory holding ``package``'s ``.dsc``, orig and debian tarballs (fetched on a miss)."""
    d = CACHE / "debian" / package
    if d.is_dir() and list(d.glob("*.dsc")) and list(d.glob("*.debian.tar.*")) and _tar_ok(d):
        return d
    shutil.rmtree(d, ignore_errors=True)
    tmp = d.with_name(package + ".part")
    shutil.rmtree(tmp, ignore_errors=True)
    tmp.mkdir(parents=True)
    _apt_update()
    p = subprocess.run(
        ["apt-get", "-qq", *_apt_options(), "source", "--download-only", package],
        cwd=tmp,
        capture_output=True,
        text=True,
        timeout=900,
    )
    if p.returncode != 0 or not list(tmp.glob("*.dsc")):
        raise FetchError(f"apt-get source {package}: {p.stderr.strip()[-300:]}")
    tmp.rename(d)
    return d


def _tar_ok(d: Path) -> bool:
    return all(p.stat().st_size > 0 for p in d.iterdir())


def _untar(archive: Path, dest: Path) -> None:
    """Unpack ``archive`` into ``dest`` without its single top directory (as dpkg-source)."""
    tmp = dest.with_name(dest.name + ".x")
    shutil.rmtree(tmp, ignore_errors=True)
    tmp.mkdir()
    with tarfile.open(archive) as t:
        t.extractall(tmp, filter="tar")
    tops = list(tmp.iterdir())
    src = tops[0] if len(tops) == 1 and tops[0].is_dir() else tmp
    dest.mkdir(parents=True, exist_ok=True)
    for p in src.iterdir():
        shutil.move(str(p), str(dest / p.name))
    shutil.rmtree(tmp)


@dataclass
class Stack:
    """A fetched stack: ``tree`` (pristine), ``series`` (directory with ``series``), its
    ``entries`` as (patch name, options) in apply order, where it came from."""

    name: str
    origin: str
    tree: Path
    series: Path
    entries: list[tuple[str, list[str]]] = field(default_factory=list)


def read_entries(series_dir: Path) -> list[tuple[str, list[str]]]:
    """(name, options) per active line of ``series`` (quilt's syntax: ``#`` comments)."""
    out = []
    for line in (series_dir / "series").read_text(errors="surrogateescape").splitlines():
        line = re.sub(r"(^|\s)#.*", "", line).strip()
        if line:
            name, *opts = line.split()
            out.append((name, opts))
    return out


def debian_stack(package: str, work: Path) -> Stack:
    """``package``'s Debian source unpacked under ``work``: the tree and its series."""
    d = debian_source(package)
    work.mkdir(parents=True, exist_ok=True)
    tree = work / "tree"
    origs = sorted(p for p in d.iterdir() if ".orig" in p.name and not p.name.endswith(".asc"))
    main = [p for p in origs if re.search(r"\.orig\.tar\.", p.name)]
    if len(main) != 1:
        raise FetchError(f"{package}: no single .orig tarball in {d}")
    _untar(main[0], tree)
    for comp in origs:
        m = re.search(r"\.orig-([A-Za-z0-9-]+)\.tar\.", comp.name)
        if m:
            _untar(comp, tree / m.group(1))
    (deb,) = d.glob("*.debian.tar.*")
    shutil.rmtree(tree / "debian", ignore_errors=True)
    with tarfile.open(deb) as t:
        t.extractall(tree, filter="tar")
    series = work / "series"
    shutil.copytree(tree / "debian" / "patches", series, symlinks=True)
    return Stack(
        package,
        f"Debian {_release()} source package {package} ({d.glob('*.dsc').__next__().name})",
        tree,
        series,
        read_entries(series),
    )


def pypi_release(requirement: str, kind: str) -> Path:
    """The archive of ``requirement`` (``name==version``) from PyPI, ``kind`` sdist or wheel."""
    d = CACHE / "pypi"
    d.mkdir(parents=True, exist_ok=True)
    name, version = requirement.split("==")
    stems = {f"{re.sub(r'[-_.]+', '_', name).lower()}-{version}", f"{name.lower()}-{version}"}
    suffix = ".whl" if kind == "wheel" else ".tar.gz"

    def find() -> Path | None:
        for p in d.iterdir():
            if p.name.lower().startswith(tuple(stems)) and p.name.endswith(suffix):
                return p
        return None

    got = find()
    if got is None:
        binary = ["--only-binary", ":all:"] if kind == "wheel" else ["--no-binary", ":all:"]
        p = subprocess.run(
            [
                sys.executable,
                "-m",
                "pip",
                "download",
                "--no-deps",
                *binary,
                "--disable-pip-version-check",
                "-q",
                requirement,
                "-d",
                str(d),
            ],
            capture_output=True,
            text=True,
            timeout=900,
        )
        got = find()
        if got is None:
            raise FetchError(f"pip download {requirement}: {p.stderr.strip()[-300:]}")
    return got


def data_stacks() -> list[str]:
    """The stacks kept in ``tests/data/stacks`` (one directory each)."""
    return sorted(p.name for p in DATA.iterdir() if (p / "SOURCE").is_file()) if DATA.is_dir() else []


def data_stack(name: str, work: Path) -> Stack:
    """A stack of ``tests/data/stacks/NAME`` on its release from PyPI (``SOURCE`` gives
    ``release: NAME==VERSION sdist|wheel``, where the patches come from in ``source:``, and,
    optionally, ``extract: PREFIX``, the only members of a wheel unpacked)."""
    sdir = DATA / name
    meta = dict(ln.split(": ", 1) for ln in (sdir / "SOURCE").read_text().splitlines() if re.match(r"^[a-z]+: ", ln))
    req, kind = meta["release"].split()
    archive = pypi_release(req, kind)
    tree = work / "tree"
    if archive.name.endswith(".whl"):
        with zipfile.ZipFile(archive) as z:
            only = meta.get("extract", "")  # a wheel's compiled kernels are not what is patched
            z.extractall(tree, [m for m in z.namelist() if m.startswith(only)])
    else:
        _untar(archive, tree)
    if meta.get("subdir"):
        inner = tree / meta["subdir"]
        tmp = work / "inner"
        shutil.move(str(inner), str(tmp))
        shutil.rmtree(tree)
        shutil.move(str(tmp), str(tree))
    series = work / "series"
    shutil.copytree(sdir / "patches", series)
    return Stack(name, meta.get("source", name), tree, series, read_entries(series))


# -- the GNU patch loop -----------------------------------------------------------------------

_HUNK = re.compile(r"^Hunk #(\d+) succeeded at (\d+)(?: with fuzz (\d+))?(?: \(offset (-?\d+) lines?\))?")


def strip_of(opts: list[str]) -> int:
    return next((int(o[2:]) for o in opts if o.startswith("-p") and o[2:].isdigit()), 1)


def gnu_apply(
    tree: Path, patch: Path, opts: list[str], reverse: bool = False
) -> tuple[int, list[tuple[int, int]], str]:
    """One ``patch`` run as dpkg-source's quilt format makes it (``-p1 -f --fuzz 0``, no backups):
    exit code, (hunk number, offset) of each hunk GNU reports at an offset, its output."""
    cmd = [
        gnu_patch_bin(),
        "-f",
        "--fuzz",
        "0",
        "--no-backup-if-mismatch",
        "-r",
        "-",
        f"-p{strip_of(opts)}",
        "-d",
        str(tree),
        "-i",
        str(patch),
    ]
    if reverse != ("-R" in opts):
        cmd.insert(1, "-R")
    p = subprocess.run(cmd, capture_output=True, text=True, env=ENV, stdin=subprocess.DEVNULL, errors="replace")
    offsets = []
    for line in p.stdout.splitlines():
        m = _HUNK.match(line)
        if m and m.group(4):
            offsets.append((int(m.group(1)), int(m.group(4))))
    return p.returncode, offsets, p.stdout + p.stderr


def gnu_series(tree: Path, series: Path, dest: Path) -> tuple[Path, dict[str, str]]:
    """``tree`` copied to ``dest`` with ``series`` applied by a GNU patch loop (:func:`gnu_apply`,
    each series line's options); the patches GNU patch failed on, with its output (their hunks left
    out, as dpkg-source would refuse them)."""
    shutil.copytree(tree, dest, symlinks=True)
    failed = {}
    for name, opts in read_entries(series):
        rc, _, out = gnu_apply(dest, series / name, opts)
        if rc != 0:
            failed[name] = out
    return dest, failed


def release_series(trees: list[Path], stack: Path) -> list[str]:
    """A series in ``stack`` made from consecutive release trees (siblings under one directory):
    ``diff -ruN`` between neighbours cut into one patch per changed file, named
    ``<step><n>-<file>.patch``; returns the names, in series order."""
    stack.mkdir()
    names: list[str] = []
    for k in range(len(trees) - 1):
        d = subprocess.run(["diff", "-ruN", trees[k].name, trees[k + 1].name], cwd=trees[k].parent, capture_output=True)
        assert d.returncode == 1, d.stderr
        for n, part in enumerate(p for p in re.split(rb"(?m)^(?=diff -ruN )", d.stdout) if p.startswith(b"diff -ruN ")):
            m = re.match(rb"^diff -ruN \S+?/(\S+) ", part)
            assert m
            name = f"{k + 1:02d}{n:03d}-{re.sub(r'[^A-Za-z0-9.]+', '_', m.group(1).decode())}.patch"
            (stack / name).write_bytes(part)
            names.append(name)
    (stack / "series").write_text("".join(n + "\n" for n in names))
    return names


def diff_keys(a: dict[str, bytes], b: dict[str, bytes]) -> list[str]:
    return sorted(k for k in set(a) | set(b) if a.get(k) != b.get(k))

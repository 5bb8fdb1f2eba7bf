"""Real series their maintainers refreshed between two upstream versions: the ground truth of
``series port`` (issue 30). Used by ``tests/patching/test_port_corpus.py`` and
``bench/port_speed.py``.

A Debian source package carries its ``debian/patches`` series from one upstream version to the
next, refreshed by its maintainers. For a package whose upstream version differs between two
Debian releases (:data:`PAIRS`), the patches present in both series under one name are ported
with ``series port`` from the older release's pristine tree to the newer's, and the tree the
ported series leaves must be the tree the newer release's own refreshed patches leave (applied by
GNU patch, ``-p1 --fuzz 0`` as dpkg-source does). The same inputs go through ``git am -3``.

Fetched by package name (``apt-get source --download-only`` through a private apt configuration
per release, under ``$DRYBOOT_STACK_CACHE``: the machine's apt state is neither read nor changed).
"""

from __future__ import annotations

import shutil
import subprocess
import tarfile
import time
from dataclasses import dataclass
from pathlib import Path

from . import corpus as C

#: The release pairs: the series of the older release is ported to the pristine tree of the newer.
PAIRS = (("bullseye", "bookworm"), ("bookworm", "trixie"))


def _apt_update(suite: str) -> None:
    root = C.CACHE / f"apt-{suite}"
    stamp = root / "updated"
    if stamp.exists() and time.time() - stamp.stat().st_mtime < 86400 and any((root / "lists").glob("*Sources*")):
        return
    p = subprocess.run(
        ["apt-get", "-qq", *C._apt_options(suite), "update"], capture_output=True, text=True, timeout=600
    )
    if p.returncode != 0:
        raise C.FetchError(f"apt-get update ({suite}): {p.stderr.strip()[-300:]}")
    stamp.touch()


def source_in(suite: str, package: str) -> Path:
    """The directory holding ``package``'s source files of Debian ``suite`` (fetched on a miss)."""
    d = C.CACHE / f"debian-{suite}" / package
    if d.is_dir() and list(d.glob("*.dsc")) and list(d.glob("*.debian.tar.*")):
        return d
    shutil.rmtree(d, ignore_errors=True)
    tmp = d.with_name(package + ".part")
    shutil.rmtree(tmp, ignore_errors=True)
    tmp.mkdir(parents=True)
    _apt_update(suite)
    p = subprocess.run(
        ["apt-get", "-qq", *C._apt_options(suite), "source", "--download-only", package],
        cwd=tmp,
        capture_output=True,
        text=True,
        timeout=900,
    )
    if p.returncode != 0 or not list(tmp.glob("*.dsc")):
        raise C.FetchError(f"apt-get source {package} ({suite}): {p.stderr.strip()[-300:]}")
    tmp.rename(d)
    return d


def stack_in(suite: str, package: str, work: Path) -> C.Stack:
    """``package``'s source of ``suite`` unpacked under ``work``: the pristine tree (orig
    tarballs as dpkg-source lays them out, ``debian/`` from the debian tarball) and its series."""
    d = source_in(suite, package)
    work.mkdir(parents=True, exist_ok=True)
    tree = work / "tree"
    origs = sorted(p for p in d.iterdir() if ".orig" in p.name and not p.name.endswith(".asc"))
    main = [p for p in origs if ".orig.tar." in p.name]
    if len(main) != 1:
        raise C.FetchError(f"{package} ({suite}): no single .orig tarball")
    C._untar(main[0], tree)
    for comp in origs:
        stem = comp.name.split(".orig-", 1)
        if len(stem) == 2 and ".tar." in stem[1]:
            C._untar(comp, tree / stem[1].split(".tar.")[0])
    (deb,) = d.glob("*.debian.tar.*")
    shutil.rmtree(tree / "debian", ignore_errors=True)
    with tarfile.open(deb) as t:
        t.extractall(tree, filter="tar")
    series = work / "series"
    if not (tree / "debian" / "patches" / "series").is_file():
        raise C.FetchError(f"{package} ({suite}): no debian/patches/series")
    shutil.copytree(tree / "debian" / "patches", series, symlinks=True)
    dsc = next(d.glob("*.dsc")).name
    return C.Stack(package, f"Debian {suite} source package {package} ({dsc})", tree, series, C.read_entries(series))


@dataclass
class Pair:
    """One package's refreshed series: ``old`` and ``new`` stacks (pristine trees and series),
    ``common`` the patch names both series carry, in OLD's order (the ones ported)."""

    package: str
    old: C.Stack
    new: C.Stack
    common: list[str]


def pair(package: str, work: Path, suites: tuple[str, str] = PAIRS[-1]) -> Pair:
    """Fetch ``package`` of both releases of ``suites`` (older, newer) and name the patches they
    share."""
    old = stack_in(suites[0], package, work / suites[0])
    new = stack_in(suites[1], package, work / suites[1])
    names_new = {n for n, _ in new.entries}
    common = [n for n, _ in old.entries if n in names_new]
    return Pair(package, old, new, common)


def sub_series(stack: C.Stack, names: list[str], dest: Path) -> Path:
    """A series directory holding only ``names`` of ``stack`` (in the order given, with their
    options), copied from its series directory."""
    opts = dict(stack.entries)
    dest.mkdir(parents=True, exist_ok=True)
    lines = []
    for n in names:
        (dest / n).parent.mkdir(parents=True, exist_ok=True)
        shutil.copyfile(stack.series / n, dest / n)
        lines.append(" ".join([n, *opts[n]]))
    (dest / "series").write_text("\n".join(lines) + "\n")
    return dest


def gnu_tree(tree: Path, series: Path, dest: Path) -> tuple[Path, list[str]]:
    """``tree`` copied to ``dest`` with ``series`` applied by a GNU patch loop; the names of the
    patches GNU patch failed on (their hunks left out, as dpkg-source would refuse them)."""
    dest, failed = C.gnu_series(tree, series, dest)
    return dest, list(failed)


def change_of(path: Path, strip: int = 1) -> list[tuple[str, list[bytes]]]:
    """What a patch changes, without context or line numbers: per file section (its name
    stripped), the removed and added lines in order. Two versions of a patch with the same
    change differ only where a refresh differs (context, counts, offsets)."""
    from dryboot.patching.parse import read_patch

    out = []
    for sec in read_patch(str(path)).sections:
        nm = sec.new if sec.new is not None and sec.new.raw != b"/dev/null" else sec.old
        name = nm.stripped(strip) if nm is not None else None
        rows = [bytes([ln.kind]) + ln.text for h in sec.hunks for ln in h.lines if ln.kind != 32]
        out.append((name or "?", rows))
    return sorted(out, key=lambda x: x[0])


def refreshed(p: Pair) -> list[str]:
    """The common patches whose change is the same in both releases (a refresh: context and
    line numbers moved), in OLD's order -- the patches whose port has a ground truth."""
    new_opts = dict(p.new.entries)
    old_opts = dict(p.old.entries)
    out = []
    for n in p.common:
        a = change_of(p.old.series / n, C.strip_of(old_opts[n]))
        b = change_of(p.new.series / n, C.strip_of(new_opts[n]))
        if a == b:
            out.append(n)
    return out


def portable(p: Pair, work: Path) -> list[str]:
    """The refreshed patches (see :func:`refreshed`) that apply to OLD as a series on their own:
    a refreshed patch whose context needs a patch left out (one whose change the maintainers
    altered) is dropped too, as GNU patch would fail on it."""
    names = refreshed(p)
    opts = dict(p.old.entries)
    files = touched(sub_series(p.old, names, work / "portable-series"))
    while names:
        dest = work / "portable"
        shutil.rmtree(dest, ignore_errors=True)
        subset(p.old.tree, files, dest)
        bad = None
        for n in names:
            rc, _, _ = C.gnu_apply(dest, p.old.series / n, opts[n])
            if rc != 0:
                bad = n
                break
        shutil.rmtree(dest)
        if bad is None:
            return names
        names = [n for n in names if n != bad]
    return names


def touched(*series: Path) -> set[str]:
    """Every target-relative file the patches of these series directories name (stripped as
    their series lines say)."""
    from dryboot.patching.parse import read_patch

    out: set[str] = set()
    for d in series:
        for name, opts in C.read_entries(d):
            for sec in read_patch(str(d / name)).sections:
                for nm in (sec.old, sec.new):
                    got = nm.stripped(C.strip_of(opts)) if nm is not None and nm.raw != b"/dev/null" else None
                    if got:
                        out.add(got)
    return out


def subset(tree: Path, names: set[str], dest: Path) -> Path:
    """A copy of ``tree`` holding only ``names`` (those that exist): the files a port reads and
    writes, so that comparing and merging does not copy a whole source tree."""
    dest.mkdir(parents=True, exist_ok=True)
    for n in sorted(names):
        src = tree / n
        if src.is_file() or src.is_symlink():
            (dest / n).parent.mkdir(parents=True, exist_ok=True)
            shutil.copy2(src, dest / n, follow_symlinks=False)
    return dest

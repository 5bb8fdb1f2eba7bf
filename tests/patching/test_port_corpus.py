"""``series port`` on series their maintainers refreshed (issue 30): Debian packages whose
upstream version moved between bookworm and trixie, fetched by package name (network).

For each package of :data:`PACKAGES`, the patches both releases carry with the same change
(:func:`port_corpus.refreshed`: only context and line numbers differ -- the maintainers'
refresh) are ported from bookworm's pristine tree to trixie's, and:

- every patch the three-way merge can carry is ported (none conflicts) and the tree the ported
  series leaves (a GNU patch loop, ``-p1 --fuzz 0`` as dpkg-source applies) is the tree the
  maintainers' refreshed patches leave, byte for byte;
- ``git am -3`` of the same patches onto the same tree gives the same tree;
- every ported patch reads applied on that tree under dryboot's own engine.

:data:`PACKAGES` is the set that fetched here with at least one refreshed patch: the table in
``docs/series-port.md`` lists every package tried and why the others are left out.
"""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest

from dryboot.patching.port import port_series
from dryboot.patching.stack import apply_series

from . import corpus as C
from . import port_corpus as P
from .test_port import git_am3, tree

BW, BT = ("bullseye", "bookworm"), ("bookworm", "trixie")

#: (older, newer release), package, the number of refreshed patches ported: every package that
#: fetched here whose upstream version moved between the two releases and whose refreshed patches
#: all port without a conflict (see docs/series-port.md for every package tried)
CASES: list[tuple[tuple[str, str], str, int]] = [
    (BW, "bash", 16), (BW, "busybox", 6), (BW, "dash", 9), (BW, "openssl", 1), (BW, "sqlite3", 7),
    (BW, "sudo", 1), (BW, "vim", 1), (BW, "util-linux", 2), (BW, "libpng1.6", 1), (BW, "rsyslog", 2),
    (BW, "lua5.4", 2), (BW, "coreutils", 3), (BW, "freetype", 2), (BW, "gtk+3.0", 4), (BW, "systemd", 8),
    (BT, "bash", 18), (BT, "busybox", 7), (BT, "sqlite3", 10), (BT, "tar", 4), (BT, "util-linux", 3),
    (BT, "ncurses", 1), (BT, "tiff", 2), (BT, "rsyslog", 2), (BT, "postfix", 2), (BT, "cups", 12),
    (BT, "gzip", 2), (BT, "wget", 3), (BT, "lua5.4", 1), (BT, "coreutils", 1),
    # issue 35: upstreams not in the corpus before
    (BT, "zstd", 4), (BT, "libpcap", 3), (BT, "groff", 3), (BT, "nettle", 1), (BT, "smartmontools", 5),
    (BT, "fontconfig", 3), (BT, "dbus", 1), (BT, "krb5", 11), (BT, "libffi", 1),
    (BW, "nettle", 1), (BW, "gnutls28", 2), (BW, "libxslt", 4),
]  # fmt: skip

#: (older, newer release), package, the refreshed patch git's three-way merge conflicts on: the
#: maintainers resolved these by hand; dryboot must report the conflict where git am -3 stops
#: (bullseye -> bookworm libxml2 conflicts too, but `git apply` refuses one of its patches on OLD,
#: so git has no answer to compare with)
CONFLICTS: list[tuple[tuple[str, str], str]] = [
    (BT, "file"), (BT, "openssh"), (BT, "procps"), (BT, "dnsmasq"), (BT, "openldap"),
    (BW, "curl"), (BW, "perl"), (BW, "zsh"), (BW, "ncurses"), (BW, "openldap"),
    # issue 35
    (BT, "libarchive"), (BW, "shadow"), (BW, "libjpeg-turbo"), (BW, "krb5"), (BW, "json-c"),
]  # fmt: skip

#: (older, newer release), package, patches of the older series the newer one dropped because
#: upstream merged them: `series port --keep-going` of the whole older series calls each of them
#: upstream (issue 35: a patch entirely upstream is upstream, not "ported"), and calls upstream
#: no patch the maintainers kept
UPSTREAM: list[tuple[tuple[str, str], str, list[str]]] = [
    (BT, "zstd", ["0019-upstream-fix-cli-tests.patch", "0021-tests-newline.patch"]),
    (BT, "groff", ["sort-perl-hash-keys.patch"]),
    (BT, "libarchive", [
        "iconv-pkgconfig.patch", "robust-error-reporting.patch", "fix-OOB-in-rar-e8-filter-2135.patch",
    ]),
    (BT, "krb5", [
        "upstream/0010-Ensure-array-count-consistency-in-kadm5-RPC.patch", "CVE-2024-37370", "CVE-2024-26462.patch",
        "kdc-assume-aes-support.patch",
    ]),
    (BW, "json-c", ["0004-reproducible-build.patch", "0005-CVE-2021-32292.patch"]),
    (BW, "libxslt", ["0006-Fix-use-after-free-in-xsltApplyTemplates.patch"]),
]  # fmt: skip


@pytest.mark.network
@pytest.mark.slow
@pytest.mark.parametrize(("suites", "package", "count"), CASES, ids=[f"{c[0][0]}-{c[1]}" for c in CASES])
def test_maintainers_refresh_is_reproduced(tmp_path: Path, suites: tuple[str, str], package: str, count: int) -> None:
    try:
        pr = P.pair(package, tmp_path, suites)
    except C.FetchError as exc:
        pytest.fail(f"cannot fetch {package}: {exc}")
    names = P.portable(pr, tmp_path)
    assert len(names) == count, names
    old_series = P.sub_series(pr.old, names, tmp_path / "old-series")
    res = port_series(str(old_series), str(pr.old.tree), str(pr.new.tree), str(tmp_path / "out"))
    assert res.ok, [(p.name, p.status) for p in res.patches if p.status not in ("ported", "upstream")]
    truth_series = P.sub_series(pr.new, [n for n, _ in pr.new.entries if n in set(names)], tmp_path / "truth-series")
    files = P.touched(old_series, truth_series, tmp_path / "out")
    new = P.subset(pr.new.tree, files, tmp_path / "new-files")
    truth, failed = P.gnu_tree(new, truth_series, tmp_path / "truth")
    assert failed == []
    mine, failed = P.gnu_tree(new, tmp_path / "out", tmp_path / "mine")
    assert failed == []
    assert C.diff_keys(C.snapshot(mine), C.snapshot(truth)) == []
    old = P.subset(pr.old.tree, files, tmp_path / "old-files")
    am3, _ = git_am3(old, new, old_series, tmp_path / "am3")
    assert am3 is not None
    assert C.diff_keys(am3, tree(mine)) == []
    again = tmp_path / "again"
    shutil.copytree(mine, again, symlinks=True)
    assert apply_series(str(tmp_path / "out"), str(again)).already() == [p.name for p in res.patches if p.text]


@pytest.mark.network
@pytest.mark.slow
@pytest.mark.parametrize(("suites", "package"), CONFLICTS, ids=[f"{c[0][0]}-{c[1]}" for c in CONFLICTS])
def test_conflict_is_reported_where_git_am_3_stops(tmp_path: Path, suites: tuple[str, str], package: str) -> None:
    """No silent merge: where git's merge conflicts, dryboot reports the conflict on the same
    patch, writes its markers and reject, and ports the patches before it as git does."""
    try:
        pr = P.pair(package, tmp_path, suites)
    except C.FetchError as exc:
        pytest.fail(f"cannot fetch {package}: {exc}")
    names = P.portable(pr, tmp_path)
    old_series = P.sub_series(pr.old, names, tmp_path / "old-series")
    res = port_series(str(old_series), str(pr.old.tree), str(pr.new.tree), str(tmp_path / "out"))
    states = [p.status for p in res.patches]
    assert "conflict" in states
    k = states.index("conflict")
    files = P.touched(old_series)
    am3, stopped = git_am3(
        P.subset(pr.old.tree, files, tmp_path / "old-files"), P.subset(pr.new.tree, files, tmp_path / "new-files"),
        old_series, tmp_path / "am3",
    )  # fmt: skip
    assert am3 is None and stopped == k, (stopped, k, names[k])
    assert (tmp_path / "out" / f"{names[k]}.rej").is_file()


@pytest.mark.network
@pytest.mark.slow
@pytest.mark.parametrize(("suites", "package", "dropped"), UPSTREAM, ids=[f"{c[0][0]}-{c[1]}" for c in UPSTREAM])
def test_patches_the_maintainers_dropped_as_upstream_are_upstream(
    tmp_path: Path, suites: tuple[str, str], package: str, dropped: list[str]
) -> None:
    try:
        pr = P.pair(package, tmp_path, suites)
    except C.FetchError as exc:
        pytest.fail(f"cannot fetch {package}: {exc}")
    res = port_series(str(pr.old.series), str(pr.old.tree), str(pr.new.tree), None, keep_going=True)
    upstream = [p.name for p in res.patches if p.status == "upstream"]
    assert upstream == dropped
    kept = {n for n, _ in pr.new.entries}
    assert not kept & set(upstream)


#: Buildroot's series (another distribution's packaging; tests/data/port/buildroot/SOURCE): the
#: package, its older and newer version (Buildroot folders) and Debian suites of the same upstream
#: versions, and the number of patches Buildroot carried with the same change at both (refreshed)
BUILDROOT = Path(__file__).resolve().parent.parent / "data" / "port" / "buildroot"
BUILDROOT_CASES: list[tuple[str, str, str, str, str, int]] = [
    ("busybox", "1.30.1", "bullseye", "1.35.0", "bookworm", 2),
    ("busybox", "1.35.0", "bookworm", "1.37.0", "trixie", 4),
    ("nettle", "3.7.3", "bullseye", "3.8.1", "bookworm", 1),
    ("nettle", "3.8.1", "bookworm", "3.10.1", "trixie", 1),
    ("wget", "1.21.3", "bookworm", "1.25.0", "trixie", 1),
]


@pytest.mark.network
@pytest.mark.slow
@pytest.mark.parametrize(
    ("package", "v_old", "s_old", "v_new", "s_new", "count"),
    BUILDROOT_CASES,
    ids=[f"buildroot-{c[0]}-{c[1]}-{c[3]}" for c in BUILDROOT_CASES],
)
def test_buildroot_refresh_is_reproduced(
    tmp_path: Path, package: str, v_old: str, s_old: str, v_new: str, s_new: str, count: int
) -> None:
    """Buildroot's patches of the older version that the newer carries with the same change,
    ported from Debian's pristine tree of the older upstream version to the newer's: the tree
    Buildroot's refreshed patches leave (GNU patch, -p1 --fuzz 0), byte for byte, and git am -3's."""
    try:
        old = P.stack_in(s_old, package, tmp_path / "old")
        new = P.stack_in(s_new, package, tmp_path / "new")
    except C.FetchError as exc:
        pytest.fail(f"cannot fetch {package}: {exc}")
    br_old, br_new = BUILDROOT / f"{package}-{v_old}", BUILDROOT / f"{package}-{v_new}"
    names_new = [n for n, _ in C.read_entries(br_new)]
    changes_new = {repr(P.change_of(br_new / n)): n for n in names_new}
    pairs = [(n, changes_new.get(repr(P.change_of(br_old / n)))) for n, _ in C.read_entries(br_old)]
    common = [(a, b) for a, b in pairs if b is not None]
    assert len(common) == count, common
    old_series, truth_series = tmp_path / "old-series", tmp_path / "truth-series"
    for series, names, src in (
        (old_series, [a for a, _ in common], br_old),
        (truth_series, [b for _, b in common], br_new),
    ):
        series.mkdir()
        for n in names:
            shutil.copyfile(src / n, series / n)
        (series / "series").write_text("".join(n + "\n" for n in names))
    res = port_series(str(old_series), str(old.tree), str(new.tree), str(tmp_path / "out"))
    assert res.ok and all(p.status == "ported" for p in res.patches), [(p.name, p.status) for p in res.patches]
    files = P.touched(old_series, truth_series, tmp_path / "out")
    new_files = P.subset(new.tree, files, tmp_path / "new-files")
    truth, failed = P.gnu_tree(new_files, truth_series, tmp_path / "truth")
    assert failed == []
    mine, failed = P.gnu_tree(new_files, tmp_path / "out", tmp_path / "mine")
    assert failed == []
    assert C.diff_keys(C.snapshot(mine), C.snapshot(truth)) == []
    am3, _ = git_am3(P.subset(old.tree, files, tmp_path / "old-files"), new_files, old_series, tmp_path / "am3")
    assert am3 is not None
    assert C.diff_keys(am3, tree(mine)) == []

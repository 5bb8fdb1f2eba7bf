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


#: Other distributions' series (tests/data/port/<distribution>/SOURCE): the patches a packager
#: carried from one upstream version to the next, verbatim in <distribution>/<package>-<version>/
#: with the distribution's order in its `series`, applied to Debian's pristine tree of the same
#: upstream version. Per case: the distribution folder, the package (its folder and Debian source
#: package), the older version and the Debian suite holding it, the newer and its suite.
PORT_DATA = Path(__file__).resolve().parent.parent / "data" / "port"
B, OE, OW, CF = "buildroot", "openembedded", "openwrt", "conda-forge"

#: ... and the number of patches carried with the same change at both (refreshed): every one ports
#: without a conflict to the packager's refreshed tree
DISTRO_CASES: list[tuple[str, str, str, str, str, str, int]] = [
    (B, "busybox", "1.30.1", "bullseye", "1.35.0", "bookworm", 2),
    (B, "busybox", "1.35.0", "bookworm", "1.37.0", "trixie", 4),
    (B, "nettle", "3.7.3", "bullseye", "3.8.1", "bookworm", 1),
    (B, "nettle", "3.8.1", "bookworm", "3.10.1", "trixie", 1),
    (B, "wget", "1.21.3", "bookworm", "1.25.0", "trixie", 1),
    (OE, "coreutils", "8.32", "bullseye", "9.1", "bookworm", 2),
    (OE, "coreutils", "9.1", "bookworm", "9.7", "trixie", 1),
    (OE, "cups", "2.4.2", "bookworm", "2.4.10", "trixie", 4),
    (OE, "fontconfig", "2.14.1", "bookworm", "2.15.0", "trixie", 1),
    (OE, "gzip", "1.12", "bookworm", "1.13", "trixie", 1),
    (OE, "libarchive", "3.6.2", "bookworm", "3.7.4", "trixie", 1),
    (OE, "libffi", "3.4.4", "bookworm", "3.4.8", "trixie", 1),
    (OE, "libjpeg-turbo", "2.0.6", "bullseye", "2.1.5", "bookworm", 1),
    (OE, "nettle", "3.7.3", "bullseye", "3.8.1", "bookworm", 2),
    (OE, "perl", "5.32.1", "bullseye", "5.36.0", "bookworm", 6),
    (OE, "shadow", "4.8.1", "bullseye", "4.13", "bookworm", 1),
    (OE, "util-linux", "2.36.1", "bullseye", "2.38.1", "bookworm", 3),
    (OE, "wget", "1.21.3", "bookworm", "1.25.0", "trixie", 1),
    (OW, "openldap", "2.4.57", "bullseye", "2.6.10", "trixie", 3),
    (OW, "smartmontools", "7.3", "bookworm", "7.4", "trixie", 2),
    (CF, "tiff", "4.5.0", "bookworm", "4.7.0", "trixie", 1),
]

#: ... whose refreshed patch git's three-way merge conflicts on (the packager resolved it by
#: hand): dryboot reports the conflict where git am -3 stops
DISTRO_CONFLICTS: list[tuple[str, str, str, str, str, str]] = [
    (OE, "groff", "1.22.4", "bookworm", "1.23.0", "trixie"),
    (OE, "nettle", "3.8.1", "bookworm", "3.10.1", "trixie"),
    (OW, "libwebp", "1.2.4", "bookworm", "1.5.0", "trixie"),
    (OW, "lighttpd", "1.4.69", "bookworm", "1.4.79", "trixie"),
]

#: ... and the patches of the older series the packager dropped at the newer version because
#: upstream has them (backports of upstream commits; libffi's was submitted upstream and merged):
#: `series port --keep-going` of the whole older series calls exactly these upstream, and no patch
#: the packager kept
DISTRO_UPSTREAM: list[tuple[str, str, str, str, str, str, list[str]]] = [
    (OE, "coreutils", "8.32", "bullseye", "9.1", "bookworm", ["0001-fts-remove-NOSTAT_LEAF_OPTIMIZATION.patch"]),
    (OE, "groff", "1.22.4", "bookworm", "1.23.0", "trixie", ["0001-support-musl.patch"]),
    (OE, "libffi", "3.4.4", "bookworm", "3.4.8", "trixie", ["0001-arm-sysv-reverted-clang-VFP-mitigation.patch"]),
    (OE, "util-linux", "2.36.1", "bullseye", "2.38.1", "bookworm", [
        "0001-hwclock-do-not-assume-__NR_settimeofday_time32.patch",
    ]),
    (OW, "lighttpd", "1.4.69", "bookworm", "1.4.79", "trixie", [
        "031-mod_mbedtls-check-MBEDTLS_DEBUG_C.patch", "032-meson-build-fix-for-builtin_mods.patch",
    ]),
]  # fmt: skip


def _distro_id(c: tuple[object, ...]) -> str:
    return f"{c[0]}-{c[1]}-{c[2]}-{c[4]}"


def _refreshed_series(
    distro: str, package: str, v_old: str, v_new: str, tmp_path: Path
) -> tuple[Path, Path, list[tuple[str, str]]]:
    """The packager's patches of ``v_old`` that ``v_new`` carries with the same change (paired by
    change, in the older series' order), copied as two series directories: the older ones (to
    port) and the newer ones (the packager's refresh, the ground truth)."""
    d_old, d_new = PORT_DATA / distro / f"{package}-{v_old}", PORT_DATA / distro / f"{package}-{v_new}"
    changes_new = {repr(P.change_of(d_new / n)): n for n, _ in C.read_entries(d_new)}
    pairs = [(n, changes_new.get(repr(P.change_of(d_old / n)))) for n, _ in C.read_entries(d_old)]
    common = [(a, b) for a, b in pairs if b is not None]
    old_series, truth_series = tmp_path / "old-series", tmp_path / "truth-series"
    for series, names, src in (
        (old_series, [a for a, _ in common], d_old),
        (truth_series, [b for _, b in common], d_new),
    ):
        series.mkdir()
        for n in names:
            shutil.copyfile(src / n, series / n)
        (series / "series").write_text("".join(n + "\n" for n in names))
    return old_series, truth_series, common


def _debian_pair(package: str, s_old: str, s_new: str, tmp_path: Path) -> tuple[C.Stack, C.Stack]:
    try:
        return P.stack_in(s_old, package, tmp_path / "old"), P.stack_in(s_new, package, tmp_path / "new")
    except C.FetchError as exc:
        pytest.fail(f"cannot fetch {package}: {exc}")


@pytest.mark.network
@pytest.mark.slow
@pytest.mark.parametrize(
    ("distro", "package", "v_old", "s_old", "v_new", "s_new", "count"),
    DISTRO_CASES,
    ids=[_distro_id(c) for c in DISTRO_CASES],
)
def test_packagers_refresh_is_reproduced(
    tmp_path: Path, distro: str, package: str, v_old: str, s_old: str, v_new: str, s_new: str, count: int
) -> None:
    """A packager's patches of the older version that the newer carries with the same change,
    ported from Debian's pristine tree of the older upstream version to the newer's: the tree
    the packager's refreshed patches leave (GNU patch, -p1 --fuzz 0), byte for byte, and git am -3's."""
    old, new = _debian_pair(package, s_old, s_new, tmp_path)
    old_series, truth_series, common = _refreshed_series(distro, package, v_old, v_new, tmp_path)
    assert len(common) == count, common
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


@pytest.mark.network
@pytest.mark.slow
@pytest.mark.parametrize(
    ("distro", "package", "v_old", "s_old", "v_new", "s_new"),
    DISTRO_CONFLICTS,
    ids=[_distro_id(c) for c in DISTRO_CONFLICTS],
)
def test_packagers_conflict_is_reported_where_git_am_3_stops(
    tmp_path: Path, distro: str, package: str, v_old: str, s_old: str, v_new: str, s_new: str
) -> None:
    """No silent merge on a refresh the packager made by hand: the refreshed patches apply to
    both trees (GNU patch, fuzz 0), git am -3 stops on one, and dryboot reports the conflict on
    the same patch, with its reject."""
    old, new = _debian_pair(package, s_old, s_new, tmp_path)
    old_series, truth_series, common = _refreshed_series(distro, package, v_old, v_new, tmp_path)
    assert common
    files = P.touched(old_series, truth_series)
    old_files = P.subset(old.tree, files, tmp_path / "old-files")
    new_files = P.subset(new.tree, files, tmp_path / "new-files")
    assert P.gnu_tree(old_files, old_series, tmp_path / "on-old")[1] == []
    assert P.gnu_tree(new_files, truth_series, tmp_path / "on-new")[1] == []
    res = port_series(str(old_series), str(old.tree), str(new.tree), str(tmp_path / "out"))
    states = [p.status for p in res.patches]
    assert "conflict" in states
    k = states.index("conflict")
    am3, stopped = git_am3(old_files, new_files, old_series, tmp_path / "am3")
    assert am3 is None and stopped == k, (stopped, k, common[k])
    assert (tmp_path / "out" / f"{common[k][0]}.rej").is_file()


@pytest.mark.network
@pytest.mark.slow
@pytest.mark.parametrize(
    ("distro", "package", "v_old", "s_old", "v_new", "s_new", "dropped"),
    DISTRO_UPSTREAM,
    ids=[_distro_id(c) for c in DISTRO_UPSTREAM],
)
def test_patches_a_packager_dropped_as_upstream_are_upstream(
    tmp_path: Path, distro: str, package: str, v_old: str, s_old: str, v_new: str, s_new: str, dropped: list[str]
) -> None:
    old, new = _debian_pair(package, s_old, s_new, tmp_path)
    d_old, d_new = PORT_DATA / distro / f"{package}-{v_old}", PORT_DATA / distro / f"{package}-{v_new}"
    res = port_series(str(d_old), str(old.tree), str(new.tree), None, keep_going=True)
    upstream = [p.name for p in res.patches if p.status == "upstream"]
    assert upstream == dropped
    assert not {n for n, _ in C.read_entries(d_new)} & set(upstream)

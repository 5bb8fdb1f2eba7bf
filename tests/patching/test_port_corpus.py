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

#: package -> the number of refreshed patches ported (bookworm -> trixie)
PACKAGES: dict[str, int] = {}


@pytest.mark.network
@pytest.mark.slow
@pytest.mark.parametrize("package", sorted(PACKAGES))
def test_maintainers_refresh_is_reproduced(tmp_path: Path, package: str) -> None:
    try:
        pr = P.pair(package, tmp_path)
    except C.FetchError as exc:
        pytest.fail(f"cannot fetch {package}: {exc}")
    names = P.refreshed(pr)
    assert len(names) == PACKAGES[package], names
    old_series = P.sub_series(pr.old, names, tmp_path / "old-series")
    res = port_series(str(old_series), str(pr.old.tree), str(pr.new.tree), str(tmp_path / "out"))
    assert res.ok, [(p.name, p.status) for p in res.patches if p.status not in ("ported", "upstream")]
    truth_series = P.sub_series(pr.new, [n for n, _ in pr.new.entries if n in set(names)], tmp_path / "truth-series")
    truth, failed = P.gnu_tree(pr.new.tree, truth_series, tmp_path / "truth")
    assert failed == []
    mine, failed = P.gnu_tree(pr.new.tree, tmp_path / "out", tmp_path / "mine")
    assert failed == []
    assert C.diff_keys(C.snapshot(mine), C.snapshot(truth)) == []
    am3, _ = git_am3(pr.old.tree, pr.new.tree, old_series, tmp_path / "am3")
    assert am3 is not None
    assert C.diff_keys(am3, tree(mine)) == []
    again = tmp_path / "again"
    shutil.copytree(mine, again, symlinks=True)
    assert apply_series(str(tmp_path / "out"), str(again)).already() == [p.name for p in res.patches if p.text]

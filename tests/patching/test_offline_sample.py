"""The network corpus's paths, offline (issue 38): a small recorded sample of real inputs
(``tests/data/offline-sample``, recorded by ``record_offline_sample.py`` from Debian's source
packages, their origin in each ``SOURCE``) judged exactly as the network tests judge the whole
corpus, so a regression in those paths fails the default run too:

- ``less`` (bookworm, 6 patches): ``series apply`` gives the tree, offsets and statuses of a GNU
  patch loop, a second apply writes nothing, the reversed series gives the pristine files back
  (``test_corpus.judge_stack``);
- ``jansson`` (bookworm -> trixie): ``series port`` of the patch the maintainers refreshed gives
  their tree byte for byte, and ``git am -3``'s (``test_port_corpus``'s checks).
"""

from __future__ import annotations

import shutil
from pathlib import Path

from dryboot.patching.port import port_series
from dryboot.patching.stack import apply_series

from . import corpus as C
from . import port_corpus as P
from .test_corpus import judge_stack
from .test_port import git_am3, tree

SAMPLE = Path(__file__).resolve().parent.parent / "data" / "offline-sample"


def _copy(src: Path, dest: Path) -> Path:
    shutil.copytree(src, dest, symlinks=True)
    return dest


def test_a_real_debian_stack_applies_as_gnu_patch(tmp_path: Path) -> None:
    d = SAMPLE / "less-bookworm"
    series = _copy(d / "series", tmp_path / "series")
    st = C.Stack("less", (d / "SOURCE").read_text().splitlines()[0], _copy(d / "tree", tmp_path / "tree"), series,
                 C.read_entries(series))  # fmt: skip
    assert len(st.entries) == 6
    judge_stack(st, tmp_path / "work")


def test_a_maintainers_refresh_is_reproduced_by_series_port(tmp_path: Path) -> None:
    d = SAMPLE / "jansson-bookworm-trixie"
    old, new = _copy(d / "old", tmp_path / "old"), _copy(d / "new", tmp_path / "new")
    old_series, truth_series = d / "old-series", d / "truth-series"
    res = port_series(str(old_series), str(old), str(new), str(tmp_path / "out"))
    assert res.ok and [p.status for p in res.patches] == ["ported"], [(p.name, p.status) for p in res.patches]
    truth, failed = P.gnu_tree(new, truth_series, tmp_path / "truth")
    assert failed == []
    mine, failed = P.gnu_tree(new, tmp_path / "out", tmp_path / "mine")
    assert failed == []
    assert C.diff_keys(C.snapshot(mine), C.snapshot(truth)) == []
    assert C.snapshot(mine) != C.snapshot(new)  # the patch changes something
    am3, _ = git_am3(old, new, old_series, tmp_path / "am3")
    assert am3 is not None and C.diff_keys(am3, tree(mine)) == []
    again = _copy(mine, tmp_path / "again")
    assert apply_series(str(tmp_path / "out"), str(again)).already() == [p.name for p in res.patches if p.text]

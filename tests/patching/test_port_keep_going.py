"""``series port --keep-going``, ``--continue``, ``--skip`` and the stack's path root (issue 39),
on a public fork's stack: syv-ai/qwen38-27b-rtx3090's 13 patches for vLLM 0.27.1, carried to
0.28.0 and 0.29.0 (``tests/data/port/syv-qwen38-27b-rtx3090``: the patches verbatim, and the files
of each release they touch, so the default run needs no network; the same on the whole releases
fetched by package name is network-marked).

The fates are checked against ``git am -3`` run patch by patch, each failing patch skipped, and
against the list checked by hand in the test data (``fates.txt``)."""

from __future__ import annotations

import contextlib
import os
import shutil
from pathlib import Path

import pytest
from click.testing import CliRunner
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from dryboot.cli import cli
from dryboot.errors import InputError
from dryboot.patching.port import port_series
from dryboot.patching.port_resume import resume_from

from . import corpus as C
from . import port_syv as S
from .test_port import applied

FATES = [ln.split() for ln in (S.DATA / "fates.txt").read_text().splitlines() if ln and not ln.startswith("#")]


def _fate(status: str, depends: list[str]) -> str:
    return f"depends:{','.join(depends)}" if depends else status


@pytest.mark.parametrize("version", ["0.28.0", "0.29.0"])
def test_keep_going_reports_every_fate_as_git_am_3_skipping(tmp_path: Path, version: str) -> None:
    old, new = S.release("0.27.1", tmp_path / "rel"), S.release(version, tmp_path / "rel")
    res = port_series(str(S.PATCHES), str(old), str(new), str(tmp_path / "out"), keep_going=True)
    want = [(p, f) for v, p, f, _ in FATES if v == version]
    assert [(p.name, _fate(p.status, p.depends)) for p in res.patches] == want
    am_tree, skipped = S.git_am3_skipping(old / "vllm", new / "vllm", S.PATCHES, tmp_path / "am")
    assert skipped == [p for v, p, _, g in FATES if v == version and g == "skipped"]
    assert skipped == [p.name for p in res.patches if p.status in ("conflict", "depends")]
    # the patches ported leave git's tree: NEW with the written series, by GNU patch at fuzz 0
    assert C.diff_keys(applied(new / "vllm", tmp_path / "out", tmp_path), am_tree) == []


def test_summary_table_comes_first_and_names_every_patch(tmp_path: Path) -> None:
    old, new = S.release("0.27.1", tmp_path / "rel"), S.release("0.28.0", tmp_path / "rel")
    r = CliRunner().invoke(
        cli, ["series", "port", str(S.PATCHES), "--from", str(old), "--to", str(new), "--check", "--keep-going"]
    )
    assert r.exit_code == 1, r.output
    lines = r.output.splitlines()
    assert lines[0].split() == ["patch", "fate", "hunks"]
    table = lines[1:14]
    assert [ln.split()[0] for ln in table] == [p for v, p, _, _ in FATES if v == "0.28.0"]
    assert "depends on dflash2-backport.patch" in table[1]
    assert "conflict (creates a file NEW has" in table[0] and "8 upstream" in table[0]
    assert lines[14] == "" and lines[15] == "== dflash2-backport.patch: " + table[0].split(None, 1)[1].split("  ")[0]


def test_stop_at_first_conflict_without_keep_going(tmp_path: Path) -> None:
    old, new = S.release("0.27.1", tmp_path / "rel"), S.release("0.28.0", tmp_path / "rel")
    res = port_series(str(S.PATCHES), str(old), str(new), None)
    assert [p.status for p in res.patches] == ["conflict"] + ["not tried"] * 12


def test_created_file_new_has_is_offered_as_a_modification(tmp_path: Path) -> None:
    """0.28.0 ships its own DFlash2: the backport's created speculator is a conflict whose reject
    is the patch as a change of NEW's file (GNU patch applies it to NEW's file, giving the fork's)."""
    old, new = S.release("0.27.1", tmp_path / "rel"), S.release("0.28.0", tmp_path / "rel")
    out = tmp_path / "out"
    res = port_series(str(S.PATCHES), str(old), str(new), str(out), keep_going=True)
    rel = "v1/worker/gpu/spec_decode/dflash2/speculator.py"
    fp = next(f for f in res.patches[0].files if f.path == rel)
    assert fp.status == "conflict" and fp.offer is not None and "NEW's file, -" in fp.detail
    t = tmp_path / "t"
    shutil.copytree(new / "vllm", t)
    (tmp_path / "offer.patch").write_bytes(fp.offer)
    rc, _, msg = C.gnu_apply(t, tmp_path / "offer.patch", [])
    assert rc == 0, msg
    oldt = tmp_path / "o"
    shutil.copytree(old / "vllm", oldt)
    assert C.gnu_apply(oldt, S.PATCHES / "dflash2-backport.patch", [])[0] == 0
    assert (t / rel).read_bytes() == (oldt / rel).read_bytes()
    # the markers are git's add/add conflict, under conflicts/
    marked = (out / "conflicts" / "dflash2-backport.patch" / rel).read_bytes()
    assert b"<<<<<<< NEW" in marked and b">>>>>>> OLD+dflash2-backport.patch" in marked


SUB = ["hybrid-kv-groups-v2-cudagraph.patch", "hybrid-sw-block-promote.patch", "marlin-int8-layer-select.patch"]
KV = "v1/core/kv_cache_utils.py"


def _sub_series(dest: Path, names: list[str]) -> Path:
    dest.mkdir()
    for n in names:
        shutil.copyfile(S.PATCHES / n, dest / n)
    (dest / "series").write_text("".join(n + "\n" for n in names))
    return dest


def _resolve_as_the_fork_wants(marked: bytes) -> bytes:
    """The maintainer's resolution: 0.28.0 dropped ``is_kv_cache_page_size_uniform`` next to
    which the patch adds ``_promote_indivisible_block_sizes``; keep the fork's function, not the
    one upstream removed."""
    head, rest = marked.split(b"<<<<<<< NEW (hybrid-sw-block-promote.patch)\n", 1)
    ours, tail = rest.split(b"=======\n", 1)[1].split(b">>>>>>> OLD+hybrid-sw-block-promote.patch\n", 1)
    assert ours.startswith(b"def is_kv_cache_page_size_uniform(")
    return head + ours[ours.index(b"def _promote_indivisible_block_sizes(") :] + tail


def test_continue_takes_the_resolved_file_and_the_series_applies_to_new(tmp_path: Path) -> None:
    old, new = S.release("0.27.1", tmp_path / "rel"), S.release("0.28.0", tmp_path / "rel")
    s = _sub_series(tmp_path / "s", SUB)
    out = tmp_path / "out"
    args = ["series", "port", str(s), "--from", str(old), "--to", str(new), "--out", str(out)]
    r = CliRunner().invoke(cli, args)
    assert r.exit_code == 1 and "--continue" in r.output, r.output
    assert (out / "series").read_text().splitlines()[1:] == [
        "# hybrid-sw-block-promote.patch  # not ported: conflict",
        "# marlin-int8-layer-select.patch  # not ported: not tried",
    ]
    marked = out / "conflicts" / "hybrid-sw-block-promote.patch" / KV
    r = CliRunner().invoke(cli, [*args, "--continue"])
    assert r.exit_code == 2 and "still has a conflict marker" in r.output  # not resolved yet: refused
    marked.write_bytes(_resolve_as_the_fork_wants(marked.read_bytes()))
    r = CliRunner().invoke(cli, [*args, "--continue"])
    assert r.exit_code == 0, r.output
    assert (out / "series").read_text() == "".join(n + "\n" for n in SUB)
    assert not (out / "conflicts").exists()
    text = (out / "hybrid-sw-block-promote.patch").read_bytes()
    assert text.startswith((S.PATCHES / "hybrid-sw-block-promote.patch").read_bytes().split(b"\n--- a/")[0])
    got = applied(new / "vllm", out, tmp_path)  # GNU patch, -p1 --fuzz 0: every patch applies
    assert b"def _promote_indivisible_block_sizes(" in got[KV]
    assert b"def is_kv_cache_page_size_uniform(" not in got[KV]
    # a second --continue has nothing to resolve: the finished port keeps no state
    assert not (out / ".dryboot-port").exists()
    r = CliRunner().invoke(cli, [*args, "--continue"])
    assert r.exit_code == 2 and "holds no port to continue" in r.output


@pytest.mark.parametrize("version", ["0.28.0", "0.29.0"])
def test_skip_leaves_the_series_as_git_would(tmp_path: Path, version: str) -> None:
    """``--skip`` after each conflict, as ``git am --skip``: the tree and the skipped patches
    are git's, the skipped patches' lines commented out."""
    old, new = S.release("0.27.1", tmp_path / "rel"), S.release(version, tmp_path / "rel")
    out = tmp_path / "out"
    args = ["series", "port", str(S.PATCHES), "--from", str(old), "--to", str(new), "--out", str(out)]
    r = CliRunner().invoke(cli, args)
    for _ in range(13):
        if r.exit_code == 0:
            break
        assert r.exit_code == 1, r.output
        r = CliRunner().invoke(cli, [*args, "--skip"])
    assert r.exit_code == 0, r.output
    am_tree, skipped = S.git_am3_skipping(old / "vllm", new / "vllm", S.PATCHES, tmp_path / "am")
    series = (out / "series").read_text().splitlines()
    assert [ln.split()[1] for ln in series if ln.startswith("# ")] == skipped
    assert all(ln.endswith("# skipped (dryboot series port --skip)") for ln in series if ln.startswith("# "))
    assert C.diff_keys(applied(new / "vllm", out, tmp_path), am_tree) == []


def test_continue_refuses_another_series_and_an_empty_state(tmp_path: Path) -> None:
    with pytest.raises(InputError, match="holds no port"):
        resume_from(str(tmp_path), str(S.PATCHES), "continue")
    old, new = S.release("0.27.1", tmp_path / "rel"), S.release("0.28.0", tmp_path / "rel")
    port_series(str(S.PATCHES), str(old), str(new), str(tmp_path / "out"))
    with pytest.raises(InputError, match="is the port of"):
        resume_from(str(tmp_path / "out"), str(tmp_path), "skip")


def test_versions_find_the_package_root_without_flags(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """The stack's paths are relative to ``vllm/`` (``patch -d site-packages/vllm -p1``); a
    release is laid out one level up: found, as for ``--from``/``--to`` given either folder."""
    cache = tmp_path / "cache"
    for v in ("0.27.1", "0.28.0"):
        S.release(v, cache / "releases")
        (cache / "releases" / v / ".dryboot-release").write_text(f"vllm=={v} (test sample)\n")
    monkeypatch.setenv("DRYBOOT_CACHE", str(cache))
    s = _sub_series(tmp_path / "s", ["marlin-int8-negative-scales.patch", "qwen3_5-embed-quant.patch"])
    r = CliRunner().invoke(
        cli, ["series", "port", str(s), "--from-version", "0.27.1", "--to-version", "0.28.0", "--check"]
    )
    assert r.exit_code == 0, r.output
    assert "2 of 2 patches ported" in r.output
    rel = cache / "releases"
    for a, b in ((rel / "0.27.1" / "vllm", rel / "0.28.0"), (rel / "0.27.1", rel / "0.28.0" / "vllm")):
        res = port_series(str(s), str(a), str(b), None)
        assert res.ok and res.old == str(rel / "0.27.1" / "vllm") and res.new == str(rel / "0.28.0" / "vllm")
    res = port_series(str(s), str(rel / "0.27.1"), str(rel / "0.28.0"), None, directory="vllm")
    assert res.ok
    with pytest.raises(InputError, match="not a directory"):
        port_series(str(s), str(rel / "0.27.1"), str(rel / "0.28.0"), None, directory="nope")


@pytest.mark.network
@pytest.mark.parametrize("version", ["0.28.0", "0.29.0"])
def test_keep_going_on_the_whole_releases(tmp_path: Path, version: str) -> None:
    """The same fates on the releases fetched by package name, the whole ``vllm/`` trees."""
    from dryboot.boot.releases import release_tree

    old, new = release_tree("0.27.1"), release_tree(version)
    res = port_series(str(S.PATCHES), str(old), str(new), str(tmp_path / "out"), keep_going=True)
    assert [(p.name, _fate(p.status, p.depends)) for p in res.patches] == [
        (p, f) for v, p, f, _ in FATES if v == version
    ]
    files = {
        os.path.relpath(os.path.join(d, f), tmp_path / "sample" / version / "vllm")
        for d, _, fs in os.walk(S.release(version, tmp_path / "sample") / "vllm")
        for f in fs
    }
    assert all(
        (new / "vllm" / f).read_bytes() == (tmp_path / "sample" / version / "vllm" / f).read_bytes() for f in files
    )


def test_port_writes_boot_arms_for_profiles_compare(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """``OUT/boot/arms.toml``: the original stack on OLD and the ported one on NEW as boot arms
    (a boot arm applies its series to the tree holding ``vllm/``, so this package-rooted stack is
    copied re-rooted); each arm's series applies to its release laid out as a boot arm lays it."""
    import tomllib

    cache = tmp_path / "cache"
    for v in ("0.27.1", "0.28.0"):
        S.release(v, cache / "releases")
        (cache / "releases" / v / ".dryboot-release").write_text(f"vllm=={v} (test sample)\n")
    monkeypatch.setenv("DRYBOOT_CACHE", str(cache))
    s = _sub_series(tmp_path / "s", SUB)
    out = tmp_path / "out"
    args = ["series", "port", str(s), "--from-version", "0.27.1", "--to-version", "0.28.0", "--out", str(out)]
    args.append("--boot-arms")
    r = CliRunner().invoke(cli, [*args, "--keep-going"])
    assert r.exit_code == 1, r.output
    arms = tomllib.loads((out / "boot" / "arms.toml").read_text())["arms"]
    assert arms == {
        "original-0.27.1": {"series": str(out / "boot" / "original"), "base": "0.27.1"},
        "ported-0.28.0": {"series": str(out / "boot" / "ported"), "base": "0.28.0"},
    }
    for arm, version, series in (("original", "0.27.1", s), ("ported", "0.28.0", out)):
        rooted = tmp_path / f"{arm}-tree"
        shutil.copytree(cache / "releases" / version, rooted)
        pkg = tmp_path / f"{arm}-pkg"
        shutil.copytree(cache / "releases" / version / "vllm", pkg)
        assert (
            applied(rooted, out / "boot" / arm, tmp_path / f"{arm}-a")["vllm/" + KV]
            == applied(pkg, series, tmp_path / f"{arm}-b")[KV]
        )
    # resolving goes on from the same folder, and the arms are written again
    marked = out / "conflicts" / "hybrid-sw-block-promote.patch" / KV
    marked.write_bytes(_resolve_as_the_fork_wants(marked.read_bytes()))
    r = CliRunner().invoke(cli, [*args, "--continue"])
    assert r.exit_code == 0, r.output
    assert "hybrid-sw-block-promote.patch" in (out / "boot" / "ported" / "series").read_text()
    assert (out / "boot" / "ported" / "hybrid-sw-block-promote.patch").read_text().count("+++ b/vllm/") == 1


@settings(max_examples=200, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(
    state=st.recursive(
        st.none() | st.booleans() | st.integers() | st.text(max_size=8),
        lambda c: st.lists(c, max_size=3) | st.dictionaries(st.text(max_size=8), c, max_size=4),
        max_leaves=12,
    ),
    raw=st.binary(max_size=40),
)
def test_a_damaged_port_state_is_one_line(tmp_path: Path, state: object, raw: bytes) -> None:
    """``OUT/.dryboot-port/state.json`` is data found in a folder: anything but the port's own
    is refused as InputError (never a traceback), and no path in it reaches outside ``OUT``."""
    import json

    d = tmp_path / "o" / ".dryboot-port"
    d.mkdir(parents=True, exist_ok=True)
    for blob in (json.dumps(state).encode(), raw):
        (d / "state.json").write_bytes(blob)
        with contextlib.suppress(InputError):
            resume_from(str(tmp_path / "o"), str(S.PATCHES), "skip")


def test_state_paths_outside_out_are_refused(tmp_path: Path) -> None:
    import json

    d = tmp_path / "o" / ".dryboot-port"
    d.mkdir(parents=True)
    state = {"series": str(S.PATCHES), "keep_going": False, "skipped": [], "resolved": [], "deleted": {}}
    for bad in ({"a.patch": ["../../x"]}, {"../a": ["x"]}, {"a": ["/etc/passwd"]}):
        (d / "state.json").write_text(json.dumps({**state, "conflicts": bad}))
        with pytest.raises(InputError, match="damaged port state"):
            resume_from(str(tmp_path / "o"), str(S.PATCHES), "continue")

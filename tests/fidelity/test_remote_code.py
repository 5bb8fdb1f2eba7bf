"""Published configs whose config class is the checkpoint's own code (``auto_map``), against vLLM's
engine start with that code beside them (issue 37).

``data/remote-code/<model_type>/`` holds a checkpoint family's ``configuration_*.py`` verbatim (its
``SOURCE`` says where each file was copied from) and any published ``*.config.json`` of it found. Each
published config runs, in a directory with its family's config code, under :data:`FLAG_SETS` (the
first without ``--trust-remote-code``: vLLM refuses the config offline; the rest with it: vLLM runs
the checkpoint's config class). ``record_remote_code.py PYTHON`` records one release into
``data/remote-code/recorded-<release>.json``; nothing there comes from dryboot. Needs no vLLM.
The tiny configs of these architectures are ``test_architectures.py``'s (``remote_code_table.DIRS``).
"""

from __future__ import annotations

import json
import shutil
import sys
from pathlib import Path
from typing import Any

import pytest

sys.path.insert(0, str(Path(__file__).resolve().parent))

import e2e_harness as H
import remote_code_table as R
import test_architectures as T

pytestmark = pytest.mark.fidelity

DATA = H.REMOTE_CODE
RELEASES = ("0.28.0", "0.33.0")
TRUST = T.TRUST
#: the flag sets every published config runs under
FLAG_SETS: list[list[str]] = [
    ["--kv-cache-memory-bytes", "20000000000"],
    ["--kv-cache-memory-bytes", "20000000000", TRUST],
    ["--kv-cache-memory-bytes", "20000000000", "-tp", "2", "--kv-cache-dtype", "fp8", TRUST],
    ["--kv-cache-memory-bytes", "8000000000", "-tp", "4", "--max-model-len", "8192", TRUST],
    ["--kv-cache-memory-bytes", "30000000000", "-tp", "8", "--block-size", "32", "--enable-prefix-caching", TRUST],
    ["--kv-cache-memory-bytes", "20000000000", "-pp", "2", "--max-num-seqs", "64", TRUST],
]


def published() -> dict[str, Path]:
    """case name (``<model_type>/<file stem>``) -> a published ``*.config.json`` of the corpus."""
    return {f"{p.parent.name}/{p.name.removesuffix('.config.json')}": p for p in sorted(DATA.glob("*/*.config.json"))}


def model_dir(name: str) -> str:
    """A model directory: the published config as ``config.json`` beside its family's config code."""
    path = published()[name]
    work = H.default_workdir() / "remote-code" / name.replace("/", "--")
    work.mkdir(parents=True, exist_ok=True)
    shutil.copyfile(path, work / "config.json")
    for code in sorted(path.parent.glob("configuration_*.py")):
        shutil.copyfile(code, work / code.name)
    return str(work)


def cases(name: str) -> list[H.Case]:
    model = model_dir(name)
    return [H.Case(id=f"{name}#{i}", family=f"remote:{name}", model=model, argv=a) for i, a in enumerate(FLAG_SETS)]


def record_path(version: str) -> Path:
    return DATA / f"recorded-{version}.json"


def _recorded(version: str) -> dict[str, Any]:
    doc: dict[str, Any] = json.loads(record_path(version).read_text())
    assert doc["vllm"] == version
    return doc


def test_every_family_names_its_sources() -> None:
    """Each ``remote-code/`` directory's ``SOURCE`` names every file it holds (not its sub-directories)."""
    dirs = [d for d in sorted(DATA.iterdir()) if d.is_dir()]
    assert {d.name for d in dirs} >= set(R.DIRS.values())
    for d in dirs:
        source = (d / "SOURCE").read_text()
        for f in d.iterdir():
            if f.is_file() and f.name != "SOURCE":
                assert f.name in source, f"{d.name}/SOURCE does not name {f.name}"


def test_a_shared_file_is_one_file_named_by_both_sources() -> None:
    """A config file two families ship byte for byte (the same upstream file) is stored once: the
    other family's copy is a link to it, and both ``SOURCE`` files say where it came from (the
    linking one names the link's target). Files that differ at all are kept apart."""
    files = sorted(f for f in DATA.glob("*/*.py"))
    for f in files:
        if f.is_symlink():
            target = f.resolve()
            assert target.parent.parent == DATA.resolve() and target.name == f.name, f"{f}: links outside"
            assert not target.parent.joinpath(f.name).is_symlink() and target.is_file()
            assert f.name in (target.parent / "SOURCE").read_text(), f"{target.parent.name}/SOURCE"
            assert f"../{target.parent.name}/{f.name}" in (f.parent / "SOURCE").read_text(), f"{f.parent.name}/SOURCE"
    plain = [f for f in files if not f.is_symlink()]
    seen: dict[bytes, Path] = {}
    for f in plain:
        other = seen.setdefault(f.read_bytes(), f)
        assert other == f, f"{f} is a copy of {other}: make it a link"


@pytest.mark.parametrize("version", RELEASES)
def test_every_published_config_is_recorded(version: str) -> None:
    rows = _recorded(version)["configs"]
    assert sorted(rows) == sorted(published())
    for name, rs in rows.items():
        assert [r["argv"] for r in rs] == FLAG_SETS, name
        assert not rs[0]["vllm"].get("ok"), f"{name}: vLLM read it without --trust-remote-code"
        assert sum(1 for r in rs if r["vllm"].get("ok")) >= 4, name


@pytest.mark.parametrize(("version", "name"), [(v, n) for v in RELEASES for n in sorted(published())])
def test_dryboot_matches_the_release(version: str, name: str) -> None:
    rows = _recorded(version)["configs"][name]
    problems = []
    for case, row in zip(cases(name), rows, strict=True):
        got = H.run_dryboot(case, version)
        if not H.compare(row["vllm"], got)["agree"]:
            problems.append(
                f"{case.command(version)}\n  vLLM: {H._answer(row['vllm'], True)}\n  dryboot: {H._answer(got, False)}"
            )
    assert not problems, "\n".join(problems)

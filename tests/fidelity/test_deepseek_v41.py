"""DeepSeek-V4.1 (``DeepseekV41ForCausalLM``, ``vllm/models/deepseek_v41``, issue 37): dryboot's plan
against vLLM's engine start on the tiny stand-in configs of ``deepseek_v41_cases.py``
(``data/deepseek_v41/vllm-<release>.json``, ``record_deepseek_v41.py``).

Served cases agree on the block, every KV cache group (kind, block, page, layers, vLLM's order), the
blocks, tokens, concurrency and max length; vLLM's refusals are refused. A case dryboot refuses that
vLLM serves is listed by name in :data:`REFUSED_SERVED` (what is not modelled: another GPU
generation's records, a flag dryboot does not take). Needs no vLLM."""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import Any

import pytest

sys.path.insert(0, str(Path(__file__).resolve().parent))

import deepseek_v41_cases as C
import e2e_harness as H
import test_architectures as T

pytestmark = pytest.mark.fidelity

#: the releases whose records are checked
RELEASES = ("0.30.0", "0.31.0", "0.32.0", "0.33.0")
RECORDS = {v: C.recorded(v) for v in RELEASES}
#: the releases whose GPU cases are recorded (0.30.0 planned off SM 9.0 since issue 37)
GPU_RELEASES = ("0.30.0", "0.31.0", "0.32.0", "0.33.0")
GPU_RECORDS = {v: C.recorded(v, gpus=True) for v in GPU_RELEASES}
#: (release, case id) -> why dryboot refuses what vLLM serves
REFUSED_SERVED: dict[tuple[str, str], str] = {
    **{
        (r, "no-replay"): "--no-swa-bounded-replay: a flag dryboot does not take (the SWA caches' prefix caching)"
        for r in RELEASES
    },
}


def _case(tmp_path: Path, cid: str, row: dict[str, Any]) -> H.Case:
    """The case as dryboot is run on it: the record's flags less ``--engram-config`` (the n-gram
    table's placement, a flag dryboot does not take), plus ``--gpu`` for a GPU case."""
    argv = T.local(row["argv"])
    if "--engram-config" in argv:
        at = argv.index("--engram-config")
        del argv[at : at + 2]
    if "gpu" in row:
        argv = [*argv, "--gpu", row["gpu"]]
    return H.Case(cid, "deepseek-v41", H._write_config(tmp_path, cid, C.config(row["config"])), argv)


def _hash_block(case: H.Case, release: str) -> int:
    """dryboot's hash block (``plan --json``), the engine's global block (what the oracle records as
    ``final_block_size``: ``cache_config.block_size`` once the engine resolved it)."""
    from click.testing import CliRunner

    from dryboot.cli import cli

    res = CliRunner().invoke(cli, case.dryboot_argv(release), catch_exceptions=False)
    block: int = json.loads(res.stdout)["hash_block_size"]
    return block


def _group_layers(case: H.Case, release: str) -> list[list[str]]:
    from click.testing import CliRunner

    from dryboot.cli import cli

    res = CliRunner().invoke(cli, case.dryboot_argv(release), catch_exceptions=False)
    doc = json.loads(res.stdout)
    return [list(g["layer_names"]) for g in doc["grouping"]["groups"]]


def _check(tmp_path: Path, release: str, cid: str, row: dict[str, Any]) -> None:
    v = row["vllm"]
    case = _case(tmp_path, cid, row)
    d = H.run_dryboot(case, release)
    assert not H.is_crash(d), d
    if not v["ok"]:
        assert d.get("refused"), (cid, v["error"], d)
        return
    if (release, cid) in REFUSED_SERVED:
        assert d.get("refused"), (cid, d)
        return
    verdict = H.compare(v, d)
    assert verdict["agree"] and not verdict["diffs"], (cid, verdict)
    assert v["final_block_size"] == _hash_block(case, release), cid
    groups = _group_layers(case, release)
    if "-pp" in row["argv"]:  # vLLM's groups as the first stage's worker holds them
        first = {n for g in v["group_layers"] for n in g}
        groups = [[n for n in g if n in first] for g in groups]
    assert groups == v["group_layers"], cid


def test_every_case_is_recorded() -> None:
    for release in RELEASES:
        rec = RECORDS[release]
        assert set(rec) == set(C.cases()), release
        for cid, (name, argv) in C.cases().items():
            assert rec[cid]["config"] == name and rec[cid]["argv"] == argv, cid
    for release in GPU_RELEASES:
        assert set(GPU_RECORDS[release]) == set(C.GPU_CASES), release


@pytest.mark.parametrize("release", RELEASES)
@pytest.mark.parametrize("cid", sorted(C.cases()))
def test_dryboot_plans_deepseek_v41_as_vllm(tmp_path: Path, release: str, cid: str) -> None:
    if cid not in RECORDS[release]:
        pytest.skip("not recorded")
    _check(tmp_path, release, cid, RECORDS[release][cid])


@pytest.mark.parametrize("release", GPU_RELEASES)
@pytest.mark.parametrize("cid", sorted(C.GPU_CASES))
def test_dryboot_plans_deepseek_v41_on_other_gpus(tmp_path: Path, release: str, cid: str) -> None:
    _check(tmp_path, release, cid, GPU_RECORDS[release][cid])

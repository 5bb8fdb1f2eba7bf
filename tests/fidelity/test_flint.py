"""Flint (``FlintForCausalLM``, ``vllm/models/flint``, vLLM 0.33.0) agrees with vLLM's engine start,
or is refused in vLLM's words: its sliding and full layers with sinks on FlashInfer's pages on
SM 10.x (B200, B300) at TP 2, 4 and 8; on SM 9.0 FLASH_ATTN (the class asserts FlashInfer) and a
named FLASHINFER ("attention sinks not supported"). The cases (``flint_cases.py``) are recorded by
``record_flint.py`` through ``tests/data/gpus/run_oracle_as.py`` (``data/flint/vllm-<release>.json``);
nothing recorded comes from dryboot. TP 1 is planned on the same geometry without a record (the
class's CuTe DSL decode kernels are absent from the oracle's environment: ``models/flint.py``)."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).resolve().parent))

import e2e_harness as H
import flint_cases as C

pytestmark = pytest.mark.fidelity


@pytest.mark.parametrize("version", C.RELEASES)
def test_every_case_is_recorded(version: str) -> None:
    rec = C.recorded(version)
    assert list(rec) == list(C.CASES)
    for cid, row in rec.items():
        assert (row["config"], row["argv"], row["gpu"]) == C.CASES[cid], cid


def _case(tmp_path: Path, cid: str) -> H.Case:
    name, argv, gpu = C.CASES[cid]
    return H.Case(cid, "flint", H._write_config(tmp_path, cid, C.config(name)), [*argv, "--gpu", gpu])


@pytest.mark.parametrize("version", C.RELEASES)
@pytest.mark.parametrize("cid", list(C.CASES))
def test_dryboot_agrees_or_refuses(tmp_path: Path, version: str, cid: str) -> None:
    v = C.recorded(version)[cid]["vllm"]
    d = H.run_dryboot(_case(tmp_path, cid), version)
    assert not H.is_crash(d), d
    verdict = H.compare(v, d)
    assert verdict["agree"] and not verdict["diffs"], (cid, verdict, d.get("error"))


def test_tp1_is_planned_as_tp2_with_its_limitation_stated(tmp_path: Path) -> None:
    """TP 1 on a B200: the TP 2 record's layers and pages at twice the KV heads a rank, the
    CuTe DSL limitation stated among the plan's assumptions."""
    import json

    from click.testing import CliRunner

    from dryboot.cli import cli

    name, argv, gpu = C.CASES["b200-tp2"]
    model = H._write_config(tmp_path, "tp1", C.config(name))
    tp1 = [a for a in argv if a not in ("-tp", "2")]
    res = CliRunner().invoke(cli, ["plan", "--model", model, *tp1, "--gpu", gpu, "--vllm-version", "0.33.0", "--json"])
    doc = json.loads(res.stdout)
    groups = doc["grouping"]["groups"]
    v = C.recorded("0.33.0")["b200-tp2"]["vllm"]
    assert [g["layer_names"] for g in groups] == v["group_layers"]
    assert "CuTe DSL" in json.dumps(doc["assumptions"])


def test_switch_is_needed(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """``flashinfer_sinks_sm90`` off: FLASHINFER named on the H100 is refused for the sinks, where
    vLLM 0.33.0 serves it (``h100-tp2-flashinfer``)."""
    import dataclasses

    from dryboot.vllm import versions

    v = C.recorded("0.33.0")["h100-tp2-flashinfer"]["vllm"]
    assert v["ok"]
    rules = versions.rules_for("0.33.0")
    monkeypatch.setitem(versions.VERSIONS, "0.33.0", dataclasses.replace(rules, flashinfer_sinks_sm90=False))
    versions.rules_for.cache_clear()
    try:
        d = H.run_dryboot(_case(tmp_path, "h100-tp2-flashinfer"), "0.33.0")
        assert d.get("refused") and "attention sinks not supported" in str(d.get("error")), d
    finally:
        versions.rules_for.cache_clear()

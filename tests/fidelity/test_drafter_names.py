"""Drafter layers are named as vLLM names them (issue 29 item 4): an EAGLE / EAGLE-3 / DFlash
head's layers after the target's (``model.layers.<N + i>.self_attn.attn``), an MTP module's as its
module does (``deepseek_mtp.py``: ``model.layers.<N + i>``, with the indexer's
``self_attn.indexer.k_cache``; ``qwen3_5_mtp.py``: ``mtp.layers.<i>``), a ``draft_model``'s under
``draft_model.``. The expectation is vLLM 0.28.0's own: the names of the layers in its KV cache
groups, recorded by ``record_drafter_names.py`` into ``data/drafter_layer_names.json``.
"""

from __future__ import annotations

import json
import sys
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).resolve().parent))

import drafter_names_cases as N
import e2e_harness as H

pytestmark = pytest.mark.fidelity


def _names(case: H.Case) -> list[str]:
    """Every layer name of dryboot's plan of ``case`` (its KV cache groups')."""
    from click.testing import CliRunner  # at call: as e2e_harness.run_dryboot, after conftest's sys.path

    from dryboot.cli import cli  # at call: as e2e_harness.run_dryboot

    res = CliRunner().invoke(cli, case.dryboot_argv(), catch_exceptions=False)
    assert res.exit_code == 0, res.output
    doc = json.loads(res.output)
    return [n for g in doc["grouping"]["groups"] for n in g["layer_names"]]


def test_every_case_is_recorded() -> None:
    assert sorted(N.recorded()) == sorted(N.all_ids())


@pytest.mark.parametrize("case_id", [i for i in N.all_ids() if i != "eagle-as-target#0"])
def test_drafter_layers_are_named_as_vllm_names_them(case_id: str) -> None:
    vllm = N.recorded()[case_id]["vllm"]
    assert vllm["ok"], vllm
    case = N.case(case_id)
    with_drafter = _names(case)
    at = case.argv.index("--speculative-config")
    without = set(_names(H.Case(id=case.id, family=case.family, model=case.model, argv=case.argv[:at])))
    drafter = [n for n in with_drafter if n not in without]
    assert drafter, case_id
    assert len(with_drafter) == len(vllm["layer_names"])
    assert set(drafter) <= set(vllm["layer_names"]), sorted(set(drafter) - set(vllm["layer_names"]))


def test_a_draft_head_as_the_target_is_refused_by_both() -> None:
    vllm = N.recorded()["eagle-as-target#0"]["vllm"]
    assert not vllm["ok"] and "draft_model_config" in vllm["error"]
    d = H.run_dryboot(N.case("eagle-as-target#0"))
    assert d["refused"] and "speculative-decoding draft model" in d["error"], d

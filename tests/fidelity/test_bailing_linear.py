"""Bailing-V2.5's linear-attention state and MTP module against vLLM's recorded engine start
(``record_bailing_linear.py``, ``data/bailing-linear/``): the state follows ``--mamba-cache-dtype``,
``--mamba-cache-mode all`` falls back to ``align``, the MTP module (``--speculative-config`` method
``mtp``) adds one MLA layer per ``num_nextn_predict_layers`` numbered after the target's
(``model.layers.<N + i>.self_attn.attn``), TP with PP. Needs no vLLM."""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import Any

import pytest

sys.path.insert(0, str(Path(__file__).resolve().parent))

import bailing_linear_cases as B
import e2e_harness as H

pytestmark = pytest.mark.fidelity


def _recorded(version: str) -> dict[str, Any]:
    return dict(json.loads(B.record_path(version).read_text())["cases"])


def _case(cid: str) -> H.Case:
    name, argv = B.CASES[cid]
    model = H._write_config(H.default_workdir(), f"bailing-linear-{name}", B.config(name))
    return H.Case(id=cid, family="bailing-linear", model=model, argv=argv)


CASES = [(v, cid) for v in B.RELEASES for cid in B.CASES]


@pytest.mark.parametrize("version", B.RELEASES)
def test_every_case_is_recorded(version: str) -> None:
    rec = _recorded(version)
    assert set(rec) == set(B.CASES)
    for cid, (name, argv) in B.CASES.items():
        assert rec[cid]["config"] == name and rec[cid]["argv"] == argv, cid


@pytest.mark.parametrize(("version", "cid"), CASES, ids=[f"{c}@{v}" for v, c in CASES])
def test_dryboot_matches_the_release(version: str, cid: str) -> None:
    vllm = _recorded(version)[cid]["vllm"]
    got = H.run_dryboot(_case(cid), version)
    assert H.compare(vllm, got)["agree"], (version, cid, vllm, got)


def test_mtp_layers_are_the_drafters() -> None:
    """The MTP case's groups hold the target's two MLA layers' and the drafter's: one more layer
    a group than without it (recorded on 0.28.0: group size 2)."""
    rec = _recorded("0.28.0")
    assert [g[3] for g in rec["mtp-1"]["vllm"]["groups"]] == [2, 2, 2]

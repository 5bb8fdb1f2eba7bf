"""Mellum's tiny config under TP 2 x PP 3, whose first stage holds layer 0 only (a dense MLP):
vLLM 0.31.0's own class (``mellum.py``) finds no MoE layer there and refuses it; the Transformers
backend of 0.32.0 / 0.33.0 fuses the expert blocks each stage holds and needs none, so the engine
starts. dryboot's plan against each release's engine start (``record_mellum_pp3.py``,
``data/pipeline/mellum-tp2-pp3.json``); the weights of each stage: ``test_weights_backend.py``."""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import Any

import pytest

sys.path.insert(0, str(Path(__file__).resolve().parent))

import e2e_harness as H
from record_mellum_pp3 import ARGV, PATH, case

pytestmark = pytest.mark.fidelity

DOC: dict[str, Any] = json.loads(PATH.read_text())


def test_recorded() -> None:
    assert DOC["argv"] == ARGV
    assert {v: row["ok"] for v, row in DOC["cases"].items()} == {"0.31.0": False, "0.32.0": True, "0.33.0": True}


@pytest.mark.parametrize("version", sorted(DOC["cases"]))
def test_plan_matches_vllm(version: str) -> None:
    vllm = DOC["cases"][version]
    got = H.run_dryboot(case(), version)
    assert H.compare(vllm, got)["agree"], (H._answer(vllm, vllm=True), H._answer(got, vllm=False))
    if not vllm["ok"]:
        assert "no MoE layer" in got["error"]

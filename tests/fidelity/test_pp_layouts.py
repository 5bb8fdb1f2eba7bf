"""dryboot against vLLM's engine start on pipeline stages whose attention backends declare different
KV cache layouts (``pp_layout_cases.py``; recorded by ``record_pp_layouts.py``). From 0.29.0 the engine
core asserts every stage's worker reports the same layouts: a stage of Gated DeltaNet layers only
(nothing declared: the default list) beside one whose FlashInfer on SM 10.x or FlexAttention declares
its own is refused; 0.27.1 / 0.28.0 resolve no layout and serve it. Nothing here needs vLLM."""

from __future__ import annotations

import json
import sys
import tempfile
from pathlib import Path
from typing import Any

import pytest

sys.path.insert(0, str(Path(__file__).resolve().parent))

import e2e_harness as H
import pp_layout_cases as C

pytestmark = pytest.mark.fidelity

_MODEL = H._write_config(Path(tempfile.mkdtemp(prefix="pp-layouts-")), "qwen3_5-tiny", json.loads(C.CONFIG.read_text()))


def _recorded(version: str) -> dict[str, dict[str, Any]]:
    doc: dict[str, Any] = json.loads(C.record_path(version).read_text())
    assert doc["vllm"] == version
    cases: dict[str, dict[str, Any]] = doc["cases"]
    return cases


def test_every_case_is_recorded() -> None:
    for version in C.RELEASES:
        rec = _recorded(version)
        assert list(rec) == list(C.CASES)
        refused = {cid for cid, r in rec.items() if not r["ok"]} - {"h200-empty-stage"}
        assert not rec["h200-empty-stage"]["ok"], version  # no release serves a stage without a layer
        if version in ("0.27.1", "0.28.0"):
            assert not refused, version
        else:
            assert refused == {"b200-flashinfer", "h200-flex", "b200-flashinfer-even"}, version
            assert all("Workers disagree on supported KV cache layouts" in rec[c]["error"] for c in refused)


#: cases vLLM serves and dryboot refuses by name, and what it names (none at present: from 0.29.0 FlashAttention
#: on SM 10.x serves the head-256 stand-in with FA4's dedicated kernel, whose 128-token pages make vLLM's block
#: 384 tokens; dryboot said 288 without warning before it modelled that, then refused it by name)
REFUSED_BY_NAME: dict[tuple[str, str], str] = {}


@pytest.mark.parametrize(("version", "cid"), [(v, c) for v in C.RELEASES for c in C.CASES])
def test_dryboot_agrees(version: str, cid: str) -> None:
    argv, gpu, env = C.CASES[cid]
    case = H.Case(cid, "pp-layouts", _MODEL, [*argv, *(["--gpu", gpu] if gpu else [])], env=env)
    got = H.run_dryboot(case, version)
    if (version, cid) in REFUSED_BY_NAME:
        assert got.get("refused") and REFUSED_BY_NAME[(version, cid)] in str(got.get("error")), got
        return
    verdict = H.compare(_recorded(version)[cid], got)
    assert verdict["agree"], f"{case.command(version)}\n{verdict['diffs']}"

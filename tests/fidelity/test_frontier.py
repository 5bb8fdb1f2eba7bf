"""dryboot against vLLM's recorded engine start on the frontier cases of issue 37
(``frontier_cases.py``): Gemma-4 (published configs and the tiny one) on nine GPUs, with its
multimodal inputs on (a stand-in tokenizer in the model directory, as every real checkpoint has
one) and off, and 0.32+'s auto-fit line. ``data/frontier/vllm-X.json`` is written by
``record_frontier.py`` from ``tests/data/gpus/run_oracle_as.py``; nothing in it comes from dryboot.
Every case must agree (block size, groups, blocks, tokens, concurrency, max model length, or the
refusal), and an "Auto-fit" line vLLM logged must be dryboot's to the character.
"""

from __future__ import annotations

import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from dryboot.vllm.versions import VersionRules

sys.path.insert(0, str(Path(__file__).resolve().parent))

import e2e_harness as H
import frontier_cases as F

pytestmark = pytest.mark.fidelity


def dryboot_answer(case: dict[str, Any], version: str) -> dict[str, Any]:
    c = H.Case(
        id=case["id"],
        family="frontier",
        model=F.materialize(case),
        argv=[*F.argv(case), "--gpu", case["gpu"]],
        source=case["model"],
    )
    return H.run_dryboot(c, version)


def _fails_loading_first(v: dict[str, Any], d: dict[str, Any]) -> bool:
    """vLLM's recorded refusal at the KV check (``stage`` plan: one request of max_model_len does not
    fit the pinned budget) where dryboot predicts the weights do not fit this GPU at all: the oracle
    builds the model on the meta device and loads nothing, while on the GPU vLLM fails loading first
    (nvidia's Gemma-4-31B-IT NVFP4, 31.14 GiB, on a 24 GB card), so dryboot prints no KV figure."""
    return (
        not v.get("ok")
        and v.get("stage") == "plan"
        and not d.get("refused")
        and d.get("tokens") is None
        and "load_model" in str(d.get("log_note"))
    )


def problems(version: str, cases: list[dict[str, Any]], rec: dict[str, dict[str, Any]]) -> tuple[int, list[str]]:
    """(cases recorded, one line per case of ``cases`` where dryboot and vLLM's recorded answer
    ``rec`` disagree, or vLLM logged an "Auto-fit" line dryboot does not print)."""
    out = []
    for case in cases:
        if case["id"] not in rec:
            continue
        v = rec[case["id"]]["vllm"]
        d = dryboot_answer(case, version)
        verdict = H.compare(v, d)
        if not verdict["agree"] and _fails_loading_first(v, d):
            continue
        if not verdict["agree"]:
            out.append(
                f"{case['id']} {case['argv']}: vLLM {H._answer(v, vllm=True)}\n    dryboot {H._answer(d, vllm=False)}"
            )
            continue
        fits = [ln for ln in v.get("kv_log") or [] if ln.startswith("Auto-fit")]
        if fits and not d.get("log") and "load_model" in str(d.get("log_note")):
            # the oracle builds the model on the meta device and loads no weights; on this GPU
            # vLLM fails loading them (Gemma-4 26B's 48.47 GiB in bf16 on a 24 GB card, say), so
            # it never reaches the auto-fit line dryboot then rightly does not print
            continue
        missing = [ln for ln in fits if ln not in (d.get("log") or [])]
        if missing:
            out.append(f"{case['id']}: vLLM logs {missing[0]!r}; dryboot: {d.get('log')}")
    return sum(1 for c in cases if c["id"] in rec), out


@pytest.mark.parametrize("version", F.VERSIONS)
def test_frontier_cases_agree(version: str) -> None:
    n, wrong = problems(version, F.cases(), F.recorded(version))
    if n == 0:
        pytest.skip(f"no frontier recording for {version}")
    assert not wrong, f"{len(wrong)}/{n} disagree on {version}:\n" + "\n".join(wrong)


def test_frontier_recording_covers_every_gpu() -> None:
    """Every release (0.27.1-0.33.0) recorded on the nine GPUs (SM 8.0, 8.6, 8.9, 9.0, 10.0, 12.0),
    and the A100 case of issue 37 holds vLLM's 85,131 tokens (multimodal inputs on)."""
    assert F.VERSIONS == F.RELEASES
    for version in F.VERSIONS:
        rec = F.recorded(version)
        assert {cid.split("|")[0] for cid in rec} >= set(F.GPUS), version
    a100 = F.recorded("0.28.0")["A100-80GB|google--gemma-4-26B-A4B#0"]["vllm"]
    assert a100["tokens"] == 85131


def test_mm_prefix_composite_switch_is_needed(flip_rules: Callable[..., VersionRules]) -> None:
    """Flipping ``mm_prefix_composites`` off for 0.33.0 loses vLLM's TRITON_FLASHINFER answer
    for Gemma-4 on a B200 (64-token blocks)."""
    rec = F.recorded("0.33.0")
    cid = "B200|Gemma4ForCausalLM#0"
    case = next(c for c in F.cases() if c["id"] == cid)
    assert _agrees(rec[cid]["vllm"], dryboot_answer(case, "0.33.0"))
    flip_rules("0.33.0", mm_prefix_composites=False)
    assert not _agrees(rec[cid]["vllm"], dryboot_answer(case, "0.33.0"))


def test_limit_to_draft_switch_is_needed(flip_rules: Callable[..., VersionRules]) -> None:
    """Flipping ``limit_max_model_len_to_draft`` off for 0.33.0 loses vLLM's 4,096-token
    ``max_model_len`` for Kimi-K2 with TorchSpec's Kimi-K2.5 MLA head (a YaRN drafter whose
    config class defaults to 4,096 positions; 65,536 asked)."""
    rec = F.recorded("0.33.0")
    cid = "H200|moonshotai--Kimi-K2-Instruct+torchspec--kimi-k25-eagle3-mla#1"
    case = next(c for c in F.cases() if c["id"] == cid)
    assert rec[cid]["vllm"]["max_model_len"] == 4096
    assert _agrees(rec[cid]["vllm"], dryboot_answer(case, "0.33.0"))
    flip_rules("0.33.0", limit_max_model_len_to_draft=False)
    assert not _agrees(rec[cid]["vllm"], dryboot_answer(case, "0.33.0"))


def _agrees(v: dict[str, Any], d: dict[str, Any]) -> bool:
    return bool(H.compare(v, d)["agree"])

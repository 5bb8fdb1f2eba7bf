"""The Transformers modeling backend of vLLM 0.29.0 (``model_executor/models/transformers/``) against
that release's own figures: parameter, buffer and allocated bytes of each pipeline stage's rank 0.
Needs no vLLM.

0.29.0's backend builds 0.28.0's layout (switch ``transformers_backend_vllm_attention`` off:
transformers' attention modules with vLLM's linear layers swapped in, ``q_proj`` / ``k_proj`` /
``v_proj`` three allocations, no ``Attention`` scale buffers, transformers' float32 rotary buffers):
``compose.backend_layout``. Beside the architectures 0.28.0 already serves through it (OLMo, OLMo-2,
GPT-BigCode, SmolLM3, StarCoder2, VaultGemma: their families' layouts as on 0.28.0), 0.29.0 moves
FlexOlmo, HunYuan dense / MoE and OLMo-3 onto it: the embedding on the first stage only and the final
norm and head on the last (their own classes build them on every stage), and HunYuan V1's attention
whole on every TP rank (transformers' HunYuan classes give it no TP plan: ``backend_attention_whole``).

``recorded-0.29.0-backend.json``: ``record_weights.py --tiny`` of those ten architectures (every flag
set: TP 1/2/4/8, EP at TP 2 / 8 for the MoE ones, TP 2 x PP 3) and, with ``RECORD_WEIGHTS_CONFIGS``,
two published configs (``data/weights/backend-configs/``: OLMo-2-1124-13B, Olmo-3.1-32B-Instruct),
in 0.29.0's boot environment. A case vLLM builds matches; a case vLLM refuses is refused. Emu3 and
VibeVoice-ASR on 0.29.0: ``test_weights_emu3.py``, ``test_weights_vibevoice_asr.py``."""

from __future__ import annotations

import dataclasses
import json
from typing import Any

import pytest
from weights_records import DATA, assert_stages, int_flag

import dryboot.vllm.model_executor.models  # noqa: F401  (registers the families of models/)
from dryboot.vllm import versions
from dryboot.vllm.model_executor.model_loader.weights import Parallel, rank_weights

NAME = "recorded-0.29.0-backend.json"
DOC = json.loads((DATA / NAME).read_text())
RECORDED: dict[str, dict[str, Any]] = DOC["cases"]
CONFIGS = DATA / "backend-configs"
#: the architectures 0.29.0 moves onto the backend (0.28.0 serves each with a class of its own)
MOVED = ("FlexOlmoForCausalLM", "HunYuanDenseV1ForCausalLM", "HunYuanMoEV1ForCausalLM", "Olmo3ForCausalLM")


def _config(row: dict[str, Any]) -> dict[str, Any]:
    name = row["config"]
    path = (
        DATA.parent / "architectures" / f"{name[6:]}.json"
        if name.startswith("arch--")
        else CONFIGS / name / "config.json"
    )
    config: dict[str, Any] = json.loads(path.read_text())
    return config


def _rank(row: dict[str, Any], stage: int, version: str = "0.29.0") -> Any:
    argv = row["argv"]
    par = Parallel(
        tp=int_flag(argv, "--tensor-parallel-size"),
        pp=int_flag(argv, "--pipeline-parallel-size"),
        pp_rank=stage,
        expert_parallel="--enable-expert-parallel" in argv,
        vllm_version=version,
    )
    return rank_weights(_config(row), par, max_num_batched_tokens=row.get("max_num_batched_tokens", 8192))


def test_recorded() -> None:
    assert DOC["vllm"] == "0.29.0"
    configs = {row["config"] for row in RECORDED.values()}
    assert {c[6:] for c in configs if c.startswith("arch--")} == {
        "OlmoForCausalLM",
        "Olmo2ForCausalLM",
        "GPTBigCodeForCausalLM",
        "SmolLM3ForCausalLM",
        "Starcoder2ForCausalLM",
        "VaultGemmaForCausalLM",
        *MOVED,
    }
    assert {c for c in configs if not c.startswith("arch--")} == {p.name for p in CONFIGS.iterdir() if p.is_dir()}
    assert len(RECORDED) == 64 and sum(1 for row in RECORDED.values() if row["ok"]) == 63


@pytest.mark.parametrize("cid", sorted(RECORDED))
def test_matches_vllm(cid: str) -> None:
    row = RECORDED[cid]
    assert_stages(row, lambda stage: _rank(row, stage))


@pytest.mark.parametrize("arch", MOVED)
def test_moved_architectures_differ_from_their_own_class(arch: str) -> None:
    """On 0.28.0 (its own class) the same flags build other figures than 0.29.0's backend: the
    walk follows the release's registry."""
    rows = [r for r in RECORDED.values() if r["config"] == f"arch--{arch}" and r["ok"]]
    assert any(_rank(r, 0, "0.28.0").allocated_bytes != r["allocated_bytes"] for r in rows), arch


@pytest.mark.parametrize("field", ["transformers_backend_vllm_attention"])
def test_release_switch_is_needed(field: str, monkeypatch: pytest.MonkeyPatch) -> None:
    """0.29.0 with 0.30's backend (vLLM's attention, fused q/k/v) breaks recorded cases."""
    rules = versions.rules_for("0.29.0")
    monkeypatch.setitem(versions.VERSIONS, "0.29.0", dataclasses.replace(rules, **{field: True}))
    versions.rules_for.cache_clear()
    try:
        broken = [
            cid
            for cid, row in RECORDED.items()
            if row["ok"] and _rank(row, 0).allocated_bytes != row["allocated_bytes"]
        ]
        assert broken
    finally:
        versions.rules_for.cache_clear()

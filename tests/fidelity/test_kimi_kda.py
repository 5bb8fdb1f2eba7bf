"""Kimi Delta Attention's state against vLLM's recorded engine start (``record_kimi_kda.py``,
``data/kimi-kda/``): the recurrent state's dtype under ``--mamba-ssm-cache-dtype`` (float32 whatever the
flag on 0.28.0; from 0.30.0 the flag sizes the hybrid block, which Kimi-Linear's float32 layer then
outgrows under bfloat16 at TP 1 here (padded to it where it fits: ``test_releases.py``'s ``kimil-*ssmbf16-*``),
and values other than auto / float32 / bfloat16 are refused), and on 0.33.0
Kimi-K3's full-rank-gate KDA layers (``KimiK3DeltaAttention``), whose MambaSpec holds a prefill
checkpoint block where FlashKDA is their prefill backend (SM 9.0, bfloat16, head_dim 128, a gate
bound): one more state block per request in ``align`` mode. Needs no vLLM."""

from __future__ import annotations

import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from dryboot.vllm.versions import VersionRules

sys.path.insert(0, str(Path(__file__).resolve().parent))

import json

import e2e_harness as H
import kimi_kda_cases as K

from dryboot.vllm import versions
from dryboot.vllm.config.hf import GatedDeltaNet
from dryboot.vllm.models import kimi_linear

pytestmark = pytest.mark.fidelity

#: vLLM's words for each refusal recorded here -> words dryboot's refusal holds
REFUSAL_WORDS = {
    "AssertionError": "AssertionError",
    "KDA recurrent state supports only auto, float32, and bfloat16": "supports only auto, float32 and bfloat16",
}


def _recorded(version: str) -> dict[str, Any]:
    return dict(json.loads(K.record_path(version).read_text())["cases"])


def _case(cid: str) -> H.Case:
    name, argv = K.CASES[cid]
    model = H._write_config(H.default_workdir(), f"kimi-kda-{name}", K.config(name))
    return H.Case(id=cid, family="kimi-kda", model=model, argv=argv)


CASES = [(v, cid) for v in K.RELEASES for cid in K.cases_for(v)]


@pytest.mark.parametrize("version", K.RELEASES)
def test_every_case_is_recorded(version: str) -> None:
    rec = _recorded(version)
    assert set(rec) == set(K.cases_for(version))
    for cid, (name, argv) in K.cases_for(version).items():
        assert rec[cid]["config"] == name and rec[cid]["argv"] == argv, cid


def _agrees(version: str, cid: str) -> bool:
    vllm = _recorded(version)[cid]["vllm"]
    got = H.run_dryboot(_case(cid), version)
    if vllm.get("ok"):
        return bool(H.compare(vllm, got)["agree"])
    words = next(w for phrase, w in REFUSAL_WORDS.items() if phrase in vllm["error"])
    return bool(got.get("refused")) and words in str(got.get("error"))


@pytest.mark.parametrize(("version", "cid"), CASES, ids=[f"{c}@{v}" for v, c in CASES])
def test_dryboot_matches_the_release(version: str, cid: str) -> None:
    assert _agrees(version, cid), (version, cid, _recorded(version)[cid]["vllm"])


def test_flashkda_checkpoint_block_is_needed(monkeypatch: pytest.MonkeyPatch) -> None:
    """Without the prefill checkpoint block Kimi-K3's default case disagrees (13 blocks a request
    at 2048 tokens: 4 of the MLA layer, 3 per KDA layer in align mode)."""
    assert _recorded("0.33.0")["k3-default"]["vllm"]["concurrency"] == pytest.approx(1695 / 13)
    monkeypatch.setattr(kimi_linear, "kda_prefill_checkpoint_blocks", lambda *a: 0)
    assert not _agrees("0.33.0", "k3-default")


@pytest.mark.parametrize(
    ("version", "cid", "switch"),
    [("0.33.0", "k3-default", "kda_full_rank_gate"), ("0.30.0", "kl-ssm-bf16", "kda_ssm_dtype_flag")],
)
def test_switch_is_needed(version: str, cid: str, switch: str, flip_rules: Callable[..., VersionRules]) -> None:
    rules = versions.rules_for(version)
    flip_rules(version, **{switch: not getattr(rules, switch)})
    assert not _agrees(version, cid)


def _kda(full_rank: bool = True, head_dim: int = 128, bound: float | None = -5.0) -> GatedDeltaNet:
    return GatedDeltaNet(8, 8, head_dim, head_dim, 4, full_rank, bound)


@pytest.mark.parametrize(
    ("kda", "major", "model_dtype", "recurrent", "blocks"),
    [
        (_kda(), 9, "bfloat16", "float32", 1),
        (_kda(), 10, "bfloat16", "bfloat16", 1),
        (_kda(), 12, "bfloat16", "float32", 1),
        (_kda(), 8, "bfloat16", "float32", 0),  # SM 8.x: Triton
        (_kda(), 9, "float16", "float32", 0),
        (_kda(head_dim=64), 9, "bfloat16", "float32", 0),
        (_kda(bound=None), 9, "bfloat16", "float32", 0),
        (_kda(full_rank=False), 9, "bfloat16", "float32", 0),  # Kimi-Linear's plain KDA layer
        (None, 9, "bfloat16", "float32", 0),
    ],
)
def test_prefill_checkpoint_blocks(
    kda: GatedDeltaNet | None, major: int, model_dtype: str, recurrent: str, blocks: int
) -> None:
    assert kimi_linear.kda_prefill_checkpoint_blocks(kda, major, model_dtype, recurrent) == blocks


@pytest.mark.parametrize(
    ("full_rank", "sizing", "layer"),
    [
        (False, "bfloat16", "float32"),  # KimiGatedDeltaNetAttention.get_state_dtype passes no SSM flag
        (False, "float32", "float32"),
        (True, "bfloat16", "bfloat16"),  # KimiK3DeltaAttention passes it
        (True, "float32", "float32"),
    ],
)
def test_layer_recurrent_dtype(full_rank: bool, sizing: str, layer: str) -> None:
    """The KDA layer's own state dtype beside the model class's (which sizes the hybrid block): the
    records ``kimil-*ssmbf16-*`` of ``test_releases.py`` (TP 4 / PP 2 served from 0.30.0, a padded float32
    page) pin the split."""
    assert kimi_linear.kda_layer_recurrent_dtype(_kda(full_rank=full_rank), sizing) == layer

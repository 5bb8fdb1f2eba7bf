"""The Transformers modeling backend of vLLM 0.29.0-0.33.0 (``model_executor/models/transformers/``)
against each release's own figures: parameter, buffer and allocated bytes of each pipeline stage's
rank 0, every flag set (the sweep, ``test_weights_sweep.py``, holds TP 1 only). Needs no vLLM.

0.29.0's backend builds 0.28.0's layout (switch ``transformers_backend_vllm_attention`` off:
transformers' attention modules with vLLM's linear layers swapped in, ``q_proj`` / ``k_proj`` /
``v_proj`` three allocations, no ``Attention`` scale buffers, transformers' float32 rotary buffers):
``compose.backend_layout``. Beside the architectures 0.28.0 already serves through it (OLMo, OLMo-2,
GPT-BigCode, SmolLM3, StarCoder2, VaultGemma: their families' layouts as on 0.28.0), 0.29.0 moves
FlexOlmo, HunYuan dense / MoE and OLMo-3 onto it (0.32.0 also Arcee, CWM, GPT-NeoX, GLM, Jais-2,
Mellum, Phi, Seed-OSS). On every release the backend builds the embedding on the first stage only
and the final norm and head on the last (those classes of their own build them on every stage). On
0.29.0 / 0.30.0 (switch ``backend_text_attention_whole``) an attention its transformers class gives no
TP plan (HunYuan V1's: ``Layout.backend_attention_whole``) stays whole on every TP rank, and 0.30.0
splits a fused ``qkv_proj``'s key / value rows over a TP above the KV heads (``Layout.kv_rows_split``);
0.31+ fuse every attention into a split ``QKVParallelLinear`` of the heads, KV heads replicated.

``recorded-<release>-backend.json``: ``record_weights.py --tiny`` of those architectures in the
release's boot environment (every flag set: TP 1/2/4/8, EP at TP 2 / 8 for the MoE ones, TP 2 x PP
3); on 0.29.0 all ten and, with ``RECORD_WEIGHTS_CONFIGS``, two published configs
(``data/weights/backend-configs/``: OLMo-2-1124-13B, Olmo-3.1-32B-Instruct). A case vLLM builds
matches; a case vLLM refuses is refused. Emu3 and VibeVoice-ASR on 0.29.0: ``test_weights_emu3.py``,
``test_weights_vibevoice_asr.py``."""

from __future__ import annotations

import json
from collections.abc import Callable
from typing import Any

import pytest
from weights_records import DATA, assert_stages, stage_parallel

import dryboot.vllm.model_executor.models  # noqa: F401  (registers the families of models/)
from dryboot.errors import InputError
from dryboot.vllm.model_executor.model_loader.weights import rank_weights
from dryboot.vllm.versions import VersionRules

RELEASES = ("0.29.0", "0.30.0", "0.31.0", "0.32.0", "0.33.0")
DOCS = {v: json.loads((DATA / f"recorded-{v}-backend.json").read_text()) for v in RELEASES}
RECORDED: dict[tuple[str, str], dict[str, Any]] = {
    (v, cid): row for v, doc in DOCS.items() for cid, row in doc["cases"].items()
}
CONFIGS = DATA / "backend-configs"
#: the architectures 0.29.0 moves onto the backend (0.28.0 serves each with a class of its own)
MOVED = ("FlexOlmoForCausalLM", "HunYuanDenseV1ForCausalLM", "HunYuanMoEV1ForCausalLM", "Olmo3ForCausalLM")
#: the architectures 0.28.0 already serves through it
SERVED = (
    "OlmoForCausalLM",
    "Olmo2ForCausalLM",
    "GPTBigCodeForCausalLM",
    "SmolLM3ForCausalLM",
    "Starcoder2ForCausalLM",
    "VaultGemmaForCausalLM",
)

#: Mellum's tiny config under TP 2 x PP 3: stage 0 holds layer 0 only, a dense MLP
MELLUM_PP = "arch--MellumForCausalLM --tensor-parallel-size 2 --pipeline-parallel-size 3"


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
    par = stage_parallel(argv, stage, version)
    return rank_weights(_config(row), par, max_num_batched_tokens=row.get("max_num_batched_tokens", 8192))


def test_recorded() -> None:
    assert {v: doc["vllm"] for v, doc in DOCS.items()} == {v: v for v in RELEASES}
    doc = DOCS["0.29.0"]["cases"]
    configs = {row["config"] for row in doc.values()}
    assert {c[6:] for c in configs if c.startswith("arch--")} == {*SERVED, *MOVED}
    assert {c for c in configs if not c.startswith("arch--")} == {p.name for p in CONFIGS.iterdir() if p.is_dir()}
    assert len(doc) == 64 and sum(1 for row in doc.values() if row["ok"]) == 63


@pytest.mark.parametrize(("version", "cid"), sorted(RECORDED))
def test_matches_vllm(version: str, cid: str) -> None:
    row = RECORDED[(version, cid)]
    assert_stages(row, lambda stage: _rank(row, stage, version))


@pytest.mark.parametrize("version", ["0.32.0", "0.33.0"])
def test_backend_builds_a_stage_without_moe_layers(version: str) -> None:
    """The backend's MoE mixin fuses the expert blocks it finds on the stage and needs none: a
    stage of Mellum's dense layer only builds (recorded), where Mellum's own class (0.28.0,
    ``recorded.json``) refuses it ("No MoE layer found")."""
    row = RECORDED[(version, MELLUM_PP)]
    assert row["ok"] and row["stages"][0][0] == _rank(row, 0, version).param_bytes
    with pytest.raises(InputError, match="No MoE layer"):
        _rank(row, 0, "0.28.0")


@pytest.mark.parametrize("arch", MOVED)
def test_moved_architectures_differ_from_their_own_class(arch: str) -> None:
    """On 0.28.0 (its own class) the same flags build other figures than 0.29.0's backend: the
    walk follows the release's registry."""
    rows = [r for (v, _), r in RECORDED.items() if v == "0.29.0" and r["config"] == f"arch--{arch}" and r["ok"]]
    assert any(_rank(r, 0, "0.28.0").allocated_bytes != r["allocated_bytes"] for r in rows), arch


@pytest.mark.parametrize(
    ("version", "field", "flipped"),
    [
        ("0.29.0", "transformers_backend_vllm_attention", True),
        ("0.30.0", "backend_text_attention_whole", False),
        ("0.31.0", "backend_text_attention_whole", True),
    ],
)
def test_release_switch_is_needed(
    version: str, field: str, flipped: bool, flip_rules: Callable[..., VersionRules]
) -> None:
    """Flipping a release switch of the backend's layout breaks recorded cases of that release."""
    flip_rules(version, **{field: flipped})
    broken = [cid for (v, cid), row in RECORDED.items() if v == version and row["ok"] and _changed(row, v)]
    assert broken


def _changed(row: dict[str, Any], version: str) -> bool:
    try:
        return bool(_rank(row, 0, version).allocated_bytes != row["allocated_bytes"])
    except InputError:
        return True

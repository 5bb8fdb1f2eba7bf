"""vLLM 0.33.0's Dots3-Note (``Dots3NoteForCausalLM``) is planned (``models/dots3_note.py``) and agrees
with vLLM's recorded engine start on its tiny configs (``record_dots3_note.py``, ``data/dots3-note/``):
a SlidingWindowMLA group of the sliding layers on TRITON_MLA, 576 + 64 latent values a token, beside
an MLAAttention group of the sparse layers' indexer caches and padded MLA rows on
DOTS3_NOTE_PADDED_MLA_SPARSE, packed by repeat pattern under the BLHNC layout; the pool's bytes per
block are the widest group rounded up to lcm(one padded row, the indexer's 64-token page above 64);
an fp8 cache refused by the sparse backend, in its words."""

from __future__ import annotations

import json
import math
import sys
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).resolve().parent))

import dots3_note_cases as C
import e2e_harness as H

from dryboot.vllm.models.refusals import REASONS
from dryboot.vllm.models.registry import LATER_ARCHITECTURES

pytestmark = pytest.mark.fidelity

#: the cases vLLM refuses, and the words of its refusal
REFUSED = {
    "note-fp8": "FlashAttnMLASparseImpl currently supports only FP16/BF16 KV cache",
    "note-fp8-e4m3": "FlashAttnMLASparseImpl currently supports only FP16/BF16 KV cache",
    "note-block32": "No valid attention backend found",
    "note-small": "To serve at least one request with the model's max seq len (8192)",
    "note-mtp": "aten::equal: attempted to run this operator with Meta tensors",
    "note-a100": "No valid attention backend found",
    "note-rtx5090": "FlashAttnMLASparseImpl currently supports only FP16/BF16 KV cache",
    "note-swa4-tp8": "AssertionError",
    "note-8-hidden-pp2": "Pipeline parallelism is not supported for this model",
}


def test_every_case_is_recorded() -> None:
    rec = C.recorded()
    assert list(rec) == list(C.CASES)
    assert sorted(c for c, r in rec.items() if not r["vllm"]["ok"]) == sorted(REFUSED)
    for cid, words in REFUSED.items():
        assert words in rec[cid]["vllm"]["error"], cid


@pytest.mark.parametrize("cid", ["note", "note-tp2", "note-len2048", "note-b200"])
def test_sliding_layers_group_apart_from_the_padded_sparse_layers(cid: str) -> None:
    v = C.recorded()[cid]["vllm"]
    config = C.config(C.CASES[cid][0])
    width = config["swa_kv_lora_rank"] + config["swa_qk_rope_head_dim"]
    assert v["groups"][0] == ["SlidingWindowMLA", 64, 64 * width * 2, 2]
    assert v["groups"][1][0] == "MLAAttention" and len(v["group_layers"][1]) == 4
    assert any("TRITON_MLA/DEEPSEEK_V32_INDEXER/DOTS3_NOTE_PADDED_MLA_SPARSE" in line for line in v["kv_log"])


def test_without_sliding_layers_one_group_of_indexers_and_padded_rows() -> None:
    v = C.recorded()["note-full"]["vllm"]
    assert v["groups"] == [["MLAAttention", 64, 8448, 8]]
    assert sum("indexer.k_cache" in n for n in v["group_layers"][0]) == 4


@pytest.mark.parametrize(("cid", "block", "stride"), [("note-full", 64, 362240), ("note-block128", 128, 380160)])
def test_pool_block_is_the_widest_group_rounded_to_a_row_and_the_indexer_page(
    cid: str, block: int, stride: int
) -> None:
    """4 x (indexer 132 B + padded row 1,280 B) a token at 64 tokens: 361,472 B, rounded up to a
    1,280-byte row; the MLA group at 128 tokens, rounded to lcm(1,280, the indexer's 64-token
    page 8,448) = 42,240: neither is the naive sum of pages."""
    v = C.recorded()[cid]["vllm"]
    pages = 2 * block * (132 + 1280) if cid != "note-full" else 4 * block * (132 + 1280)
    align = 1280 if block == 64 else math.lcm(1280, 64 * 132)
    assert -(-pages // align) * align == stride
    assert v["num_blocks"] == (4 << 30) // stride


def _model_dir(tmp_path: Path, cid: str, name: str) -> str:
    d = Path(H._write_config(tmp_path, cid, C.config(name)))
    (d / "added_tokens.json").write_text(json.dumps(C.ADDED_TOKENS))
    return str(d)


#: vLLM's engine start on the meta device fails building the MTP drafter (its V2 runner compares the
#: drafter's head with the target's: aten::equal on meta tensors); dryboot refuses the MTP module by name
NOT_VERIFIABLE = {"note-mtp": "the MTP module of Dots3NoteForCausalLM (1 layers) is not modelled"}


@pytest.mark.parametrize("cid", [c for c in C.CASES if c not in NOT_VERIFIABLE])
def test_dryboot_agrees_with_the_engine_start(tmp_path: Path, cid: str) -> None:
    name, argv, gpu = C.CASES[cid]
    case = H.Case(cid, "dots3-note", _model_dir(tmp_path, cid, name), [*argv, *(["--gpu", gpu] if gpu else [])])
    d = H.run_dryboot(case, C.VERSION)
    verdict = H.compare(C.recorded()[cid]["vllm"], d)
    assert verdict["agree"], (verdict["diffs"], d.get("error"))


def test_planned_on_0_33_only_and_no_longer_refused() -> None:
    assert "Dots3NoteForCausalLM" not in REASONS
    assert LATER_ARCHITECTURES["Dots3NoteForCausalLM"] == ("0.33.0",)


def test_missing_image_padding_token_is_refused_in_vllms_words(tmp_path: Path) -> None:
    case = H.Case("no-tokens", "dots3-note", H._write_config(tmp_path, "no-tokens", C.config("note")), C.BASE)
    d = H.run_dryboot(case, C.VERSION)
    assert d.get("refused") and "NOTE tokenizer is missing the image padding token" in str(d["error"])


@pytest.mark.parametrize("cid", sorted(NOT_VERIFIABLE))
def test_mtp_on_the_target_is_refused_by_name(tmp_path: Path, cid: str) -> None:
    name, argv, _ = C.CASES[cid]
    d = H.run_dryboot(H.Case(cid, "dots3-note", _model_dir(tmp_path, cid, name), argv), C.VERSION)
    assert d.get("refused") and NOT_VERIFIABLE[cid] in str(d["error"])

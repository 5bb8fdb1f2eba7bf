"""vLLM 0.33.0's Dots3-Note (``Dots3NoteForCausalLM``) is refused by name (``refusals.DOTS3_NOTE``), and
vLLM's recorded engine start on its tiny configs (``record_dots3_note.py``, ``data/dots3-note/``) shows
what the reason names: a SlidingWindowMLA group of the sliding layers on TRITON_MLA, 576 + 64 latent
values a token, beside an MLAAttention group of the sparse layers' indexer caches and padded MLA rows
on DOTS3_NOTE_PADDED_MLA_SPARSE; an fp8 cache refused by the sparse backend."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).resolve().parent))

import dots3_note_cases as C
import e2e_harness as H

from dryboot.vllm.models.refusals import DOTS3_NOTE

pytestmark = pytest.mark.fidelity


def test_every_case_is_recorded() -> None:
    rec = C.recorded()
    assert sorted(rec) == sorted(C.CASES)
    assert [c for c, r in rec.items() if not r["vllm"]["ok"]] == ["note-fp8"]
    assert "FlashAttnMLASparseImpl currently supports only FP16/BF16 KV cache" in rec["note-fp8"]["vllm"]["error"]


@pytest.mark.parametrize("cid", ["note", "note-tp2", "note-len2048"])
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


@pytest.mark.parametrize("cid", sorted(C.CASES))
def test_dryboot_refuses_by_name(tmp_path: Path, cid: str) -> None:
    name, argv = C.CASES[cid]
    case = H.Case(cid, "dots3-note", H._write_config(tmp_path, cid, C.config(name)), argv)
    d = H.run_dryboot(case, C.VERSION)
    assert d.get("refused") and DOTS3_NOTE in str(d["error"]), d

"""The drafters' own weights (``models/llama_eagle3.py``) against vLLM 0.28.0 on the meta device
(``tests/fidelity/data/weights/drafters/recorded.json``, written by
``tests/fidelity/record_drafter_weights.py``): the shared bound against vLLM's drafter after its
load-time sharing, the own bound against the drafter as ``get_model`` built it, both in 512-byte
allocator blocks, per TP."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from dryboot.errors import InputError
from dryboot.vllm.model_executor.model_loader.weights import Parallel
from dryboot.vllm.model_executor.models.llama_eagle3 import drafter_weights

HERE = Path(__file__).resolve().parent
RECORDED = json.loads((HERE / "fidelity/data/weights/drafters/recorded.json").read_text())
CASES = sorted(RECORDED["cases"].items())


def _configs(row: dict) -> tuple[dict, dict]:
    target = json.loads((HERE / "fidelity/data/weights/configs" / row["target"] / "config.json").read_text())
    draft = json.loads((HERE / "data/configs/public" / row["drafter"] / "config.json").read_text())
    return target, draft


@pytest.mark.parametrize(("cid", "row"), CASES, ids=[c for c, _ in CASES])
def test_config_alone_bounds_are_vllms(cid: str, row: dict) -> None:
    assert row["ok"], row.get("error")
    target, draft = _configs(row)
    got = drafter_weights(target, draft, row["method"], Parallel(tp=row["tp"]), max_model_len=4096)
    assert got.low.allocated_bytes == row["shared_allocated_bytes"]
    assert got.high.allocated_bytes == row["own_allocated_bytes"]
    assert not got.decided


@pytest.mark.parametrize(("cid", "row"), CASES[:3], ids=[c for c, _ in CASES[:3]])
def test_checkpoint_names_decide(cid: str, row: dict) -> None:
    target, draft = _configs(row)
    par = Parallel(tp=row["tp"])
    # a SpecForge EAGLE-3 checkpoint: its own LM head over the draft vocabulary, no embedding
    names = ["midlayer.self_attn.q_proj.weight", "fc.weight", "norm.weight", "lm_head.weight", "d2t", "t2d"]
    got = drafter_weights(target, draft, "eagle3", par, names, max_model_len=4096)
    assert got.decided
    head = row["tensors"]["lm_head.weight"][2]
    assert got.low.allocated_bytes == row["shared_allocated_bytes"] + -(-head // 512) * 512
    # no lm_head, no embedding: both shared, as vLLM's process_eagle_weight leaves them
    shared = drafter_weights(target, draft, "eagle3", par, names[:3], max_model_len=4096)
    assert shared.decided and shared.low.allocated_bytes == row["shared_allocated_bytes"]
    # an own embedding of the target's shape: vLLM compares values, so it stays open
    both = drafter_weights(target, draft, "eagle3", par, [*names, "embed_tokens.weight"], max_model_len=4096)
    assert not both.decided


def test_other_drafters_refused_by_name() -> None:
    target, draft = _configs(CASES[0][1])
    with pytest.raises(InputError, match="not modelled"):
        drafter_weights(
            target, {**draft, "architectures": ["DFlashDraftModel"]}, "dflash", Parallel(), max_model_len=4096
        )
    with pytest.raises(InputError, match="norm_before_fc"):
        drafter_weights(target, {**draft, "norm_before_fc": True}, "eagle3", Parallel(), max_model_len=4096)

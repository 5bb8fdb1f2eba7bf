"""HunYuan-VL's weights where vLLM serves it through the Transformers modeling backend (0.29.0-0.33.0:
``TransformersMultiModalForCausalLM`` over transformers' ``HunYuanVLForConditionalGeneration``,
``model_executor/models/hunyuan_vision.py``) against vLLM's own figures: parameter, buffer and
allocated bytes of each pipeline stage. Needs no vLLM.

Recorded by ``record_weights.py --tiny HunYuanVLForConditionalGeneration`` in each release's boot
environment (``RECORD_WEIGHTS_OUT``), every flag set (TP 1/2/4/8, TP 2 x PP 3, ``--language-model-only``
at TP 1/2): 0.29.0 into ``recorded-0.29.0-hunyuan-vl.json``, 0.30.0-0.33.0 into
``recorded-<release>-wrappers.json`` (the TP 1 cases also in ``recorded-<release>-sweep.json``);
with ``RECORD_WEIGHTS_OVERLAY`` ``{"tie_word_embeddings": false}`` (``RECORD_WEIGHTS_FLAGS="--tensor-parallel-size
1"``) on 0.29.0 / 0.31.0 / 0.33.0 into ``recorded-<release>-hunyuan-vl-untied.json`` (transformers'
config class ties the head whatever the file says), and ``{"head_dim": null}`` on 0.33.0 into
``recorded-0.33.0-hunyuan-vl-no-head-dim.json`` (vLLM fails: refused by name). vLLM refuses TP 8
(4 vision heads) on 0.29.0 / 0.30.0, whose backend splits the vision q/k/v over the heads."""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from weights_records import int_flag

import dryboot.vllm.model_executor.models  # noqa: F401  (registers the families of models/)
from dryboot.errors import InputError
from dryboot.vllm.model_executor.model_loader.weights import Parallel, rank_weights
from dryboot.vllm.versions import VersionRules

HERE = Path(__file__).resolve().parent
DATA = HERE / "data" / "weights"
ARCH = "HunYuanVLForConditionalGeneration"
FILES = {
    "recorded-0.29.0-hunyuan-vl.json": "0.29.0",
    "recorded-0.30.0-wrappers.json": "0.30.0",
    "recorded-0.31.0-wrappers.json": "0.31.0",
    "recorded-0.32.0-wrappers.json": "0.32.0",
    "recorded-0.33.0-wrappers.json": "0.33.0",
    "recorded-0.29.0-hunyuan-vl-untied.json": "0.29.0",
    "recorded-0.31.0-hunyuan-vl-untied.json": "0.31.0",
    "recorded-0.33.0-hunyuan-vl-untied.json": "0.33.0",
    "recorded-0.33.0-hunyuan-vl-no-head-dim.json": "0.33.0",
}
DOCS = {name: json.loads((DATA / name).read_text()) for name in FILES}
RECORDED = {
    (name, cid): row
    for name, doc in DOCS.items()
    for cid, row in doc["cases"].items()
    if row["config"] == f"arch--{ARCH}"
}
TINY = json.loads((HERE / "data" / "architectures" / f"{ARCH}.json").read_text())


def _stages(name: str, row: dict[str, Any], version: str | None = None) -> list[list[int]]:
    """dryboot's [param, buffer, allocated] bytes of each stage for the recorded case (the file's
    overlay applied to the tiny config)."""
    config = {**TINY, **DOCS[name].get("overlay", {}).get(ARCH, {})}
    argv = row["argv"]
    tp, pp = int_flag(argv, "--tensor-parallel-size"), int_flag(argv, "--pipeline-parallel-size")
    got = []
    for stage in range(pp):
        w = rank_weights(
            config,
            Parallel(tp=tp, pp=pp, pp_rank=stage, vllm_version=version or FILES[name]),
            language_model_only="--language-model-only" in argv,
            max_num_batched_tokens=row.get("max_num_batched_tokens", 8192),
        )
        got.append([w.param_bytes, w.buffer_bytes, w.allocated_bytes])
    return got


def _want(row: dict[str, Any]) -> list[list[int]]:
    return row.get("stages") or [[row["param_bytes"], row["buffer_bytes"], row["allocated_bytes"]]]


def test_every_release_recorded() -> None:
    assert {name: doc["vllm"] for name, doc in DOCS.items()} == FILES
    counts = {name: sum(1 for (n, _) in RECORDED if n == name) for name in FILES}
    assert counts == {name: (2 if "-hunyuan-vl-" in name else 7) for name in FILES}
    assert [DOCS[n]["overlay"][ARCH] for n in FILES if n.endswith("-untied.json")] == 3 * [
        {"tie_word_embeddings": False}
    ]
    assert DOCS["recorded-0.33.0-hunyuan-vl-no-head-dim.json"]["overlay"][ARCH] == {"head_dim": None}


@pytest.mark.parametrize(("name", "cid"), sorted(RECORDED))
def test_matches_vllm(name: str, cid: str) -> None:
    """Every stage's bytes as the release builds them; vLLM's failures refused by name."""
    row = RECORDED[(name, cid)]
    if not row["ok"]:
        named = "head_dim" if "no-head-dim" in name else "num_attention_heads"
        with pytest.raises(InputError, match=named):
            _stages(name, row)
        return
    assert _stages(name, row) == _want(row)


@pytest.mark.parametrize(
    ("version", "switch", "flipped"),
    [
        ("0.30.0", "hunyuan_vl_whole_tower", True),
        ("0.31.0", "hunyuan_vl_whole_tower", False),
        ("0.33.0", "hunyuan_vl_whole_tower", False),
        ("0.30.0", "transformers_backend_vllm_attention", False),
        ("0.29.0", "transformers_backend_vllm_attention", True),
    ],
)
def test_switch_is_needed(version: str, switch: str, flipped: bool, flip_rules: Callable[..., VersionRules]) -> None:
    """Flipped, some recorded case of the release no longer matches (the text attention fused and
    split, the vision q/k/v whole: ``hunyuan_vl_whole_tower``; vLLM's attention scale buffers:
    ``transformers_backend_vllm_attention``)."""
    flip_rules(version, **{switch: flipped})
    broken = []
    for (name, cid), row in RECORDED.items():
        if FILES[name] != version or not row["ok"]:
            continue
        try:
            if _stages(name, row) != _want(row):
                broken.append(cid)
        except InputError:
            broken.append(cid)
    assert broken


def test_image_limit_zero_is_language_model_only() -> None:
    """``--limit-mm-per-prompt '{"image": 0}'`` drops the tower as ``--language-model-only`` does
    (the backend's ``_mark_tower_model``): vLLM's TP 2 text-only figure."""
    for name in ("recorded-0.29.0-hunyuan-vl.json", "recorded-0.33.0-wrappers.json"):
        row = RECORDED[(name, f"arch--{ARCH} --tensor-parallel-size 2 --language-model-only")]
        w = rank_weights(TINY, Parallel(tp=2, vllm_version=FILES[name]), limit_mm_per_prompt={"image": 0})
        assert [[w.param_bytes, w.buffer_bytes, w.allocated_bytes]] == _want(row)


@pytest.mark.parametrize(("key", "value"), [("attention_bias", True), ("partial_rotary_factor", 0.5)])
def test_unrecorded_text_keys_refused_by_name(key: str, value: Any) -> None:
    with pytest.raises(InputError, match=key):
        rank_weights({**TINY, key: value}, Parallel(tp=1, vllm_version="0.33.0"))


def test_text_hidden_size_sets_the_merger_width() -> None:
    """transformers' merger projects to the text model's width (``text_hidden_size``, set from the
    text config), not ``out_hidden_size``: changing the latter moves nothing on the backend."""
    wider = {**TINY, "vision_config": {**TINY["vision_config"], "out_hidden_size": 2048}}
    for version in ("0.29.0", "0.33.0"):
        a, b = (rank_weights(c, Parallel(tp=1, vllm_version=version)) for c in (TINY, wider))
        assert a.param_bytes == b.param_bytes

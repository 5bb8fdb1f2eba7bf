"""Cohere Compass (``cohere_compass.py``, vLLM 0.30.0-0.33.0): dryboot's per-rank weights against
vLLM's own model class on the meta device, byte for byte, and what it does not size refused by name.

``data/weights/recorded-0.33.0-compass.json`` is vLLM 0.33.0's own figures for the tiny config
(TP 1/2/4/8, three pipeline stages at TP 2, ``--language-model-only`` at TP 1/2), recorded with::

    RECORD_WEIGHTS_OUT=tests/fidelity/data/weights/recorded-0.33.0-compass.json \\
        $DRYBOOT_VLLM_PYTHON tests/fidelity/record_weights.py --tiny CohereCompassForConditionalGeneration

(its TP 1 cases of 0.30.0-0.33.0 are in each release's sweep: ``test_weights_sweep.py``). The
deepstack buffers are list attributes (the recorder's ``allocated_bytes`` has them, its
``buffer_bytes`` not); where the stage skips the tower they are made on the meta device, which the
recorder counts and a GPU does not hold (``test_weights.compass_deepstack``).
"""

from __future__ import annotations

import copy
import json
from dataclasses import replace
from pathlib import Path
from typing import Any

import pytest
from test_weights import _parallel, compass_deepstack

import dryboot.vllm.model_executor.models  # noqa: F401  (registers the families of models/ with the walk)
from dryboot.errors import InputError
from dryboot.vllm.model_executor.model_loader.weights import RankWeights, modelled_architectures, rank_weights

HERE = Path(__file__).resolve().parent
ARCH = "CohereCompassForConditionalGeneration"
CONFIG = json.loads((HERE / "data" / "architectures" / f"{ARCH}.json").read_text())
RECORDED = json.loads((HERE / "data" / "weights" / "recorded-0.33.0-compass.json").read_text())
CASES = sorted(RECORDED["cases"])
#: the tiny config with ``overlay`` (its text config: the sliding and full layers' RoPE of the same
#: items in two orders), recorded at ``--language-model-only`` (``RECORD_WEIGHTS_OVERLAY``)
ROPE_ORDER = json.loads((HERE / "data" / "weights" / "recorded-0.33.0-compass-rope-order.json").read_text())


def _weights(config: dict[str, Any], argv: list[str], stage: int = 0, **kw: Any) -> RankWeights:
    return rank_weights(
        config,
        replace(_parallel(argv, stage), vllm_version=kw.pop("version", "0.33.0")),
        language_model_only="--language-model-only" in argv,
        max_num_batched_tokens=8192,
        **{"max_model_len": 4096, **kw},
    )


def test_records_are_the_release() -> None:
    assert RECORDED["vllm"] == "0.33.0"
    assert {row["config"] for row in RECORDED["cases"].values()} == {f"arch--{ARCH}"}
    assert all(row["ok"] for row in RECORDED["cases"].values())
    assert ARCH in modelled_architectures()


@pytest.mark.parametrize("cid", CASES)
def test_matches_vllm(cid: str) -> None:
    row = RECORDED["cases"][cid]
    argv = row["argv"]
    stages = row.get("stages") or [[row["param_bytes"], row["buffer_bytes"], row["allocated_bytes"]]]
    for stage, want in enumerate(stages):
        got = _weights(CONFIG, argv, stage)
        held, meta = compass_deepstack(CONFIG, row, "0.33.0", stage)
        assert [got.param_bytes, got.buffer_bytes - held, got.allocated_bytes + meta] == want, (cid, stage)


@pytest.mark.parametrize("cid", sorted(ROPE_ORDER["cases"]))
def test_rope_order_matches_vllm(cid: str) -> None:
    """``get_rope`` keys its cache by the parameters in order: two tables for one RoPE written in
    two orders."""
    assert ROPE_ORDER["vllm"] == "0.33.0"
    row = ROPE_ORDER["cases"][cid]
    config = {**CONFIG, **ROPE_ORDER["overlay"][ARCH]}
    got = _weights(config, row["argv"])
    meta = compass_deepstack(config, row)[1]
    want = [row["param_bytes"], row["buffer_bytes"], row["allocated_bytes"]]
    assert [got.param_bytes, got.buffer_bytes, got.allocated_bytes + meta] == want
    assert row["buffer_bytes"] == RECORDED["cases"][cid]["buffer_bytes"] + 4096 * 64 * 2


def test_rotary_table_spans_max_model_len() -> None:
    """``get_rope(head_dim, max_position=max_model_len)``: [max_model_len, 64] bf16 on TP 1."""
    argv = ["--tensor-parallel-size", "1"]
    a, b = _weights(CONFIG, argv), _weights(CONFIG, argv, max_model_len=8192)
    assert b.buffer_bytes - a.buffer_bytes == 4096 * 64 * 2
    with pytest.raises(InputError, match="give max_model_len"):
        _weights(CONFIG, argv, max_model_len=None)


def test_no_rope_needs_no_length() -> None:
    """Layers whose type has no ``rope_parameters`` entry build no RoPE (every layer full here)."""
    config = copy.deepcopy(CONFIG)
    config["text_config"]["layer_types"] = ["full_attention"] * 4
    got = _weights(config, ["--tensor-parallel-size", "1", "--language-model-only"], max_model_len=None)
    want = RECORDED["cases"][f"arch--{ARCH} --tensor-parallel-size 1 --language-model-only"]
    assert got.buffer_bytes == want["buffer_bytes"] - 4096 * 64 * 2


def _refused(config: dict[str, Any], argv: list[str] | None = None, stage: int = 0) -> str:
    with pytest.raises(InputError) as e:
        _weights(config, argv or ["--tensor-parallel-size", "1"], stage)
    return str(e.value)


@pytest.mark.parametrize("tie", [False, None])
def test_untied_top_level_refused(tie: object) -> None:
    config = copy.deepcopy(CONFIG)
    config.pop("tie_word_embeddings")
    if tie is not None:
        config["tie_word_embeddings"] = tie
    assert "asserts a tied head" in _refused(config)


def test_flat_rope_refused() -> None:
    config = copy.deepcopy(CONFIG)
    config["text_config"]["rope_parameters"] = {"rope_type": "default", "rope_theta": 10000.0}
    assert "not keyed by layer type" in _refused(config)


@pytest.mark.parametrize("where", ["sliding_attention", "text_config"])
def test_partial_rotary_refused(where: str) -> None:
    config = copy.deepcopy(CONFIG)
    text = config["text_config"]
    (text if where == "text_config" else text["rope_parameters"][where])["partial_rotary_factor"] = 0.5
    assert "partial rotary table" in _refused(config)


@pytest.mark.parametrize(
    ("full", "tables"),
    [
        ({"rope_theta": 50000.0}, 1),  # the sliding layers' RoPE: get_rope's one table
        ({"rope_theta": 50000.0, "rope_type": "default"}, 1),  # rope_type appended last: the same items
        ({"rope_type": "default", "rope_theta": 50000.0}, 2),  # the same items in another order (recorded)
        ({"rope_theta": 10000.0}, 2),
    ],
)
def test_one_table_per_distinct_rope(full: dict[str, Any], tables: int) -> None:
    """``get_rope`` caches by the parameters' items in their order (transformers appends the
    missing ``rope_type`` / ``rope_theta``)."""
    config = copy.deepcopy(CONFIG)
    config["text_config"]["rope_parameters"] = {"sliding_attention": {"rope_theta": 50000.0}, "full_attention": full}
    argv = ["--tensor-parallel-size", "1", "--language-model-only"]
    base = RECORDED["cases"][f"arch--{ARCH} " + " ".join(argv)]["buffer_bytes"]
    assert _weights(config, argv).buffer_bytes == base + (tables - 1) * 4096 * 64 * 2


def test_rope_without_theta_refused() -> None:
    config = copy.deepcopy(CONFIG)
    config["text_config"]["rope_parameters"]["sliding_attention"].pop("rope_theta")
    assert "rope_theta" in _refused(config)


def test_vision_num_hidden_layers_refused() -> None:
    config = copy.deepcopy(CONFIG)
    config["vision_config"]["num_hidden_layers"] = 2
    assert "vision_config.num_hidden_layers" in _refused(config)


def test_stage_within_deepstack_layers_refused() -> None:
    """vLLM asserts a later stage's ``start_layer >= len(deepstack_visual_indexes)``."""
    config = copy.deepcopy(CONFIG)
    config["vision_config"]["deepstack_visual_indexes"] = [0, 1]
    argv = ["--tensor-parallel-size", "2", "--pipeline-parallel-size", "3"]
    assert "deepstack layers" in _refused(config, argv, 1)
    assert _weights(CONFIG, argv, 1).param_bytes > 0  # one level: stage 1 starts at layer 1


def test_deepstack_buffers_need_batched_tokens() -> None:
    with pytest.raises(InputError, match="max_num_batched_tokens"):
        rank_weights(
            CONFIG, replace(_parallel(["--tensor-parallel-size", "1"]), vllm_version="0.33.0"), max_model_len=4096
        )

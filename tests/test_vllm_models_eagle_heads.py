"""EAGLE / EAGLE-3 heads of config classes other than the five read with dryboot's own defaults
(issue 37): read by what the Llama EAGLE layers read from the class, refused by name otherwise."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from dryboot.errors import InputError
from dryboot.vllm.models.llama import eagle_head_refusal
from dryboot.vllm.models.registry import eagle_head_overrides

HEAD = {"architectures": ["LlamaForCausalLM"], "hidden_size": 5120, "num_attention_heads": 40, "num_hidden_layers": 1}


def test_a_phi3_head_is_read() -> None:
    assert eagle_head_refusal("phi3", {**HEAD, "model_type": "phi3"}) is None
    out = eagle_head_overrides({**HEAD, "model_type": "phi3"}, "eagle3", "head/config.json", "0.28.0")
    assert out == {"architectures": ["Eagle3LlamaForCausalLM"]}


def test_a_class_writing_its_own_layer_types_needs_them_given() -> None:
    reason = eagle_head_refusal("gemma2", {**HEAD, "model_type": "gemma2"})
    assert reason is not None and "layer_types" in reason
    assert eagle_head_refusal("gemma2", {**HEAD, "model_type": "gemma2", "layer_types": ["full_attention"]}) is None


def test_an_unknown_class_is_refused_naming_model_type() -> None:
    with pytest.raises(InputError) as err:
        eagle_head_overrides({**HEAD, "model_type": "no_such_class"}, "eagle3", "head/config.json", "0.28.0")
    assert "model_type" in err.value.line() and "not modelled" in err.value.line()


def test_the_recorded_table_is_what_the_head_layers_read() -> None:
    table = json.loads(
        (Path(__file__).resolve().parents[1] / "src" / "dryboot" / "data" / "eagle-head-fields.json").read_text()
    )["model_types"]
    assert table["phi3"] == {
        "head_dim": None,
        "layer_types": None,
        "max_position_embeddings": 4096,
        "num_key_value_heads": "heads",
        "sliding_window": None,
    }
    assert table["qwen3"]["head_dim"] == 128 and table["qwen3"]["layer_types"] == "generated"

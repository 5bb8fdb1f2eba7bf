"""The speculators format (``speculators_config``) read as vLLM 0.28.0's ``SpeculatorsConfig``
reads a draft model."""

from __future__ import annotations

from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st

from dryboot.errors import InputError
from dryboot.vllm.transformers_utils.speculators import draft_config, is_speculators, verifier

LAYER = {
    "model_type": "llama",
    "hidden_size": 512,
    "num_attention_heads": 8,
    "num_hidden_layers": 1,
    "intermediate_size": 1024,
    "hidden_act": "silu",
    "rms_norm_eps": 1e-5,
    "vocab_size": 1024,
    "max_position_embeddings": 4096,
}


def _spec(kind: str, **extra: Any) -> dict[str, Any]:
    return {
        "speculators_model_type": kind,
        "speculators_config": {"verifier": {"name_or_path": "org/target"}, "proposal_methods": []},
        "transformer_layer_config": dict(LAYER),
        **extra,
    }


def test_eagle3_takes_its_class_from_the_layer_config() -> None:
    assert draft_config(_spec("eagle3"), "c")["architectures"] == ["Eagle3LlamaForCausalLM"]
    qwen = _spec("eagle3")
    qwen["transformer_layer_config"]["model_type"] = "qwen3"
    assert draft_config(qwen, "c")["architectures"] == ["Eagle3Qwen3ForCausalLM"]
    no_type = _spec("eagle3")
    del no_type["transformer_layer_config"]["model_type"]
    assert draft_config(no_type, "c")["model_type"] == "llama"
    assert is_speculators(qwen) and verifier(qwen) == "org/target" and not is_speculators(LAYER)


def test_dflash_needs_its_mask_token_and_layers() -> None:
    out = draft_config(_spec("dflash", mask_token_id=7, aux_hidden_state_layer_ids=[1, 2]), "c")
    assert out["architectures"] == ["DFlashDraftModel"] and out["dflash_config"] == {"mask_token_id": 7}
    with pytest.raises(InputError, match="mask_token_id"):
        draft_config(_spec("dflash", aux_hidden_state_layer_ids=[1]), "c")


@pytest.mark.parametrize(
    ("data", "words"),
    [
        (_spec("peagle"), "not modelled"),
        (_spec("medusa"), "Expected one of"),
        ({**_spec("eagle3"), "transformer_layer_config": None}, "transformer_layer_config"),
        ({**_spec("eagle3"), "transformer_layer_config": {**LAYER, "model_type": "gemma"}}, "Unsupported model_type"),
        ({**_spec("eagle3"), "transformer_layer_config": {"model_type": "llama"}}, "no attribute 'hidden_size'"),
    ],
)
def test_refusals_name_the_field(data: dict[str, Any], words: str) -> None:
    with pytest.raises(InputError, match=words):
        draft_config(data, "c")


json_values = st.recursive(
    st.none() | st.booleans() | st.integers() | st.text(max_size=6),
    lambda inner: st.lists(inner, max_size=3) | st.dictionaries(st.text(max_size=6), inner, max_size=3),
    max_leaves=12,
)


@given(
    st.fixed_dictionaries(
        {"speculators_model_type": json_values, "transformer_layer_config": json_values},
        optional={"mask_token_id": json_values, "aux_hidden_state_layer_ids": json_values},
    )
)
def test_any_config_is_read_or_refused_by_name(data: dict[str, Any]) -> None:
    try:
        out = draft_config(data, "c")
    except InputError as exc:
        assert exc.line()
    else:
        assert isinstance(out, dict) and out["architectures"]

"""MuseGlimmer's sliding layers per release: ``no_rope_layers`` (0.28.0-0.30.0, vLLM's own config
class, and 0.31.0 / 0.32.0) or ``layer_types`` (0.33.0, transformers'); 0.27.1 refuses its
``model_type``. The recorded engine starts are ``tests/fidelity`` (``test_release_architectures``)."""

from __future__ import annotations

import copy
import json
from pathlib import Path
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from dryboot.errors import InputError
from dryboot.vllm.config.hf import LayerKind
from dryboot.vllm.config.resolve import for_release
from dryboot.vllm.transformers_utils.config import geometry_from_config
from dryboot.vllm.versions import rules_for

TINY = Path(__file__).parent / "fidelity" / "data" / "architectures"
S, F = LayerKind.SLIDING, LayerKind.FULL


def _config(name: str = "MuseGlimmerForCausalLM") -> dict[str, Any]:
    data: dict[str, Any] = json.loads((TINY / f"{name}.json").read_text())
    return data


def _kinds(data: dict[str, Any], version: str) -> tuple[LayerKind, ...]:
    return for_release(geometry_from_config(data), rules_for(version)).layer_kinds


@pytest.mark.parametrize("name", ["MuseGlimmerForCausalLM", "MuseGlimmerForConditionalGeneration"])
def test_sliding_layers_are_read_per_release(name: str) -> None:
    data = _config(name)  # no_rope_layers [1, 0, 1, 0]; layer_types S, S, S, F
    assert _kinds(data, "0.28.0") == _kinds(data, "0.30.0") == (S, F, S, F)
    assert _kinds(data, "0.33.0") == (S, S, S, F)


def test_absent_keys_take_each_config_class_default() -> None:
    data = _config()
    for key in ("no_rope_layers", "layer_types", "max_position_embeddings"):
        del data[key]
    data["num_hidden_layers"] = 6
    for version in ("0.28.0", "0.33.0"):
        # both classes: every 4th layer counted back from the last is NoPE / full
        assert _kinds(data, version) == (S, F, S, S, S, F)
    old = for_release(geometry_from_config(data), rules_for("0.28.0"))
    new = for_release(geometry_from_config(data), rules_for("0.33.0"))
    assert (old.max_len.max_position_embeddings, new.max_len.max_position_embeddings) == (16384, 131072)


def test_every_layer_slides_with_an_all_sliding_layer_types() -> None:
    data = _config()
    data["layer_types"] = ["sliding_attention"] * 4  # the model-level window reaches the NoPE layers
    assert _kinds(data, "0.28.0") == _kinds(data, "0.33.0") == (S, S, S, S)


def test_no_window_no_sliding_layer() -> None:
    data = _config()
    data["sliding_window"] = None
    assert _kinds(data, "0.28.0") == _kinds(data, "0.33.0") == (F, F, F, F)


@pytest.mark.parametrize(
    ("change", "field"),
    [
        ({"no_rope_layers": [1, 0]}, "no_rope_layers"),
        ({"no_rope_layers": [1, 0, "1", 0]}, "no_rope_layers"),
        ({"hidden_size": 500}, "hidden_size"),
        ({"layer_types": ["chunked_attention"] * 4}, "layer_types"),
    ],
)
def test_malformed_fields_are_refused(change: dict[str, Any], field: str) -> None:
    with pytest.raises(InputError) as e:
        geometry_from_config({**_config(), **change})
    assert field in str(e.value)


def test_a_muse_glimmer_config_without_a_text_config_layer_count_is_refused() -> None:
    data = _config("MuseGlimmerForConditionalGeneration")
    del data["text_config"]["num_hidden_layers"]
    with pytest.raises(InputError, match="text_config"):
        geometry_from_config(data)


def test_release_without_the_config_class_refuses() -> None:
    from dryboot.vllm.config.resolve import create_engine_config
    from dryboot.vllm.engine_args import EngineArgs

    with pytest.raises(InputError, match="Transformers does not recognize"):
        create_engine_config(geometry_from_config(_config()), EngineArgs(vllm_version="0.27.1"), None)


_values = st.one_of(st.none(), st.integers(-2, 3), st.text(max_size=3), st.lists(st.integers(-1, 2), max_size=6))


@settings(max_examples=150, deadline=None)
@given(
    rope=st.one_of(_values, st.lists(st.one_of(st.integers(-1, 2), st.text(max_size=2)), min_size=4, max_size=4)),
    types=st.one_of(
        _values, st.lists(st.sampled_from(["sliding_attention", "full_attention", "x"]), min_size=4, max_size=4)
    ),
    window=_values,
)
def test_hostile_fields_are_read_or_refused_in_one_line(rope: Any, types: Any, window: Any) -> None:
    data = copy.deepcopy(_config())
    data.update(no_rope_layers=rope, layer_types=types, sliding_window=window)
    try:
        model = geometry_from_config(data)
    except InputError as e:
        assert "\n" not in str(e)
        return
    for version in ("0.28.0", "0.33.0"):
        kinds = for_release(model, rules_for(version)).layer_kinds
        assert len(kinds) == 4 and set(kinds) <= {S, F}


# Muse Spark (vLLM 0.33.0's vllm/models/muse_spark): MuseGlimmer's 0.33.0 layout on vLLM's own
# MuseSparkConfig, which has no defaults; the recorded engine starts are test_release_architectures'
SPARK = "MuseSparkForConditionalGeneration"


def _spark(**text: Any) -> dict[str, Any]:
    data = _config(SPARK)
    data["text_config"].update(text)
    return data


def test_spark_slides_the_layer_types_sliding_layers() -> None:
    assert _kinds(_config(SPARK), "0.33.0") == (S, S, S, F)
    assert _kinds(_spark(layer_types=["sliding_attention"] * 4), "0.33.0") == (S, S, S, S)
    # no window: the sliding layers are full (per_layer_sliding_window None)
    assert _kinds(_spark(sliding_window=None), "0.33.0") == (F, F, F, F)


@pytest.mark.parametrize(
    ("where", "key", "words"),
    [
        ("text_config", "head_dim", "'MuseSparkTextConfig' object has no attribute 'head_dim'"),
        ("text_config", "sliding_window", "'MuseSparkTextConfig' object has no attribute 'sliding_window'"),
        ("vision_config", "merge_size", "'MuseSparkVisionConfig' object has no attribute 'merge_size'"),
        ("audio_config", "depths", "'MuseSparkAudioConfig' object has no attribute 'depths'"),
        (None, "audio_config", "Muse Spark requires an HF audio_config"),
        (None, "projector_hidden_size", "Muse Spark requires vision projector dimensions"),
    ],
)
def test_spark_config_class_has_no_defaults(where: str | None, key: str, words: str) -> None:
    data = _config(SPARK)
    del (data[where] if where else data)[key]
    with pytest.raises(InputError, match=words):
        geometry_from_config(data)


@pytest.mark.parametrize(
    ("change", "words"),
    [
        ({"hidden_act": "gelu"}, "requires SiLU and bias-free attention"),
        ({"attention_bias": True}, "requires SiLU and bias-free attention"),
        ({"num_shared_experts": 1}, "shared experts are not supported"),
        ({"rope_parameters": {"rope_type": "yarn", "factor": 2.0}}, "Unsupported Muse Spark text RoPE type"),
        ({"layer_types": ["sliding_attention", "chunked_attention", "full_attention", "full_attention"]}, "Invalid"),
        ({"layer_types": ["full_attention"] * 2}, r"`num_hidden_layers` \(4\) must be equal"),
        ({"layer_rope_theta": [1.0]}, "one RoPE theta per layer"),
        ({"hidden_size": 256}, "audio output must match the text hidden size"),
    ],
)
def test_spark_config_class_checks_are_refusals(change: dict[str, Any], words: str) -> None:
    with pytest.raises(InputError, match=words):
        geometry_from_config(_spark(**change))


def test_spark_only_0_33_builds_it_and_its_weights_are_refused_by_name(tmp_path: Path) -> None:
    from dryboot.vllm.config.resolve import create_engine_config
    from dryboot.vllm.engine_args import EngineArgs
    from dryboot.vllm.model_executor.model_loader.loader import model_weights

    model = geometry_from_config(_config(SPARK))
    for version in ("0.28.0", "0.29.0", "0.30.0"):  # their transformers reads muse_spark; the registry lacks it
        with pytest.raises(InputError, match="Transformers modeling backend"):
            create_engine_config(model, EngineArgs(vllm_version=version), None)
    for version in ("0.31.0", "0.32.0"):  # no muse_spark config class
        with pytest.raises(InputError, match="Transformers does not recognize"):
            create_engine_config(model, EngineArgs(vllm_version=version), None)
    (tmp_path / "config.json").write_text(json.dumps(_config(SPARK)))
    assert "vllm.models.muse_spark is not sized" in str(model_weights(tmp_path, tp=1).refused)


def test_spark_model_type_must_be_muse_spark() -> None:
    data = _config(SPARK)
    data["model_type"] = "muse_glimmer"
    with pytest.raises(InputError, match="not modelled"):
        geometry_from_config(data)


def test_spark_fused_qkv_o_gate_refuses_kv_heads_the_ranks_do_not_divide() -> None:
    from dryboot.vllm.config.resolve import create_engine_config
    from dryboot.vllm.engine_args import EngineArgs

    model = geometry_from_config(_spark(num_key_value_heads=2))
    create_engine_config(model, EngineArgs(vllm_version="0.33.0", tensor_parallel_size=2), None)
    with pytest.raises(InputError, match="KV-head padding is not supported for the fused QKV\\+O-gate projection"):
        create_engine_config(model, EngineArgs(vllm_version="0.33.0", tensor_parallel_size=4), None)


def test_spark_moe_refuses_data_parallelism_on_hopper_and_other_gpus_are_not_modelled() -> None:
    from dryboot.vllm.config.resolve import create_engine_config
    from dryboot.vllm.engine_args import EngineArgs
    from dryboot.vllm.gpus import gpu_table

    model = geometry_from_config(_config(SPARK))
    with pytest.raises(InputError, match="requires DP1 and PCP1"):
        create_engine_config(model, EngineArgs(vllm_version="0.33.0", data_parallel_size=2), None)
    with pytest.raises(InputError, match="not modelled"):
        create_engine_config(model, EngineArgs(vllm_version="0.33.0", gpu=gpu_table()["B200"]), None)


def test_spark_quantized_checkpoint_is_not_modelled() -> None:
    data = _config(SPARK)
    data["quantization_config"] = {"quant_method": "modelopt", "quant_algo": "NVFP4"}
    with pytest.raises(InputError, match="quantized Muse Spark checkpoint is not modelled"):
        geometry_from_config(data)

import json
from pathlib import Path

import pytest

from dryboot.errors import InputError
from dryboot.vllm.config.hf import LayerKind
from dryboot.vllm.transformers_utils.config import load_model


def test_qwen3_next_flat_interval(models_dir: Path) -> None:
    m = load_model(models_dir / "Qwen3-Next-80B-A3B-Thinking.config.json")
    assert m.count(LayerKind.GDN) == 36 and m.count(LayerKind.FULL) == 12
    assert (m.num_kv_heads, m.head_dim) == (2, 256)
    assert m.mamba.hf_ssm_dtype is None  # no mamba_ssm_dtype key: state follows the model dtype
    assert m.layer_kinds[3] is LayerKind.FULL and m.layer_kinds[0] is LayerKind.GDN


def test_qwen35_nested_text_config(models_dir: Path) -> None:
    m = load_model(models_dir / "Qwen3.5-27B.config.json")
    assert m.architecture == "Qwen3_5ForConditionalGeneration"
    assert m.count(LayerKind.GDN) == 48 and m.count(LayerKind.FULL) == 16
    assert m.mamba.hf_ssm_dtype == "float32"
    assert m.mamba.gdn is not None and (m.mamba.gdn.num_k_heads, m.mamba.gdn.num_v_heads) == (16, 48)


def test_nemotron_h_pattern(models_dir: Path) -> None:
    m = load_model(models_dir / "Nemotron-H-56B-Base-8K.config.json")
    pattern = json.loads((models_dir / "Nemotron-H-56B-Base-8K.config.json").read_text())["hybrid_override_pattern"]
    assert m.count(LayerKind.MAMBA2) == pattern.count("M")
    assert m.count(LayerKind.FULL) == pattern.count("*")
    assert m.mamba.hf_ssm_dtype == "float32"  # Nemotron-H default when the config names none
    assert m.head_dim == 128 and m.num_kv_heads == 8


def test_gpt_oss_alternates(models_dir: Path) -> None:
    m = load_model(models_dir / "gpt-oss-20b.config.json")
    assert m.count(LayerKind.SLIDING) == 12 and m.count(LayerKind.FULL) == 12
    assert m.sliding_window == 128 and m.head_dim == 64


def test_drafter_sliding(models_dir: Path) -> None:
    m = load_model(models_dir / "dflash2-drafter-sw5.config.json")
    assert m.count(LayerKind.SLIDING) == 5 and m.sliding_window == 2048


def test_directory_holding_config(tmp_path: Path, models_dir: Path) -> None:
    (tmp_path / "config.json").write_bytes((models_dir / "gpt-oss-20b.config.json").read_bytes())
    assert load_model(tmp_path).num_layers == 24


LLAMA = '"architectures": ["LlamaForCausalLM"], "num_attention_heads": 8, "hidden_size": 1024'


@pytest.mark.parametrize(
    ("content", "where", "reason"),
    [
        ("{not json", "line 1 column 2", "invalid JSON"),
        ("[1, 2]", None, "JSON object"),
        ('{"num_hidden_layers": 2}', "architectures", "missing"),
        ('{"architectures": ["DeepSeekV4MTPModel"], "num_hidden_layers": 2}', "architectures", "not modelled"),
        ("{" + LLAMA + ', "num_hidden_layers": "64"}', "num_hidden_layers", "must be an integer"),
        ("{" + LLAMA + "}", "num_hidden_layers", "required field is missing"),
        ("{" + LLAMA + ', "num_hidden_layers": 1000000000}', "num_hidden_layers", "must be <= 10,000"),
        ("{" + LLAMA + ', "num_hidden_layers": 2, "num_key_value_heads": 5}', "num_key_value_heads", "do not divide"),
        ("{" + LLAMA + ', "num_hidden_layers": 2, "layer_types": ["full_attention"]}', "layer_types", "one type per"),
        ("{" + LLAMA + ', "num_hidden_layers": 1, "layer_types": ["moe"]}', "layer_types[0]", "unknown layer type"),
    ],
)
def test_malformed_configs_name_the_field(tmp_path: Path, content: str, where: str | None, reason: str) -> None:
    path = tmp_path / "config.json"
    path.write_text(content)
    with pytest.raises(InputError) as info:
        load_model(path)
    assert info.value.source == str(path)
    assert info.value.where == where
    assert reason in info.value.reason


def test_missing_file(tmp_path: Path) -> None:
    with pytest.raises(InputError, match="no such file"):
        load_model(tmp_path / "nope.json")


def test_geometry_build_routes_flat_keywords_to_sub_records() -> None:
    from dryboot.vllm.config.hf import ModelGeometry

    base = {
        "source": "c.json",
        "architecture": "LlamaForCausalLM",
        "model_type": "llama",
        "dtype": "bfloat16",
        "layer_kinds": (LayerKind.FULL,),
        "num_kv_heads": 8,
        "head_dim": 128,
        "head_dim_v": 128,
        "sliding_window": None,
        "attention_chunk_size": None,
    }
    m = ModelGeometry.build(**base, pp_refusal="why", layer_prefix="transformer.h", quant_method="fp8")
    assert (m.parallel.pp_refusal, m.naming.layer_prefix, m.quant.quant_method) == ("why", "transformer.h", "fp8")
    assert m.layer_name(0) == "transformer.h.0.self_attn.attn"
    moved = m.evolve(layer_prefix="mtp.layers", num_mtp_layers=1)
    assert (moved.naming.layer_prefix, moved.parallel.pp_refusal, moved.mtp.num_mtp_layers) == ("mtp.layers", "why", 1)
    with pytest.raises(TypeError, match="no_such_field"):
        ModelGeometry.build(**base, no_such_field=1)
    with pytest.raises(TypeError, match="no_such_field"):
        m.evolve(no_such_field=1)


def test_geometry_keeps_at_most_25_fields_and_its_layer_map_reads_through() -> None:
    """Issue 35 item 12: ModelGeometry had grown back to 26 fields; how its layers map to vLLM's
    (names, decoder layers, KV sharing) is one record, ``naming``, read through by the old names."""
    from dataclasses import fields

    from dryboot.vllm.config.hf import LayerNaming, ModelGeometry

    assert len(fields(ModelGeometry)) <= 25
    base = {
        "source": "c.json",
        "architecture": "Gemma3nForCausalLM",
        "model_type": "gemma3n",
        "dtype": "bfloat16",
        "layer_kinds": (LayerKind.FULL,) * 4,
        "num_kv_heads": 2,
        "head_dim": 256,
        "head_dim_v": 256,
        "sliding_window": None,
        "attention_chunk_size": None,
    }
    m = ModelGeometry.build(**base, kv_sharing=((3, 1),), decoder_layers=(0, 0, 1, 1))
    assert m.naming == LayerNaming(kv_sharing=((3, 1),), decoder_layers=(0, 0, 1, 1))
    assert (m.kv_sharing, m.decoder_layers, m.num_decoder_layers, m.decoder_layer(3)) == (((3, 1),), (0, 0, 1, 1), 2, 1)
    moved = m.evolve(decoder_layers=None)
    assert (moved.decoder_layers, moved.kv_sharing, moved.num_decoder_layers) == (None, ((3, 1),), 4)

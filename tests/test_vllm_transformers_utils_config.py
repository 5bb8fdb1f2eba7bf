"""The config reader (``dryboot.vllm.transformers_utils.config``): bad and hostile ``config.json``
files refused with one line naming the file and field, and property tests on what it accepts."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from dryboot.errors import InputError
from dryboot.vllm.transformers_utils.config import (
    MAX_DEPTH,
    check_config,
    geometry_from_config,
    load_config_json,
    load_model,
    unknown_override_keys,
)

REPO = Path(__file__).resolve().parents[1]
LLAMA = REPO / "tests" / "fidelity" / "data" / "architectures" / "LlamaForCausalLM.json"


def _llama() -> dict[str, Any]:
    data: dict[str, Any] = json.loads(LLAMA.read_text())
    return data


def _cli(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "dryboot", *args], capture_output=True, text=True, timeout=60)


def _refused(r: subprocess.CompletedProcess[str], *words: str) -> None:
    assert r.returncode == 2, r.stdout + r.stderr
    lines = r.stderr.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("dryboot: error: "), r.stderr
    assert "Traceback" not in r.stderr
    for word in words:
        assert word in lines[0], lines[0]


def test_deeply_nested_config_is_refused(tmp_path: Path) -> None:
    path = tmp_path / "config.json"
    path.write_text('{"a": ' + "[" * 3000 + "]" * 3000 + "}")
    _refused(_cli("plan", "--model", str(path)), str(path), "nested deeper")
    with pytest.raises(InputError, match="nested deeper"):
        load_config_json(path)


def test_nesting_below_json_limit_but_above_ours_is_refused() -> None:
    data: dict[str, Any] = _llama()
    level: dict[str, Any] = data
    for _ in range(MAX_DEPTH + 5):
        level["x"] = {}
        level = level["x"]
    with pytest.raises(InputError, match=f"nested deeper than {MAX_DEPTH} levels"):
        geometry_from_config(data, "cfg")


def test_endless_file_is_refused_in_one_line() -> None:
    """/dev/zero is a device: refused before any read (issue 28), as a FIFO is."""
    _refused(_cli("plan", "--model", "/dev/zero"), "/dev/zero", "not a regular file")


def test_model_type_must_be_a_string(tmp_path: Path) -> None:
    path = tmp_path / "config.json"
    path.write_text(json.dumps({**_llama(), "model_type": 5}))
    _refused(_cli("plan", "--model", str(path)), "model_type", "must be a string")
    with pytest.raises(InputError, match=r"text_config\.model_type: must be a string"):
        check_config({"text_config": {"model_type": [1]}}, "cfg")


def test_architecture_contradicting_model_type_is_refused(tmp_path: Path) -> None:
    path = tmp_path / "config.json"
    path.write_text(json.dumps({**_llama(), "model_type": "gemma2"}))
    _refused(_cli("plan", "--model", str(path)), "model_type", "Gemma2ForCausalLM", "LlamaForCausalLM")


def test_model_type_of_the_same_family_is_read() -> None:
    # MistralForCausalLM's config class with a Llama architecture: one family reads both
    assert geometry_from_config({**_llama(), "model_type": "mistral"}, "cfg").architecture == "LlamaForCausalLM"


def test_misspelled_hf_override_key_gets_a_note() -> None:
    r = _cli(
        "plan", "--model", str(LLAMA), "--kv-cache-memory", "1G", "--hf-overrides", '{"num_hiden_layers": 4}', "--json"
    )
    assert r.returncode == 0, r.stderr
    notes = json.loads(r.stdout)["notes"]
    assert any("num_hiden_layers is not a key" in n for n in notes), notes
    assert unknown_override_keys({"text_config": {"a": 1}}, {"text_config": {"b": 2}, "a": 1}) == ["text_config.b", "a"]


def test_missing_speculative_model_names_the_file() -> None:
    _refused(_cli("plan", "--model", str(LLAMA), "--speculative-model", "/missing"), "--speculative-model", "/missing")


def test_model_model_type_table_matches_the_tiny_configs() -> None:
    """``data/model-types.json`` is ``scripts/model_types.py``'s output for today's tiny configs."""
    sys.path.insert(0, str(REPO / "scripts"))
    import model_types

    assert json.loads(model_types.OUT.read_text()) == model_types.table()


json_scalars = st.none() | st.booleans() | st.integers() | st.floats(allow_nan=False) | st.text(max_size=8)
json_values = st.recursive(
    json_scalars, lambda inner: st.lists(inner, max_size=4) | st.dictionaries(st.text(max_size=8), inner, max_size=4)
)


@settings(max_examples=300, deadline=None)
@given(st.dictionaries(st.text(max_size=12), json_values, max_size=6))
def test_any_json_object_is_read_or_refused_by_name(data: dict[str, Any]) -> None:
    """The reader takes any JSON object: a geometry or an InputError, never another exception."""
    try:
        geometry_from_config(data, "cfg")
    except InputError as exc:
        assert exc.line().startswith("cfg")


@settings(max_examples=200, deadline=None)
@given(
    st.sampled_from(["num_hidden_layers", "num_attention_heads", "num_key_value_heads", "head_dim", "model_type"]),
    json_values,
)
def test_a_real_config_with_one_field_changed_is_read_or_refused_by_name(key: str, value: Any) -> None:
    try:
        geometry_from_config({**_llama(), key: value}, "cfg")
    except InputError as exc:
        assert exc.line().startswith("cfg")


@settings(max_examples=100, deadline=None)
@given(st.binary(max_size=200))
def test_any_bytes_are_read_or_refused_by_name(tmp_path_factory: pytest.TempPathFactory, raw: bytes) -> None:
    path = tmp_path_factory.mktemp("cfg") / "config.json"
    path.write_bytes(raw)
    try:
        load_model(path)
    except InputError as exc:
        assert exc.line().startswith(str(path))


# --------------------------------------------------------------------------- hf_quant_config.json

_MODELOPT = {
    "producer": {"name": "modelopt", "version": "0.33.0"},
    "quantization": {"quant_algo": "NVFP4", "kv_cache_quant_algo": "FP8", "group_size": 16},
}


def _checkpoint(tmp_path: Path, quant: Any, config: dict[str, Any] | None = None) -> Path:
    (tmp_path / "config.json").write_text(json.dumps(config or _llama()))
    (tmp_path / "hf_quant_config.json").write_text(quant if isinstance(quant, str) else json.dumps(quant))
    return tmp_path


def test_hf_quant_config_beside_config_json_makes_the_kv_cache_fp8(tmp_path: Path) -> None:
    """vLLM's ``get_config`` reads ``hf_quant_config.json`` when config.json has no
    ``quantization_config``; ModelOpt's FP8 KV algo turns ``auto`` into fp8_e4m3."""
    model = load_model(_checkpoint(tmp_path, _MODELOPT))
    assert model.quant.quant_method == "modelopt_fp4"
    assert model.quant.quant_kv_cache_dtype == "fp8_e4m3"
    # the same through the config.json path
    assert load_model(tmp_path / "config.json").quant.quant_kv_cache_dtype == "fp8_e4m3"


def test_hf_quant_config_ignored_where_vllm_ignores_it(tmp_path: Path) -> None:
    # config.json's own quantization_config wins (vLLM reads the file only without one)
    cfg = {**_llama(), "quantization_config": {"quant_method": "fp8"}}
    assert load_model(_checkpoint(tmp_path, _MODELOPT, cfg)).quant.quant_kv_cache_dtype is None
    # a config under another name has no sibling file
    other = tmp_path / "Llama.config.json"
    other.write_text(json.dumps(_llama()))
    assert load_model(other).quant.quant_kv_cache_dtype is None


def test_modelopt_without_quant_method_keeps_auto(tmp_path: Path) -> None:
    """A ModelOpt config.json with no ``quantization.quant_algo`` has no ``quant_method``: vLLM's
    kv_cache_quant_algo rule applies only to ``modelopt*`` methods (auto stays the model dtype)."""
    cfg = {
        **_llama(),
        "quantization_config": {"producer": {"name": "modelopt"}, "quant_algo": "FP8", "kv_cache_scheme": "FP8"},
    }
    (tmp_path / "config.json").write_text(json.dumps(cfg))
    assert load_model(tmp_path).quant.quant_kv_cache_dtype is None


@pytest.mark.parametrize(
    ("quant", "where", "reason"),
    [
        ("{", "line 1", "invalid JSON"),
        ("[1]", None, "JSON object"),
        (json.dumps({**_MODELOPT, "quantization": 3}), None, None),
        (
            json.dumps({"producer": {"name": "modelopt"}, "quantization": {"quant_algo": "INT3"}}),
            "quantization_config.quantization.quant_algo",
            "Unknown ModelOpt quant algo",
        ),
    ],
)
def test_hostile_hf_quant_config_is_one_line(tmp_path: Path, quant: str, where: str | None, reason: str | None) -> None:
    _checkpoint(tmp_path, quant)
    if reason is None:  # a non-object ``quantization``: vLLM names no method, nothing to refuse
        assert load_model(tmp_path).quant.quant_kv_cache_dtype is None
        return
    with pytest.raises(InputError) as exc:
        load_model(tmp_path)
    assert reason in str(exc.value)
    if where is not None:
        assert where in str(exc.value)
    r = _cli("plan", "--model", str(tmp_path), "--kv-cache-memory-bytes", "1000000000")
    _refused(r, reason)


# --------------------------------------------------------------------------- remote code (issue 29)

CONFIG_READING = REPO / "tests" / "fidelity" / "data" / "config_reading" / "configs"


def test_remote_config_class_is_refused_without_trust_remote_code(tmp_path: Path) -> None:
    """LFM2-VL's published form (model_type ``lfm2-vl``, an ``auto_map`` AutoConfig): vLLM refuses it
    at config loading without --trust-remote-code (recorded in test_config_reading.py); dryboot read
    the language model's ``lfm2`` and planned it. The top-level model_type is what AutoConfig reads."""
    (tmp_path / "config.json").write_bytes((CONFIG_READING / "lfm2_vl-remote-model-type.json").read_bytes())
    r = _cli("plan", "--model", str(tmp_path), "--kv-cache-memory-bytes", "2G")
    _refused(r, "model_type", "lfm2-vl", "--trust-remote-code")


def test_trust_remote_code_plans_a_modelled_architecture_with_a_note(tmp_path: Path) -> None:
    """With --trust-remote-code vLLM runs the checkpoint's config class (its Python files, beside the
    config): dryboot plans the architecture it models, and says how it read the config."""
    (tmp_path / "config.json").write_bytes((CONFIG_READING / "lfm2_vl-remote-model-type.json").read_bytes())
    r = _cli("plan", "--model", str(tmp_path), "--kv-cache-memory-bytes", "2G", "--trust-remote-code", "--json")
    assert r.returncode == 0, r.stdout + r.stderr
    out = json.loads(r.stdout)
    assert any("--trust-remote-code" in n and "auto_map" in n for n in out["notes"]), out["notes"]


def test_trust_remote_code_without_auto_config_is_still_refused(tmp_path: Path) -> None:
    """An unknown model_type whose auto_map names no AutoConfig: transformers has no class to load,
    with the flag or without."""
    data = json.loads((CONFIG_READING / "lfm2_vl-remote-model-type.json").read_text())
    data["auto_map"] = {"AutoModelForImageTextToText": "modeling_lfm2_vl.Lfm2VlForConditionalGeneration"}
    (tmp_path / "config.json").write_text(json.dumps(data))
    r = _cli("plan", "--model", str(tmp_path), "--kv-cache-memory-bytes", "2G", "--trust-remote-code")
    _refused(r, "auto_map", "lfm2-vl")


def test_config_class_traits_are_read() -> None:
    data = json.loads((CONFIG_READING / "lfm2_vl-remote-model-type.json").read_text())
    model = geometry_from_config(data)
    assert (model.config_class.hf_model_type, model.config_class.auto_config) == ("lfm2-vl", True)
    assert model.model_type == "lfm2"

"""Refusals name the flag or the file the bad value came from (newuser-report item 11)."""

import math
from pathlib import Path

import pytest
from click.testing import CliRunner
from hypothesis import given, settings
from hypothesis import strategies as st

from dryboot.checklog.serve import parse_serve
from dryboot.cli import cli
from dryboot.errors import InputError
from dryboot.planner.flags import FLAGS_BY_NAME, parse_value
from dryboot.planner.plan import plan
from dryboot.planner.profiles import load_profiles
from dryboot.vllm.engine_args import EngineArgs
from dryboot.vllm.transformers_utils.config import load_model

REPO = Path(__file__).resolve().parents[1]
QWEN3_8B = REPO / "tests" / "data" / "configs" / "public" / "Qwen--Qwen3-8B" / "config.json"


def test_an_unsupported_block_size_names_block_size() -> None:
    # vLLM 0.28.0's selector: every backend's reason is "block_size not supported" (the message
    # is vLLM's "No valid attention backend found"); the value to change is --block-size
    model = load_model(str(QWEN3_8B))
    with pytest.raises(InputError) as exc:
        plan(model, EngineArgs(block_size=17, max_model_len=32768, kv_cache_memory_bytes=10 << 30))
    assert exc.value.source == "--block-size" and "block_size not supported" in exc.value.reason
    with pytest.raises(InputError) as exc:
        plan(model, EngineArgs(block_size=17, attention_backend="FLASH_ATTN", kv_cache_memory_bytes=10 << 30))
    assert exc.value.source == "--block-size" and "FLASH_ATTN is not valid" in exc.value.reason


def test_a_backend_refused_for_its_own_reasons_still_names_attention_backend() -> None:
    model = load_model(str(QWEN3_8B))
    with pytest.raises(InputError) as exc:
        plan(model, EngineArgs(attention_backend="FLASH_ATTN_MLA", kv_cache_memory_bytes=10 << 30))
    assert exc.value.source == "--attention-backend"


@pytest.mark.parametrize("value", ["nan", "inf", "-inf"])
def test_a_non_finite_utilization_names_the_flag(value: str) -> None:
    r = CliRunner().invoke(cli, ["plan", "--model", str(QWEN3_8B), "--gpu-memory-utilization", value])
    assert r.exit_code == 2
    assert f"--gpu-memory-utilization: '{value}' is not a finite number" in r.output
    assert "EngineArgs" not in r.output


def test_a_typo_in_a_config_yaml_names_the_file(tmp_path: Path) -> None:
    cfg = tmp_path / "serve.yaml"
    cfg.write_text("max-modle-len: 1000\n")
    with pytest.raises(InputError) as exc:
        parse_serve(f"vllm serve m/x --config {cfg}", {})
    assert exc.value.line().startswith(f"--serve: --config {cfg}: --max-modle-len: ")
    assert "has no such option" in exc.value.reason


def test_a_missing_model_in_defaults_names_defaults_model(tmp_path: Path) -> None:
    toml = tmp_path / "p.toml"
    toml.write_text('[defaults]\nmodel = "nope/config.json"\n[profiles.fast]\nmax-model-len = 1000\n')
    with pytest.raises(InputError) as exc:
        load_profiles(toml)
    assert exc.value.line().startswith(f"{toml}: defaults.model: ") and "no such file" in exc.value.line()
    toml.write_text('[defaults]\nmodel = "a.json"\n[profiles.fast]\nmodel = "nope/config.json"\n')
    with pytest.raises(InputError) as exc:
        load_profiles(toml)
    assert exc.value.line().startswith(f"{toml}: profiles.fast.model: ")


@settings(max_examples=300, deadline=None)
@given(st.one_of(st.floats(allow_nan=True, allow_infinity=True).map(repr), st.text(max_size=20)))
def test_a_float_flag_is_finite_or_refused_naming_it(text: str) -> None:
    flag = FLAGS_BY_NAME["gpu-memory-utilization"]
    try:
        value = parse_value(flag, text, "--gpu-memory-utilization", None)
    except InputError as exc:
        assert exc.line().startswith("--gpu-memory-utilization: ") and "\n" not in exc.line()
        return
    assert math.isfinite(value)

"""check-log and the architecture vLLM resolves a config to where it is not the declared one:
vLLM 0.30.0+ serve a ``DeepseekV4ForCausalLM`` config with ``vision_n_layers > 0`` as
``DeepseekV4ForConditionalGeneration`` (``DeepseekV4ModelArchConfigConvertor``), and its
``Resolved architecture`` line names the wrapper."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from dryboot.checklog.check import check_log
from dryboot.errors import InputError
from dryboot.vllm.models.deepseek_v4 import WRAPPER_RELEASES, served_architecture
from dryboot.vllm.transformers_utils.config import load_model

from .conftest import REPO

WRAPPER_CONFIG = REPO / "tests" / "fidelity" / "data" / "architectures" / "DeepseekV4ForConditionalGeneration.json"


def _text_named(tmp_path: Path, vision_n_layers: int) -> Path:
    config = json.loads(WRAPPER_CONFIG.read_text())
    config["architectures"] = ["DeepseekV4ForCausalLM"]
    config["vision_n_layers"] = vision_n_layers
    path = tmp_path / "config.json"
    path.write_text(json.dumps(config))
    return path


def _log(version: str) -> str:
    return (
        f"INFO 10-01 00:00:00 [api_server.py:1] vLLM API server version {version}\n"
        "INFO 10-01 00:00:00 [utils.py:1] non-default args: {'model': 'x', 'kv_cache_dtype': 'fp8', "
        "'max_model_len': 4096}\n"
        "INFO 10-01 00:00:00 [model.py:1] Resolved architecture: DeepseekV4ForConditionalGeneration\n"
        "INFO 10-01 00:00:01 [kv_cache_utils.py:1] GPU KV cache size: 1,000 tokens\n"
    )


@pytest.mark.parametrize("version", ["0.29.0", "0.30.0", "0.33.0"])
def test_a_text_named_config_with_a_tower_is_served_as_the_wrapper(tmp_path: Path, version: str) -> None:
    model = load_model(_text_named(tmp_path, 2))
    expected = "DeepseekV4ForConditionalGeneration" if version in WRAPPER_RELEASES else "DeepseekV4ForCausalLM"
    assert served_architecture(model, version) == expected
    assert served_architecture(load_model(_text_named(tmp_path, 0)), version) == "DeepseekV4ForCausalLM"


def test_check_log_accepts_the_wrapper_line_where_vllm_routes_to_it(tmp_path: Path) -> None:
    config = _text_named(tmp_path, 2)
    report = check_log(_log("0.33.0"), source="routed.log", model_path=str(config))
    assert not any("the log serves" in n for n in report.notes)
    with pytest.raises(InputError, match="the log serves DeepseekV4ForConditionalGeneration"):
        check_log(_log("0.29.0"), source="routed.log", model_path=str(config))
    with pytest.raises(InputError, match="the log serves DeepseekV4ForConditionalGeneration"):
        check_log(_log("0.33.0"), source="routed.log", model_path=str(_text_named(tmp_path, 0)))

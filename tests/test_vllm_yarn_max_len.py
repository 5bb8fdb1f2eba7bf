"""A YaRN config's derived maximum length per release (``VersionRules.yarn_max_len_prescaled``).

Qwen3-8B's published config (``tests/data/configs/public/Qwen--Qwen3-8B``, 40,960 positions) with
the YaRN block Qwen's model card tells users to add (factor 4 over 32,768 positions). vLLM's
answers, recorded with the e2e oracle (``tests/fidelity/e2e_harness.py`` ``OracleRunner``) on
2026-12-05: 0.28.0 serves it at 131,072 tokens when no ``--max-model-len`` is given (32,768 x 4);
0.30.0 refuses ``--max-model-len 131072`` ("User-specified max_model_len (131072) is greater than
the derived max_model_len (max_position_embeddings=40960.0 ..."); 0.33.0's ``ModelConfig`` derives
40,960.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path

import pytest

from dryboot.errors import InputError
from dryboot.vllm.config.resolve import derive_max_model_len
from dryboot.vllm.engine_args import EngineArgs
from dryboot.vllm.transformers_utils.config import geometry_from_config
from dryboot.vllm.versions import VersionRules

CONFIG = Path(__file__).resolve().parent / "data/configs/public/Qwen--Qwen3-8B/config.json"


def _model() -> object:
    config = json.loads(CONFIG.read_text())
    config["rope_scaling"] = {"rope_type": "yarn", "factor": 4.0, "original_max_position_embeddings": 32768}
    return geometry_from_config(config, "config.json")


def test_release_derives_as_vllm() -> None:
    model = _model()
    assert derive_max_model_len(model, EngineArgs(vllm_version="0.28.0")) == 131072  # type: ignore[arg-type]
    assert derive_max_model_len(model, EngineArgs(vllm_version="0.33.0")) == 40960  # type: ignore[arg-type]
    with pytest.raises(InputError, match="greater than the derived max_model_len"):
        derive_max_model_len(model, EngineArgs(vllm_version="0.30.0", max_model_len=131072))  # type: ignore[arg-type]


def test_yarn_switch_is_needed(flip_rules: Callable[..., VersionRules]) -> None:
    flip_rules("0.30.0", yarn_max_len_prescaled=False)
    got = derive_max_model_len(_model(), EngineArgs(vllm_version="0.30.0", max_model_len=131072))  # type: ignore[arg-type]
    assert got == 131072  # flipped: vLLM 0.30.0's refusal is lost

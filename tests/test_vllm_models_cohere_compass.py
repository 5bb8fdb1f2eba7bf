"""Cohere Compass (``CohereCompassForConditionalGeneration``, vLLM 0.30.0-0.33.0's
``cohere_compass.py``): its text_config's sliding and full layers planned as Cohere2's, with the
config class's own rules (recorded cases: ``fidelity/test_release_architectures.py``)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner

from dryboot.cli import cli

TINY = Path(__file__).resolve().parent / "fidelity" / "data" / "architectures"
ARCH = "CohereCompassForConditionalGeneration"


def _config() -> dict[str, Any]:
    config: dict[str, Any] = json.loads((TINY / f"{ARCH}.json").read_text())
    return config


def _plan(tmp_path: Path, config: dict[str, Any], *flags: str) -> tuple[int, str]:
    path = tmp_path / "config.json"
    path.write_text(json.dumps(config))
    argv = ["plan", "--vllm-version", "0.33.0", "--model", str(path), "--kv-cache-memory-bytes", "1G", *flags]
    res = CliRunner().invoke(cli, argv)
    return res.exit_code, " ".join(res.output.split())


def test_sliding_and_full_layers_by_layer_types(tmp_path: Path) -> None:
    code, out = _plan(tmp_path, _config())
    assert code == 0, out
    assert "sliding window 512, 2x64" in out and "full attention, 2x64" in out, out


def test_layer_types_absent_is_every_layer_full(tmp_path: Path) -> None:
    """CohereCompassTextConfig writes all-full layer_types (no sliding_window_pattern)."""
    config = _config()
    config["text_config"].pop("layer_types")
    config["text_config"]["sliding_window_pattern"] = 2
    code, out = _plan(tmp_path, config)
    assert code == 0, out
    assert "sliding window" not in out, out


def test_head_dim_is_hidden_over_heads(tmp_path: Path) -> None:
    """The config class overwrites head_dim with hidden_size // num_attention_heads."""
    config = _config()
    config["text_config"]["head_dim"] = 128
    code, out = _plan(tmp_path, config)
    assert code == 0 and "2x64" in out, out


@pytest.mark.parametrize("tie", [False, "absent"])
def test_untied_top_level_is_refused(tmp_path: Path, tie: object) -> None:
    """vLLM copies the top level's tie_word_embeddings (default false) into the text config and
    CohereCompassForCausalLM asserts it."""
    config = _config()
    config.pop("tie_word_embeddings")
    if tie != "absent":
        config["tie_word_embeddings"] = tie
    code, out = _plan(tmp_path, config)
    assert code == 2 and "tie_word_embeddings" in out and "asserts it" in out, out


@pytest.mark.parametrize("per_layer_type", [True, False])
def test_scaled_rope_is_refused(tmp_path: Path, per_layer_type: bool) -> None:
    config = _config()
    yarn = {"rope_type": "yarn", "factor": 4.0}
    per_type = {"sliding_attention": yarn, "full_attention": None}
    config["text_config"]["rope_parameters"] = per_type if per_layer_type else yarn
    code, out = _plan(tmp_path, config)
    where = "rope_parameters.sliding_attention.rope_type" if per_layer_type else "rope_parameters.rope_type"
    assert code == 2 and where in out, out


def test_tower_heads_must_split_by_tp(tmp_path: Path) -> None:
    config = _config()
    config["vision_config"]["num_heads"] = 4
    code, out = _plan(tmp_path, config, "-tp", "8")
    assert code == 2 and "vision_config.num_heads" in out, out


def test_not_planned_on_0_28(tmp_path: Path) -> None:
    path = tmp_path / "config.json"
    path.write_text(json.dumps(_config()))
    res = CliRunner().invoke(cli, ["plan", "--model", str(path), "--kv-cache-memory-bytes", "1G"])
    assert res.exit_code == 2 and "0.30.0" in res.output, res.output


@pytest.mark.parametrize(
    ("flags", "nbytes"),
    [((), "29,530,624"), (("--max-model-len", "-1"), "29,530,624"), (("--max-model-len", "4096"), "29,006,336")],
)
def test_weights_given(tmp_path: Path, flags: tuple[str, ...], nbytes: str) -> None:
    """Sized (``fidelity/test_weights_cohere_compass.py``): the text layers' rotary table spans the
    derived max_model_len (8192; auto-fit builds the model at it too) or the given one."""
    code, out = _plan(tmp_path, _config(), "--gpu", "H100", *flags)
    assert code == 0 and f"TP 1: {nbytes} bytes" in out, out


def test_rope_per_layer_type_must_key_every_type(tmp_path: Path) -> None:
    """transformers 5.17 (vLLM 0.31.0) indexes rope_parameters by every layer type in use."""
    config = _config()
    config["text_config"]["rope_parameters"].pop("full_attention")
    code, out = _plan(tmp_path, config)
    assert code == 2 and "without full_attention" in out, out


@pytest.mark.parametrize(("levels", "refused"), [([1], False), ([0, 1], True)])
def test_later_stage_starts_after_the_deepstack_layers(
    tmp_path: Path, levels: list[int], refused: bool, monkeypatch: pytest.MonkeyPatch
) -> None:
    """cohere_compass.py asserts a later stage's start_layer >= len(deepstack_visual_indexes) (run on vLLM
    0.33.0's engine start: [1] served, [0, 1] an AssertionError, partition 1,3)."""
    monkeypatch.setenv("VLLM_PP_LAYER_PARTITION", "1,3")
    config = _config()
    config["vision_config"]["deepstack_visual_indexes"] = levels
    code, out = _plan(tmp_path, config, "-pp", "2")
    if refused:
        assert code == 2 and "deepstack levels" in out, out
    else:
        assert code == 0, out

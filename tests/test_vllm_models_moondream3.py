"""Moondream3 (``moondream3.py``, ``Moondream3ForCausalLM`` / ``HfMoondream``): vLLM's own
``Moondream3Config`` reads the file's ``config.text`` as the text model, whose every layer is full
causal attention; planned as Llama's layers of that geometry. The figures are checked against
vLLM's engine start in ``tests/fidelity`` (``test_architectures`` on the two tiny configs, the
one-stage and pipeline records); here, that the tiny config plans, that ``Moondream3TextConfig``'s
defaults fill absent keys, and that what is not modelled (a ``dim`` its heads do not divide, a
head_dim under the 32 rotary dimensions, TP not dividing the vision tower's heads) is refused by
name; the weights are sized (``models/moondream3.py``, checked against vLLM's records in
``tests/fidelity/test_weights_moondream3.py``), and what they do not model is refused by name."""

from __future__ import annotations

import copy
import json
from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner

from dryboot.cli import cli
from dryboot.errors import InputError
from dryboot.vllm.model_executor.model_loader.weights import Parallel, rank_weights
from dryboot.vllm.model_executor.models import moondream3

TINY = Path(__file__).resolve().parent / "fidelity" / "data" / "architectures" / "HfMoondream.json"


def plan(tmp_path: Path, config: dict[str, Any], *flags: str) -> tuple[int, str]:
    path = tmp_path / "config.json"
    path.write_text(json.dumps(config))
    argv = ["plan", "--model", str(path), "--max-model-len", "4096", "--kv-cache-memory-bytes", "4G", *flags]
    res = CliRunner().invoke(cli, argv)
    return res.exit_code, " ".join(res.output.split())


def tiny(**text: Any) -> dict[str, Any]:
    config: dict[str, Any] = json.loads(TINY.read_text())
    config["config"]["text"].update(text)
    return config


def test_planned_from_config_text(tmp_path: Path) -> None:
    """3 layers of 2 KV heads of 64 (256 // 4) in bf16: 1,536 bytes a token; 4 GiB hold 174,762
    blocks of 16 tokens."""
    rc, out = plan(tmp_path, tiny())
    assert rc == 0, out
    assert "GPU KV cache size: 2,796,192 tokens" in out


def test_moondream3_text_config_defaults(tmp_path: Path) -> None:
    """An empty ``config.text`` is Moondream3TextConfig's: 24 layers of 32 KV heads of 64,
    196,608 bytes a token; 4 GiB hold 1,365 blocks of 16 tokens."""
    config = tiny()
    config["config"]["text"] = {}
    rc, out = plan(tmp_path, config)
    assert rc == 0, out
    assert "GPU KV cache size: 21,840 tokens" in out


@pytest.mark.parametrize(
    ("change", "field", "words"),
    [
        ({"n_heads": 3}, "config.text.n_heads", "must divide config.text.dim"),
        ({"n_heads": 16, "n_kv_heads": 2}, "config.text.n_heads", "under the 32 rotary dimensions"),
        ({"n_layers": 0}, "config.text.n_layers", ""),
    ],
)
def test_refused_by_name(tmp_path: Path, change: dict[str, Any], field: str, words: str) -> None:
    rc, out = plan(tmp_path, tiny(**change))
    assert rc == 2, out
    assert field in out and words in out


def test_vision_heads_tp_must_divide(tmp_path: Path) -> None:
    config = copy.deepcopy(tiny())
    config["config"]["vision"]["enc_n_heads"] = 3
    rc, out = plan(tmp_path, config, "-tp", "2")
    assert rc == 2, out
    assert "config.vision.enc_n_heads" in out


def test_weights_sized(tmp_path: Path) -> None:
    """vLLM 0.28.0's 8,589,312 allocated bytes at TP 1 (``recorded.json``)."""
    _rc, out = plan(tmp_path, tiny(), "--gpu-memory", "80G")
    assert "(TP 1: 8,589,312 bytes, from the config alone)" in out, out


def test_language_model_only_drops_the_tower() -> None:
    """The tower and projector: 250,240 elements in bf16 at TP 1."""
    full = rank_weights(tiny(), Parallel())
    text = rank_weights(tiny(), Parallel(), language_model_only=True)
    assert full.param_bytes - text.param_bytes == 2 * 250_240
    assert text.by_kind["tau"] == 3 * 2 * (4 + 2 * 4 * 768)


def test_defaults_fill_absent_sections() -> None:
    """Absent ``moe`` / ``vision`` objects are the config classes' defaults (64 experts from layer
    4, SigLIP-so400m-sized tower)."""
    assert moondream3.sections({"config": {}}) == (
        moondream3.TEXT_DEFAULTS,
        moondream3.MOE_DEFAULTS,
        moondream3.VISION_DEFAULTS,
    )


def _vision(**change: Any) -> dict[str, Any]:
    config = tiny()
    config["config"]["vision"].update(change)
    return config


@pytest.mark.parametrize(
    ("config", "par", "words"),
    [
        (tiny(moe={"start_layer": 1, "n_experts": 6, "expert_inner_dim": 128}), Parallel(tp=4), "moe.n_experts"),
        (tiny(), Parallel(tp=2, expert_parallel=True), "--enable-expert-parallel"),
        ({**tiny(), "quantization_config": {"quant_method": "fp8"}}, Parallel(), "quantized"),
        (_vision(enc_n_heads=3), Parallel(), "config.vision.enc_n_heads"),
        (_vision(proj_inner_dim=255), Parallel(tp=2), "proj_inner_dim"),
        (tiny(moe=[]), Parallel(), "config.text.moe"),
    ],
)
def test_weights_refused_by_name(config: dict[str, Any], par: Parallel, words: str) -> None:
    with pytest.raises(InputError, match=words):
        rank_weights(config, par)


def test_rotary_width() -> None:
    """``int(head_dim x (32 / head_dim))`` rotary dimensions, cosines and sines of half each."""
    assert [moondream3.rotary_width(hd) for hd in (32, 64, 96, 128)] == [32, 32, 32, 32]

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


def test_forward_shape_reads_config_text() -> None:
    """The profile run's widths come from ``config.text`` (the family's ``forward_config`` hook:
    ``Moondream3TextConfig``'s standard attributes), its image encoder from ``config.vision``
    (images only, as ``get_supported_mm_limits`` offers)."""
    from dryboot.vllm.worker.profile_run import forward_shape

    shape = forward_shape(json.loads(TINY.read_text()))
    text = json.loads(TINY.read_text())["config"]["text"]
    assert (shape.vocab_size, shape.hidden_size, shape.intermediate_size) == (1024, 256, 512)
    assert (shape.moe_intermediate_size, shape.experts_per_token) == (128, 2)
    assert (shape.q_size, shape.kv_size) == (4 * 64, 2 * 64) == (text["n_heads"] * 64, text["n_kv_heads"] * 64)
    assert (shape.multimodal, shape.modalities, shape.vision_tower) == ("image_encoder_config", ("image",), None)
    defaults = forward_shape({"architectures": ["Moondream3ForCausalLM"], "config": {}})
    assert (defaults.vocab_size, defaults.hidden_size, defaults.moe_intermediate_size) == (51200, 2048, 1024)
    assert defaults.experts_per_token == 8


@pytest.mark.parametrize(
    ("flags", "code", "words"),
    [
        ((), 3, "dryboot does not bound the moondream3_vision tower's forward"),
        (("--language-model-only",), 0, "verdict: fits"),
        (("--limit-mm-per-prompt", '{"image": 0}'), 0, "verdict: fits"),
    ],
)
def test_budget_given(tmp_path: Path, flags: tuple[str, ...], code: int, words: str) -> None:
    """``plan --gpu`` budgets Moondream3 (the sampler's vocabulary read from ``config.text``);
    its image encoder's profile is refused by name where vLLM runs it."""
    path = tmp_path / "config.json"
    path.write_text(TINY.read_text())
    res = CliRunner().invoke(cli, ["plan", "--model", str(path), "--gpu", "H100", *flags])
    out = " ".join(res.output.split())
    assert res.exit_code == code, out
    assert words in out
    assert "sampler's logits cannot be bounded" not in out


def test_forward_config_malformed_moe_refused() -> None:
    from dryboot.vllm.worker.profile_run import forward_shape

    config = tiny(moe={"expert_inner_dim": 0})
    with pytest.raises(InputError, match=r"config\.text\.moe\.expert_inner_dim"):
        forward_shape(config)

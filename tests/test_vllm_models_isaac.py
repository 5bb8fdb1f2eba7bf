"""Isaac (``isaac.py``): a Qwen3 language model built on the file's top-level config (``IsaacConfig``
is a ``Qwen3Config``) beside a SigLIP-2 tower, planned through Qwen3. The figures are checked
against vLLM's engine start in ``tests/fidelity`` (``test_architectures`` on the tiny config with
its stand-in tokenizer, the one-stage and pipeline records of every release); here, that the
decoder layers are planned from ``text_config`` where the file gives one, that a file whose
``text_config`` disagrees with its top level on a key the model class reads there (the lm_head's
``vocab_size`` / ``hidden_size``, the M-RoPE's ``head_dim``), a ``head_dim`` the M-RoPE sections
cannot split, a partial rotary factor and a tower whose heads do not divide its width are refused
by name (exit 2, one line, the field named), and that a ``text_config`` equal to the top level
plans as the top level alone."""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner

from dryboot.cli import cli

ARCHS = Path(__file__).resolve().parent / "fidelity" / "data" / "architectures"
TINY = ARCHS / "IsaacForConditionalGeneration.json"
sys.path.insert(0, str(ARCHS.parents[1]))
#: the tiny config's Qwen3 keys (its text_config when the file gives one), as the recorded cases copy them
from isaac_cases import TEXT_KEYS  # noqa: E402


def plan(tmp_path: Path, config: dict[str, Any], *flags: str) -> tuple[int, str]:
    path = tmp_path / "config.json"
    path.write_text(json.dumps(config))
    argv = ["plan", "--model", str(path), "--max-model-len", "8192", "--kv-cache-memory-bytes", "4G", *flags]
    res = CliRunner().invoke(cli, argv)
    return res.exit_code, " ".join(res.output.split())


def tiny() -> dict[str, Any]:
    config: dict[str, Any] = json.loads(TINY.read_text())
    return config


def with_text_config(**change: Any) -> dict[str, Any]:
    config = tiny()
    config["text_config"] = {"model_type": "qwen3", **{k: config[k] for k in TEXT_KEYS}, **change}
    return config


def test_planned_through_qwen3(tmp_path: Path) -> None:
    """3 layers of 2 KV heads of 128: 3 KiB a token; 4 GiB hold 87,381 blocks of 16 tokens."""
    rc, out = plan(tmp_path, tiny())
    assert rc == 0, out
    assert "GPU KV cache size: 1,398,096 tokens" in out


def test_an_agreeing_text_config_plans_alike(tmp_path: Path) -> None:
    rc, out = plan(tmp_path, with_text_config())
    rc0, out0 = plan(tmp_path, tiny())
    assert rc == rc0 == 0, out
    assert out.split("Weights")[0] == out0.split("Weights")[0]


def test_the_layers_are_text_configs(tmp_path: Path) -> None:
    """vLLM builds the decoder layers from text_config (recorded: 4 KV heads there under a top
    level of 2 give 43,690 blocks of 16 tokens, half the tiny config's)."""
    rc, out = plan(tmp_path, with_text_config(num_key_value_heads=4))
    assert rc == 0, out
    assert "GPU KV cache size: 699,040 tokens" in out


@pytest.mark.parametrize(
    ("config", "field", "words"),
    [
        (with_text_config(head_dim=64), "text_config.head_dim", "two configs for one model are not modelled"),
        (with_text_config(vocab_size=2048), "text_config.vocab_size", "lm_head"),
        (with_text_config(hidden_size=1024), "text_config.hidden_size", "where the top level gives 512"),
        ({**tiny(), "partial_rotary_factor": 0.5}, "partial_rotary_factor", "span the whole head_dim"),
        ({**tiny(), "head_dim": 100}, "head_dim", "not a multiple of 8"),
        (
            {**tiny(), "vision_config": {**tiny()["vision_config"], "num_attention_heads": 3}},
            "vision_config.num_attention_heads",
            "must divide vision_config.hidden_size (128)",
        ),
    ],
)
def test_what_the_model_class_cannot_compose_is_refused(
    tmp_path: Path, config: dict[str, Any], field: str, words: str
) -> None:
    rc, out = plan(tmp_path, config)
    assert rc == 2, out
    assert field in out and words in out, out
    assert "Traceback" not in out


@pytest.mark.parametrize("tp", [1, 2])
def test_serve_mm_encoder_tp_mode_data_builds_the_tower_whole(tp: int) -> None:
    """``--mm-encoder-tp-mode data`` (Isaac's class has ``supports_encoder_tp_data``) builds the
    SigLIP-2 tower whole on every TP rank and keeps the projector split (recorded:
    ``recorded-*-mmtp.json``): under TP the rank holds more than in weights mode; at TP 1 the two
    modes hold the same tensors; a text-only model is unaffected."""

    def weights(arch: str, tp: int, mode: str) -> dict[str, Any]:
        serve = f"vllm serve x --max-model-len 8192 --tensor-parallel-size {tp} --mm-encoder-tp-mode {mode}"
        res = CliRunner().invoke(
            cli, ["plan", "--json", "--model", str(ARCHS / f"{arch}.json"), "--gpu", "H100", "--serve", serve]
        )
        doc: dict[str, Any] = json.loads(res.stdout[res.stdout.find("{") :])
        return dict(doc["weights"])

    data, plain = (weights("IsaacForConditionalGeneration", tp, mode) for mode in ("data", "weights"))
    assert data["refused"] is None and plain["refused"] is None
    same = data["stages"][0]["allocated_bytes"] == plain["stages"][0]["allocated_bytes"]
    assert same == (tp == 1)
    assert weights("Qwen3ForCausalLM", tp, "data")["refused"] is None

"""FireRedASR2 (``fireredasr2.py``): a Qwen2 language model built on the file's top-level config
beside a replicated Conformer audio encoder, planned through Qwen2. The figures are checked
against vLLM's engine start in ``tests/fidelity`` (``test_architectures``, the one-stage and
pipeline records of every release); here, what vLLM's model class refuses while it builds, and
that dryboot refuses the same configs by name (exit 2, one line, the field named)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner

from config_changes import changed
from dryboot.cli import cli

ARCHS = Path(__file__).resolve().parent / "fidelity" / "data" / "architectures"
TINY = ARCHS / "FireRedASR2ForConditionalGeneration.json"


def plan(tmp_path: Path, config: dict[str, Any], *flags: str) -> tuple[int, str]:
    path = tmp_path / "config.json"
    path.write_text(json.dumps(config))
    argv = ["plan", "--model", str(path), "--max-model-len", "8192", "--kv-cache-memory-bytes", "4G", *flags]
    res = CliRunner().invoke(cli, argv)
    return res.exit_code, " ".join(res.output.split())


def tiny() -> dict[str, Any]:
    config: dict[str, Any] = json.loads(TINY.read_text())
    return config


def test_planned_through_qwen2(tmp_path: Path) -> None:
    """vLLM 0.28.0 and 0.33.0 serve the tiny config with 174,762 blocks of 16 tokens (recorded)."""
    rc, out = plan(tmp_path, tiny())
    assert rc == 0, out
    assert "GPU KV cache size: 2,796,192 tokens" in out


@pytest.mark.parametrize(
    ("change", "field", "words"),
    [
        ({"audio_encoder_conf": None}, "audio_encoder_conf", "required field is missing"),
        ({"audio_encoder_conf": {"idim": 80, "n_layers_enc": 2, "n_head": 4}}, "audio_encoder_conf.d_model", "missing"),
        ({"conf": {"dropout": 0.1}}, "audio_encoder_conf.dropout", "not an argument of vLLM's ConformerEncoder"),
        ({"conf": {"n_head": 3}}, "audio_encoder_conf.n_head", "must divide d_model (128)"),
        ({"conf": {"kernel_size": 32}}, "audio_encoder_conf.kernel_size", "must be odd"),
        ({"conf": {"d_model": 0}}, "audio_encoder_conf.d_model", "positive integer"),
        ({"encoder_downsample_rate": None}, "encoder_downsample_rate", "required field is missing"),
    ],
)
def test_what_the_model_class_refuses_is_refused(
    tmp_path: Path, change: dict[str, Any], field: str, words: str
) -> None:
    config = changed(tiny(), {k: v for k, v in change.items() if k != "conf"})
    if "conf" in change:
        config["audio_encoder_conf"] = {**config["audio_encoder_conf"], **change["conf"]}
    rc, out = plan(tmp_path, config)
    assert rc == 2, out
    assert field in out and words in out, out
    assert "Traceback" not in out


def test_no_pipeline_parallelism(tmp_path: Path) -> None:
    """No ``SupportsPP``: vLLM refuses ``--pipeline-parallel-size 2`` (recorded in
    ``data/pipeline``), and so does dryboot."""
    rc, out = plan(tmp_path, tiny(), "--pipeline-parallel-size", "2")
    assert rc == 2 and "SupportsPP" in out, out

"""Whisper (``whisper.py``): the decoder's self-attention and cross-attention caches. The figures are
checked against vLLM's engine start in ``tests/fidelity`` (``test_architectures``, the release, pipeline
and one-stage records, the corpus's ``openai/whisper-small``); here, the figures of one recorded case
and what dryboot refuses by name (exit 2, one line, the flag or field named)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from click.testing import CliRunner

from dryboot.cli import cli

TINY = Path(__file__).resolve().parent / "fidelity" / "data" / "architectures" / "WhisperForConditionalGeneration.json"


def plan(tmp_path: Path, config: dict[str, Any], *flags: str) -> tuple[int, str]:
    path = tmp_path / "config.json"
    path.write_text(json.dumps(config))
    res = CliRunner().invoke(cli, ["plan", "--model", str(path), "--vllm-version", "0.28.0", *flags])
    return res.exit_code, " ".join(res.output.split())


def tiny(**changes: Any) -> dict[str, Any]:
    config: dict[str, Any] = json.loads(TINY.read_text())
    return {**config, **changes}


def test_cross_attention_blocks_count_the_scheduler_budget(tmp_path: Path) -> None:
    """Recorded on 0.28.0 (data/architectures/recorded.json): --block-size 64 at 4096 tokens, 149,713,607 B:
    571 blocks of 131,072 B x 2 layers; a request holds cdiv(4096, 64) + cdiv(8192, 64) = 192 blocks."""
    rc, out = plan(
        tmp_path, tiny(), "--max-model-len", "4096", "--kv-cache-memory-bytes", "149713607", "--block-size", "64"
    )
    assert rc == 0, out
    assert "GPU KV cache size: 12,181 tokens, Maximum concurrency for 4,096 tokens per request: 2.97x" in out


def test_budget_below_max_model_len_is_refused(tmp_path: Path) -> None:
    rc, out = plan(tmp_path, tiny(), "--max-model-len", "4096", "--max-num-batched-tokens", "1024")
    assert rc == 2
    assert "--max-num-batched-tokens: 1024: max_num_batched_tokens (1024) is smaller than max_model_len (4096)" in out


def test_decoder_heads_tp_does_not_divide_are_refused(tmp_path: Path) -> None:
    rc, out = plan(tmp_path, tiny(decoder_attention_heads=16), "-tp", "8", "--kv-cache-memory-bytes", "1G")
    assert rc == 0, out
    rc, out = plan(tmp_path, tiny(decoder_attention_heads=4), "-tp", "8", "--kv-cache-memory-bytes", "1G")
    assert rc == 2
    assert "decoder_attention_heads" in out and "AssertionError" in out


def test_pipeline_parallelism_and_other_backends_are_refused(tmp_path: Path) -> None:
    rc, out = plan(tmp_path, tiny(), "-pp", "2", "--kv-cache-memory-bytes", "1G")
    assert rc == 2 and "Pipeline parallelism is not supported for this model" in out
    rc, out = plan(tmp_path, tiny(), "--attention-backend", "FLASHINFER", "--kv-cache-memory-bytes", "1G")
    assert rc == 2 and "attention type AttentionType.ENCODER_DECODER not supported" in out

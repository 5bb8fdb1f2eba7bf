"""Whisper's weights (``models/whisper.py``: ``WhisperForConditionalGeneration``) against vLLM's
own figures: parameter, buffer and allocated bytes per rank, for the tiny config and the published
``openai/whisper-small`` (``data/weights/configs/openai--whisper-small``, the corpus copy; float32,
served as bfloat16). Needs no vLLM.

Recorded by ``record_weights.py --tiny WhisperForConditionalGeneration`` and ``record_weights.py
openai--whisper-small`` in each release's boot environment (``RECORD_WEIGHTS_OUT``): 0.28.0 into
``recorded.json``, 0.33.0 into ``recorded-0.33.0-whisper.json`` (TP 1/2/4/8 and PP 3 each), the
tiny config on 0.27.1 into ``recorded-0.27.1.json`` (every flag set), and its TP 1 case on
0.30.0-0.33.0 (``RECORD_WEIGHTS_FLAGS="--tensor-parallel-size 1"``) into
``recorded-<release>-sweep.json``. vLLM refuses pipeline parallelism (no ``SupportsPP``) and
whisper-small at TP 8 (12 heads); dryboot refuses them too."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from weights_records import int_flag, recorded_cases

import dryboot.vllm.model_executor.models  # noqa: F401  (registers the families of models/)
from dryboot.errors import InputError
from dryboot.vllm.model_executor.model_loader.weights import Parallel, checkpoint_rank_weights, rank_weights
from dryboot.vllm.worker.profile_run import encoder_profiled, forward_shape

HERE = Path(__file__).resolve().parent
DATA = HERE / "data" / "weights"
TINY = HERE / "data" / "architectures" / "WhisperForConditionalGeneration.json"
SMALL = DATA / "configs" / "openai--whisper-small" / "config.json"
CONFIGS = {"arch--WhisperForConditionalGeneration": TINY, "openai--whisper-small": SMALL}
FILES = {
    "0.27.1": "recorded-0.27.1.json",
    "0.28.0": "recorded.json",
    "0.30.0": "recorded-0.30.0-sweep.json",
    "0.31.0": "recorded-0.31.0-sweep.json",
    "0.32.0": "recorded-0.32.0-sweep.json",
    "0.33.0": "recorded-0.33.0-whisper.json",
}
RECORDED = recorded_cases(FILES, lambda row: row["config"] in CONFIGS)


def _config(name: str) -> dict[str, Any]:
    return dict(json.loads(CONFIGS[name].read_text()))


def test_every_release_recorded() -> None:
    for version, name in FILES.items():
        assert json.loads((DATA / name).read_text())["vllm"] == version
    counts = {v: sum(1 for (version, _) in RECORDED if version == v) for v in FILES}
    assert counts == {"0.27.1": 5, "0.28.0": 10, "0.30.0": 1, "0.31.0": 1, "0.32.0": 1, "0.33.0": 10}
    served = sum(1 for row in RECORDED.values() if row["ok"])
    assert served == 4 + 7 + 3 + 7  # 0.27.1 + 0.28.0 + 0.30.0-0.32.0 (TP 1) + 0.33.0
    sweep = json.loads((DATA / "recorded-0.33.0-sweep.json").read_text())["cases"]
    cid = "arch--WhisperForConditionalGeneration --tensor-parallel-size 1"
    assert sweep[cid]["param_bytes"] == RECORDED[("0.33.0", cid)]["param_bytes"]


@pytest.mark.parametrize(("version", "cid"), sorted(RECORDED))
def test_matches_vllm(version: str, cid: str) -> None:
    """Every rank's bytes as the release builds them (the encoder, the decoder with its
    ``Attention`` and ``CrossAttention`` scales, ``proj_out`` tied to ``embed_tokens``), or
    refused where vLLM refuses (pipeline parallelism, heads TP does not divide)."""
    row: dict[str, Any] = RECORDED[(version, cid)]
    config, argv = _config(row["config"]), row["argv"]
    tp, pp = int_flag(argv, "--tensor-parallel-size"), int_flag(argv, "--pipeline-parallel-size")
    par = Parallel(tp=tp, pp=pp, vllm_version=version)
    if not row["ok"]:
        with pytest.raises(InputError, match=r"pipeline parallelism|not divisible"):
            rank_weights(config, par)
        return
    w = rank_weights(config, par)
    assert [w.param_bytes, w.buffer_bytes, w.allocated_bytes] == [
        row["param_bytes"],
        row["buffer_bytes"],
        row["allocated_bytes"],
    ]


def test_float16_tiny_and_bfloat16_small() -> None:
    """The tiny config is float16; whisper-small's float32 is served as bfloat16 (2 bytes) too."""
    assert set(RECORDED[("0.28.0", "arch--WhisperForConditionalGeneration --tensor-parallel-size 1")]["by_dtype"]) == {
        "torch.float16"
    }
    assert set(RECORDED[("0.28.0", "openai--whisper-small --tensor-parallel-size 1")]["by_dtype"]) == {"torch.bfloat16"}


@pytest.mark.parametrize(
    ("change", "kwargs", "words"),
    [
        ({"quantization_config": {"quant_method": "fp8"}}, {}, "quantized WhisperForConditionalGeneration"),
        ({}, {"language_model_only": True}, "Whisper without its encoder"),
        ({}, {"limit_mm_per_prompt": {"audio": 0}}, "Whisper without its encoder"),
        ({"decoder_attention_heads": 6}, {"tp": 4}, "decoder_attention_heads"),
        ({"decoder_ffn_dim": 1026}, {"tp": 4}, "decoder_ffn_dim"),
    ],
)
def test_refused_by_name(change: dict[str, Any], kwargs: dict[str, Any], words: str) -> None:
    config = {**_config("arch--WhisperForConditionalGeneration"), **change}
    par = Parallel(tp=kwargs.pop("tp", 1))
    with pytest.raises(InputError, match=words):
        rank_weights(config, par, **kwargs)


def test_proj_out_tied_whatever_the_config_says() -> None:
    """``WhisperForConditionalGeneration.__init__`` ties ``proj_out`` to ``embed_tokens``
    unconditionally: ``tie_word_embeddings`` false adds no head."""
    config = _config("openai--whisper-small")
    tied = rank_weights(config, Parallel(tp=2))
    untied = rank_weights({**config, "tie_word_embeddings": False}, Parallel(tp=2))
    assert untied.param_bytes == tied.param_bytes == 285187584


def test_checkpoint_headers_refused_by_name() -> None:
    with pytest.raises(InputError, match="--load-format dummy"):
        checkpoint_rank_weights({}, _config("openai--whisper-small"), Parallel())


def test_profile_run_reads_the_decoder_and_profiles_the_encoder() -> None:
    """The budget's activation term: the decoder's widths, and the encoder vLLM profiles first
    (refused by name by the budget unless ``--skip-mm-profiling`` skips it)."""
    shape = forward_shape(_config("openai--whisper-small"))
    assert (shape.hidden_size, shape.intermediate_size, shape.q_size) == (768, 3072, 768)
    assert shape.multimodal == "audio_config" and shape.modalities == ("audio",)
    assert encoder_profiled(shape)
    assert not encoder_profiled(shape, skip_mm_profiling=True)


def _plan(*flags: str) -> tuple[int, str]:
    from click.testing import CliRunner

    from dryboot.cli import cli

    args = ["plan", "--model", str(SMALL.parent), "--vllm-version", "0.28.0", "--gpu", "RTX 4090", *flags]
    res = CliRunner().invoke(cli, args)
    return res.exit_code, " ".join(res.output.split())


def test_plan_gpu_budgets_whisper_small() -> None:
    """``plan --gpu``: the weights term is the walk's (483,598,848 B on one rank: 0.45 GiB); the
    encoder's profile run is refused by name (exit 3) with the one flag that skips it, and
    ``--skip-mm-profiling`` gives the budget."""
    rc, out = _plan()
    assert rc == 3, out
    assert "multimodal encoder profiling" in out and "whisper encoder tower's forward" in out
    # the decoder reads the encoder's outputs: only --skip-mm-profiling is offered (not
    # --language-model-only or a zero audio limit, which leave no model to serve)
    assert "--skip-mm-profiling skips it (an encoder-decoder model" in out and "--language-model-only" not in out
    rc, out = _plan("--skip-mm-profiling")
    assert rc == 0, out
    assert "weights: 0.45 GiB" in out and "verdict: fits" in out

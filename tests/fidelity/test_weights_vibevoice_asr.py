"""VibeVoice-ASR's weights (``VibeVoiceAsrForConditionalGeneration`` through the Transformers modeling
backend, ``model_executor/models/vibevoice_asr.py``) against vLLM's own figures: parameter, buffer and
allocated bytes of each pipeline stage's rank 0. Needs no vLLM.

Recorded by ``record_weights.py --tiny VibeVoiceAsrForConditionalGeneration`` in each release's boot
environment (``RECORD_WEIGHTS_OUT``), every flag set (TP 1/2/4/8, TP 2 x PP 3) and
``--language-model-only`` at TP 1 / 2 (added to the recorder's flag sets for this config, which names no
tower key): ``recorded-<release>-vibevoice-asr.json`` for 0.27.1-0.33.0 (0.29.0 without the
``--language-model-only`` sets, recorded by the recorder as it stands; the TP 1
cases of 0.30+ also in ``recorded-<release>-sweep.json``). The tiny config's two tokenizer encoders are
``VibeVoiceAcousticTokenizerEncoderConfig``'s defaults (about 680 M parameters each) beside a 4-layer
Qwen2 text model. ``recorded-0.33.0-vibevoice-asr-overlay.json``: with ``RECORD_WEIGHTS_OVERLAY`` an empty
``semantic_tokenizer_encoder_config`` (the encoder class's 64-wide default, not the 128 of an absent one) and
the text config's ``tie_word_embeddings`` true (the head tied), ``RECORD_WEIGHTS_FLAGS="--tensor-parallel-size
2"`` (TP 2, TP 2 x PP 3). ``recorded-0.33.0-backend-mm-limits.json``: ``--limit-mm-per-prompt`` audio 0 at
TP 1 / 2 (the encoders stay)."""

from __future__ import annotations

import json
from collections.abc import Callable
from typing import Any

import pytest
from weights_records import DATA, assert_stages, broken_cases, overlaid_tiny, stage_parallel

import dryboot.vllm.model_executor.models  # noqa: F401  (registers the families of models/)
from dryboot.errors import InputError
from dryboot.vllm.model_executor.model_loader.weights import rank_weights
from dryboot.vllm.versions import VersionRules

ARCH = "VibeVoiceAsrForConditionalGeneration"
RELEASES = ("0.27.1", "0.28.0", "0.29.0", "0.30.0", "0.31.0", "0.32.0", "0.33.0")
FILES = {
    **{f"recorded-{v}-vibevoice-asr.json": v for v in RELEASES},
    "recorded-0.33.0-vibevoice-asr-overlay.json": "0.33.0",
    "recorded-0.33.0-backend-mm-limits.json": "0.33.0",
}
DOCS = {name: json.loads((DATA / name).read_text()) for name in FILES}
RECORDED = {
    (name, cid): row
    for name, doc in DOCS.items()
    for cid, row in doc["cases"].items()
    if row["config"] == f"arch--{ARCH}"
}


def _rank(name: str, row: dict[str, Any], stage: int, config: dict[str, Any] | None = None) -> Any:
    argv = row["argv"]
    par = stage_parallel(argv, stage, FILES[name])
    return rank_weights(
        config or overlaid_tiny(ARCH, DOCS[name]),
        par,
        language_model_only="--language-model-only" in argv,
        limit_mm_per_prompt=json.loads(argv[argv.index("--limit-mm-per-prompt") + 1])
        if "--limit-mm-per-prompt" in argv
        else None,
        max_num_batched_tokens=row.get("max_num_batched_tokens", 8192),
    )


def test_every_release_recorded() -> None:
    assert {name: doc["vllm"] for name, doc in DOCS.items()} == FILES
    counts = {name: sum(1 for (n, _) in RECORDED if n == name) for name in FILES}
    assert counts == {name: (2 if name.endswith(("-overlay.json", "-mm-limits.json")) else 7) for name in FILES}
    assert all(row["ok"] for row in RECORDED.values())


@pytest.mark.parametrize(("name", "cid"), sorted(RECORDED))
def test_matches_vllm(name: str, cid: str) -> None:
    """Every stage's bytes as the release builds them (both encoders and the projector on every stage,
    kept under ``--language-model-only``)."""
    assert_stages(RECORDED[(name, cid)], lambda stage: _rank(name, RECORDED[(name, cid)], stage))


def _broken(version: str) -> list[str]:
    return broken_cases(RECORDED, FILES, version, _rank)


@pytest.mark.parametrize(
    ("version", "switch", "flipped"),
    [
        ("0.28.0", "backend_text_attention_whole", False),
        ("0.30.0", "backend_text_attention_whole", False),
        ("0.33.0", "backend_text_attention_whole", True),
        ("0.30.0", "transformers_backend_vllm_attention", False),
    ],
)
def test_switch_is_needed(version: str, switch: str, flipped: bool, flip_rules: Callable[..., VersionRules]) -> None:
    """Flipped, some recorded case of the release no longer matches."""
    flip_rules(version, **{switch: flipped})
    assert _broken(version)


def test_other_tokenizer_type_refused_by_name() -> None:
    """An encoder config of another ``model_type`` makes ``AutoModel`` build another model: refused."""
    config = {
        **overlaid_tiny(ARCH, {}),
        "acoustic_tokenizer_encoder_config": {"model_type": "vibevoice_acoustic_tokenizer"},
    }
    row = RECORDED[("recorded-0.33.0-vibevoice-asr.json", f"arch--{ARCH} --tensor-parallel-size 1")]
    with pytest.raises(InputError, match="a tokenizer other than"):
        _rank("recorded-0.33.0-vibevoice-asr.json", row, 0, config)


def test_short_depths_refused_by_name() -> None:
    """transformers indexes ``depths`` once per downsampling stage past the stem: fewer fail (refused)."""
    config = {**overlaid_tiny(ARCH, {}), "semantic_tokenizer_encoder_config": {"depths": [1, 1]}}
    row = RECORDED[("recorded-0.33.0-vibevoice-asr.json", f"arch--{ARCH} --tensor-parallel-size 1")]
    with pytest.raises(InputError, match=r"semantic_tokenizer_encoder_config\.depths"):
        _rank("recorded-0.33.0-vibevoice-asr.json", row, 0, config)

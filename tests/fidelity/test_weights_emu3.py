"""Emu3's weights (``Emu3ForConditionalGeneration`` through the Transformers modeling backend,
``model_executor/models/emu3.py``) against vLLM's own figures: parameter, buffer and allocated bytes of
each pipeline stage's rank 0. Needs no vLLM.

Recorded by ``record_weights.py --tiny Emu3ForConditionalGeneration`` in each release's boot environment
(``RECORD_WEIGHTS_OUT``), every flag set (TP 1/2/4/8, TP 2 x PP 3, ``--language-model-only`` at TP 1/2):
``recorded-<release>-emu3.json`` for 0.27.1-0.33.0 (the TP 1 cases of 0.30+ also in
``recorded-<release>-sweep.json``); and on 0.27.1 with ``RECORD_WEIGHTS_OVERLAY`` one VQ-VAE head
(``{"vq_config": {"codebook_size": 64, "hidden_size": 1024, "num_attention_heads": 1}}``,
``RECORD_WEIGHTS_FLAGS="--tensor-parallel-size 2"``: its three TP 2 cases) into
``recorded-0.27.1-emu3-one-vq-head.json``: 0.27.1's fuser cuts the VQ attention into the text head
size, not the VQ heads. The tiny config's VQ-VAE is ``Emu3VQVAEConfig``'s default (270 M parameters)
beside a 4-layer text model. ``recorded-0.33.0-backend-mm-limits.json``: ``--limit-mm-per-prompt`` image 0
at TP 1 / 2 (a flag set added to the recorder's for Emu3 and VibeVoice-ASR; the VQ-VAE stays)."""

from __future__ import annotations

import json
from collections.abc import Callable
from typing import Any

import pytest
from weights_records import DATA, assert_stages, broken_cases, overlaid_tiny, stage_parallel

import dryboot.vllm.model_executor.models  # noqa: F401  (registers the families of models/)
from dryboot.errors import InputError
from dryboot.vllm.model_executor.model_loader.weights import Parallel, rank_weights
from dryboot.vllm.versions import VersionRules

ARCH = "Emu3ForConditionalGeneration"
RELEASES = ("0.27.1", "0.28.0", "0.29.0", "0.30.0", "0.31.0", "0.32.0", "0.33.0")
FILES = {
    **{f"recorded-{v}-emu3.json": v for v in RELEASES},
    "recorded-0.27.1-emu3-one-vq-head.json": "0.27.1",
    "recorded-0.33.0-backend-mm-limits.json": "0.33.0",
}
DOCS = {name: json.loads((DATA / name).read_text()) for name in FILES}
RECORDED = {
    (name, cid): row
    for name, doc in DOCS.items()
    for cid, row in doc["cases"].items()
    if row["config"] == f"arch--{ARCH}"
}


def _rank(name: str, row: dict[str, Any], stage: int, version: str | None = None) -> Any:
    argv = row["argv"]
    par = stage_parallel(argv, stage, version or FILES[name])
    return rank_weights(
        overlaid_tiny(ARCH, DOCS[name]),
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
    assert counts == {name: (3 if "one-vq-head" in name else 2 if "mm-limits" in name else 7) for name in FILES}
    assert all(row["ok"] for row in RECORDED.values())


@pytest.mark.parametrize(("name", "cid"), sorted(RECORDED))
def test_matches_vllm(name: str, cid: str) -> None:
    """Every stage's bytes as the release builds them (the VQ-VAE on every stage, kept under
    ``--language-model-only`` and ``--limit-mm-per-prompt`` image 0)."""
    assert_stages(RECORDED[(name, cid)], lambda stage: _rank(name, RECORDED[(name, cid)], stage))


def _broken(version: str) -> list[str]:
    return broken_cases(RECORDED, FILES, version, _rank)


@pytest.mark.parametrize(
    ("version", "switch", "flipped"),
    [
        ("0.27.1", "backend_text_attention_whole", True),
        ("0.28.0", "backend_text_attention_whole", False),
        ("0.30.0", "backend_text_attention_whole", False),
        ("0.31.0", "backend_text_attention_whole", True),
        ("0.33.0", "backend_text_attention_whole", True),
        ("0.27.1", "backend_splits_encoder_qkv", True),
    ],
)
def test_switch_is_needed(version: str, switch: str, flipped: bool, flip_rules: Callable[..., VersionRules]) -> None:
    """Flipped, some recorded case of the release no longer matches (the text q/k/v/o whole or split;
    0.27.1's VQ attention cut into the text head size: its one-VQ-head case over TP 2 is refused)."""
    flip_rules(version, **{switch: flipped})
    assert _broken(version)


def test_0_29_0_builds_0_28_0s_layout() -> None:
    """0.29.0's backend builds Emu3 as 0.28.0's does (text attention whole, no scale buffers): the
    two releases' records agree case for case."""
    old = DOCS["recorded-0.28.0-emu3.json"]["cases"]
    new = DOCS["recorded-0.29.0-emu3.json"]["cases"]
    assert old.keys() == new.keys()
    for cid, row in new.items():
        assert [row[k] for k in ("param_bytes", "buffer_bytes", "allocated_bytes")] == [
            old[cid][k] for k in ("param_bytes", "buffer_bytes", "allocated_bytes")
        ], cid


@pytest.mark.parametrize(
    ("vq", "version", "named"),
    [
        ({"num_attention_heads": 3}, "0.33.0", "VQ-VAE attention heads"),
        ({"base_channels": 48}, "0.33.0", "GroupNorm of 48 channels"),
        ({"temporal_downsample_factor": 3}, "0.33.0", "power of two"),
        ({"hidden_size": 1000}, "0.27.1", "text head size"),
    ],
)
def test_refused_by_name(vq: dict[str, Any], version: str, named: str) -> None:
    """What vLLM (or torch) refuses, or the backend builds otherwise, is refused naming it."""
    tiny = overlaid_tiny(ARCH, {})
    config = {**tiny, "vq_config": {**tiny["vq_config"], **vq}}
    with pytest.raises(InputError, match=named):
        rank_weights(config, Parallel(tp=2, vllm_version=version))

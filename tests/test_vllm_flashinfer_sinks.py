"""FlashInfer's attention sinks by GPU and release (``FlashInferBackend.supports_sink``): dryboot's
reasons against the backend matrix vLLM itself answered (``tests/data/gpus/backend-matrix/``, the
``cubin`` arm: flashinfer-cubin installed, as on vLLM's images). SM 9.0 takes sinks through
TRT-LLM's XQA decode from 0.30.0 (``VersionRules.flashinfer_sinks_sm90``); SM 10.x throughout;
SM 12.x from 0.28.0 (``VersionRules.flashinfer_sinks_sm120``: 0.27.1 refuses it)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from dryboot.vllm import versions
from dryboot.vllm.backends import BACKENDS, AttentionSelectorConfig, invalid_reasons
from dryboot.vllm.gpus import parse_gpu

MATRIX = Path(__file__).parent / "data" / "gpus" / "backend-matrix"
RELEASES = ("0.27.1", "0.28.0", "0.29.0", "0.30.0", "0.31.0", "0.32.0", "0.33.0")
GPUS = ("H100", "H200", "B200", "B300", "RTX 5090")
SINKS = "attention sinks not supported"


def _sink_cases(release: str) -> list[tuple[str, dict[str, Any]]]:
    doc = json.loads((MATRIX / f"vllm-{release}.json").read_text())
    return [
        (row["gpu"], c)
        for row in doc["rows"]
        if row["arm"] == "cubin" and row["gpu"] in GPUS
        for c in row.get("cases", [])
        # head sizes FlashInfer takes without sinks on every one of these GPUs
        if c.get("kind") == "standard"
        and c.get("has_sink")
        and c["kv_cache_dtype"] == "auto"
        and c["head_size"] in (64, 128, 256)
    ]


@pytest.mark.parametrize("release", RELEASES)
def test_flashinfer_sinks_as_vllm(release: str) -> None:
    rules = versions.rules_for(release)
    cases = _sink_cases(release)
    assert cases
    for gpu, c in cases:
        layer = AttentionSelectorConfig(
            c["head_size"],
            "auto",
            has_sinks=True,
            capability=parse_gpu(gpu).capability,
            flashinfer_sinks_sm90=rules.flashinfer_sinks_sm90,
            flashinfer_sinks_sm120=rules.flashinfer_sinks_sm120,
        )
        ours = SINKS in invalid_reasons(BACKENDS["FLASHINFER"], layer)
        assert ("FLASHINFER" in c["valid"]) is not ours, (release, gpu, c)


@pytest.mark.parametrize(("release", "stated"), [("0.29.0", False), ("0.30.0", True), ("0.33.0", True)])
def test_sm90_sinks_state_the_cubin_assumption(release: str, stated: bool) -> None:
    """gpt-oss with FLASHINFER on the assumed H200: from 0.30.0 whether flashinfer-cubin is installed decides
    vLLM's answer (served with it, "attention sinks not supported" without: test_releases' ``gptoss-fi-sm90``),
    so the plan states the assumption; 0.29.0 refuses either way."""
    from dryboot.errors import InputError
    from dryboot.planner.assumptions import assumptions
    from dryboot.planner.plan import plan
    from dryboot.vllm.engine_args import EngineArgs
    from dryboot.vllm.transformers_utils.config import load_model

    model = load_model(Path(__file__).parents[1] / "examples" / "models" / "gpt-oss-20b.config.json")
    args = EngineArgs(
        attention_backend="FLASHINFER", vllm_version=release, kv_cache_memory_bytes=4_000_000_000, max_model_len=4096
    )
    if not stated:
        with pytest.raises(InputError, match=SINKS):
            plan(model, args)
        return
    assert "--flashinfer-cubin" in [a.flag for a in assumptions(plan(model, args))]

"""Inkling's multimodal wrapper (``InklingForConditionalGeneration``, vLLM 0.33.0:
``model_executor/models/inkling.py``'s ``wrapper_walk``: the language model plus the HMLP vision
tower and the dMel audio tower) against vLLM's own figures: parameter, buffer and allocated bytes
of each pipeline stage's rank 0. Needs no vLLM.

``recorded-0.33.0-inkling-towers.json``, recorded in 0.33.0's boot environment with
``RECORD_WEIGHTS_OUT``:

- ``RECORD_WEIGHTS_CONFIGS=tests/fidelity/data/weights/inkling-towers record_weights.py``: eight
  stand-in configs (no Inkling config with its towers is published; each ``SOURCE`` says so) over
  the tiny text model: both towers, each alone, neither-norm variants, vision scale plans of
  patch 4 / 12 / 14 / 16 with temporal sizes 1 / 2 / 3, 1 to 7 layers (both branches of
  ``plan_out_scales``) and 3 or 4 channels; ``vision_encoder_type`` ``linear`` (vLLM asserts) and
  an enabled tower missing a field (vLLM's config refuses it);
- ``record_weights.py --tiny InklingForConditionalGeneration``: the tiny wrapper config, whose
  towers are off (its TP 1 case also in ``recorded-0.33.0-sweep.json``).

vLLM builds the towers on every stage and under ``--language-model-only`` (the class marks none);
TP 4 and 8 are refused as vLLM refuses them (the text model's KV heads)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from weights_records import int_flag

import dryboot.vllm.model_executor.models  # noqa: F401  (registers the families of models/)
from dryboot.errors import InputError
from dryboot.vllm.model_executor.model_loader.weights import Parallel, rank_weights
from dryboot.vllm.model_executor.models.inkling import hmlp_scales

HERE = Path(__file__).resolve().parent
DATA = HERE / "data" / "weights"
CONFIGS = DATA / "inkling-towers"
DOC = json.loads((DATA / "recorded-0.33.0-inkling-towers.json").read_text())
RECORDED: dict[str, dict[str, Any]] = DOC["cases"]


def _config(row: dict[str, Any]) -> dict[str, Any]:
    name = row["config"]
    if name.startswith("arch--"):
        path = HERE / "data" / "architectures" / f"{name[len('arch--') :]}.json"
    else:
        path = CONFIGS / name / "config.json"
    config: dict[str, Any] = json.loads(path.read_text())
    return config


def test_recorded() -> None:
    assert DOC["vllm"] == "0.33.0"
    assert len(RECORDED) == 79
    assert sum(1 for row in RECORDED.values() if row["ok"]) == 40
    # the towers stay under --language-model-only (no _mark_tower_model)
    for cid, row in RECORDED.items():
        if "--language-model-only" in cid and row["ok"]:
            plain = RECORDED[cid.replace(" --language-model-only", "")]
            assert [row[k] for k in ("param_bytes", "buffer_bytes")] == [
                plain[k] for k in ("param_bytes", "buffer_bytes")
            ]
    sweep = json.loads((DATA / "recorded-0.33.0-sweep.json").read_text())["cases"]
    cid = "arch--InklingForConditionalGeneration --tensor-parallel-size 1"
    assert sweep[cid] == RECORDED[cid]


@pytest.mark.parametrize("cid", sorted(RECORDED))
def test_matches_vllm(cid: str) -> None:
    """Every stage's bytes as vLLM 0.33.0 builds them, or refused where vLLM refuses."""
    row = RECORDED[cid]
    config, argv = _config(row), row["argv"]
    tp, pp = int_flag(argv, "--tensor-parallel-size"), int_flag(argv, "--pipeline-parallel-size")
    ep, lmo = "--enable-expert-parallel" in argv, "--language-model-only" in argv
    if not row["ok"]:
        words = (
            "sconv SWA cache supports tp_size"
            if "sconv" in row["error"]
            else "missing config fields: n_layers"
            if "missing config fields" in row["error"]
            else "AssertionError"
        )
        with pytest.raises(InputError, match=words):
            for stage in range(pp):
                par = Parallel(tp=tp, pp=pp, pp_rank=stage, expert_parallel=ep, vllm_version="0.33.0")
                rank_weights(config, par, language_model_only=lmo)
        return
    stages = row.get("stages") or [[row["param_bytes"], row["buffer_bytes"], row["allocated_bytes"]]]
    got = []
    for stage in range(pp):
        par = Parallel(tp=tp, pp=pp, pp_rank=stage, expert_parallel=ep, vllm_version="0.33.0")
        w = rank_weights(config, par, language_model_only=lmo)
        got.append([w.param_bytes, w.buffer_bytes, w.allocated_bytes])
    assert got == stages


@pytest.mark.parametrize(
    ("args", "want"),
    [
        # patch 4: 2 x 2 spatial steps; one layer takes the first and the last scale
        ((4, 1, 1, 3), [(1, 1, 1, 3), (1, 4, 4, 64)]),
        # patch 14 (7 then 2), temporal 2, three layers: each step's nearest candidate
        ((14, 2, 3, 3), [(1, 1, 1, 3), (1, 7, 7, 192), (1, 14, 14, 640), (2, 14, 14, 1216)]),
    ],
)
def test_hmlp_scales(args: tuple[int, int, int, int], want: list[tuple[int, int, int, int]]) -> None:
    assert hmlp_scales(*args) == want


def test_other_refusals() -> None:
    config = _config(RECORDED["tiny-towers --tensor-parallel-size 1"])
    bad_audio = {**config, "audio_config": {**config["audio_config"], "audio_mode": "flow"}}
    with pytest.raises(InputError, match="dmel only"):
        rank_weights(bad_audio, Parallel(vllm_version="0.33.0"))
    bad_patch = {**config, "vision_config": {**config["vision_config"], "patch_size": 1}}
    with pytest.raises(InputError, match="patch_size must be greater than 1"):
        rank_weights(bad_patch, Parallel(vllm_version="0.33.0"))
    with pytest.raises(InputError, match=r"0\.33\.0 only"):
        rank_weights(config, Parallel(vllm_version="0.32.0"))

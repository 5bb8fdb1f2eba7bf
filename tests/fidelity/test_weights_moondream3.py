"""Moondream3's weights (``models/moondream3.py``: ``Moondream3ForCausalLM`` and ``HfMoondream``)
against vLLM's own figures for the two tiny configs, every recorded release, every flag set:
parameter, buffer and allocated bytes of each pipeline stage. Needs no vLLM.

Recorded by ``record_weights.py --tiny Moondream3ForCausalLM HfMoondream`` in each release's boot
environment (``RECORD_WEIGHTS_OUT``): 0.27.1 into ``recorded-0.27.1.json``, 0.28.0 into
``recorded.json``, 0.33.0 into ``recorded-0.33.0-moondream.json`` (TP 1/2/4/8, PP 3, and
``--language-model-only``), its TP 1 cases also in ``recorded-0.33.0-sweep.json``, and 0.30.0-0.32.0
with ``RECORD_WEIGHTS_FLAGS="--tensor-parallel-size 1"`` into ``recorded-<release>-sweep.json``.
vLLM refuses TP 8 (4 heads); dryboot refuses it too."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from weights_records import int_flag, recorded_cases

import dryboot.vllm.model_executor.models  # noqa: F401  (registers the families of models/)
from dryboot.errors import InputError
from dryboot.vllm.model_executor.model_loader.weights import Parallel, rank_weights

HERE = Path(__file__).resolve().parent
DATA = HERE / "data" / "weights"
ARCHS = ("Moondream3ForCausalLM", "HfMoondream")
FILES = {
    "0.27.1": "recorded-0.27.1.json",
    "0.28.0": "recorded.json",
    "0.30.0": "recorded-0.30.0-sweep.json",
    "0.31.0": "recorded-0.31.0-sweep.json",
    "0.32.0": "recorded-0.32.0-sweep.json",
    "0.33.0": "recorded-0.33.0-moondream.json",
}
RECORDED = recorded_cases(FILES, lambda row: row["config"][len("arch--") :] in ARCHS)


def test_every_release_recorded() -> None:
    for version, name in FILES.items():
        assert json.loads((DATA / name).read_text())["vllm"] == version
    counts = {v: sum(1 for (version, _) in RECORDED if version == v) for v in FILES}
    assert counts == {"0.27.1": 14, "0.28.0": 14, "0.30.0": 4, "0.31.0": 4, "0.32.0": 4, "0.33.0": 14}
    sweep = json.loads((DATA / "recorded-0.33.0-sweep.json").read_text())["cases"]
    assert {cid for cid in sweep if "Moondream" in cid} == {
        cid for (v, cid), row in RECORDED.items() if v == "0.33.0" and row["argv"][1] == "1"
    }


@pytest.mark.parametrize(("version", "cid"), sorted(RECORDED))
def test_matches_vllm(version: str, cid: str) -> None:
    """Every stage's bytes as the release builds them (the tau parameters, the rank's whole
    experts and their two buffers, ``wte`` / ``post_ln`` / ``lm_head`` on every stage, the tower
    on the first stage alone on 0.33, none under ``--language-model-only``)."""
    row: dict[str, Any] = RECORDED[(version, cid)]
    config = json.loads((HERE / "data" / "architectures" / f"{row['config'][len('arch--') :]}.json").read_text())
    argv = row["argv"]
    tp, pp = int_flag(argv, "--tensor-parallel-size"), int_flag(argv, "--pipeline-parallel-size")
    kwargs: dict[str, Any] = {
        "language_model_only": "--language-model-only" in argv,
        "max_num_batched_tokens": row.get("max_num_batched_tokens", 8192),
    }
    if not row["ok"]:
        with pytest.raises(InputError):
            rank_weights(config, Parallel(tp=tp, pp=pp, vllm_version=version), **kwargs)
        return
    stages = row.get("stages") or [[row["param_bytes"], row["buffer_bytes"], row["allocated_bytes"]]]
    got = []
    for stage in range(pp):
        w = rank_weights(config, Parallel(tp=tp, pp=pp, pp_rank=stage, vllm_version=version), **kwargs)
        got.append([w.param_bytes, w.buffer_bytes, w.allocated_bytes])
    assert got == stages


@pytest.mark.parametrize("version", ["0.27.1", "0.28.0", "0.33.0"])
def test_image_limit_zero_is_language_model_only(version: str) -> None:
    """``--limit-mm-per-prompt '{"image": 0}'`` drops the tower as ``--language-model-only`` does
    (``_mark_tower_model(vllm_config, "image")``): vLLM's TP 2 text-only figure."""
    config = json.loads((HERE / "data" / "architectures" / "Moondream3ForCausalLM.json").read_text())
    row = RECORDED[(version, "arch--Moondream3ForCausalLM --tensor-parallel-size 2 --language-model-only")]
    w = rank_weights(config, Parallel(tp=2, vllm_version=version), limit_mm_per_prompt={"image": 0})
    assert [w.param_bytes, w.buffer_bytes, w.allocated_bytes] == [
        row["param_bytes"],
        row["buffer_bytes"],
        row["allocated_bytes"],
    ]

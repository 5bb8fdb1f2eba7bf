"""A ModelOpt MIXED_PRECISION checkpoint in ``hf_quant_config.json``'s nested form, per release.

nvidia/NVIDIA-Nemotron-3.5-Lightning-30B-A3B-NVFP4 publishes no ``quantization_config`` in its
``config.json`` (as vendored in ``quant-configs-modelopt/``); vLLM then reads
``hf_quant_config.json`` (``{"producer": {"name": "modelopt"}, "quantization": {"quant_algo":
"MIXED_PRECISION", ...}}``) as the config's ``quantization_config`` and normalizes it in
``ModelArchConfigConvertor._normalize_quantization_config``: 0.27.1-0.32.0 know FP8 kinds and
NVFP4 only and raise "Unknown ModelOpt quant algo: MIXED_PRECISION" (a ``ValidationError`` of
``ModelConfig``); 0.33.0 names it ``modelopt_mixed``. vLLM's answers are the oracle's records
(``quant-recorded-modelopt-<release>.json``, ``RECORD_SET=modelopt record_quant_weights.py``:
``ok`` false with that error, or the weights it holds); dryboot's plan and its weights are held
to them, release by release.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from click.testing import CliRunner

from dryboot.cli import cli
from dryboot.vllm.model_executor.model_loader.loader import model_weights

HERE = Path(__file__).resolve().parent
NAME = "nvidia--NVIDIA-Nemotron-3.5-Lightning-30B-A3B-NVFP4"
CONFIG = HERE / "data" / "weights" / "quant-configs-modelopt" / NAME
MESSAGE = "Unknown ModelOpt quant algo: MIXED_PRECISION"


def _recorded() -> dict[str, dict[str, object]]:
    """Release -> the oracle's H100 TP 1 row for the checkpoint."""
    out = {}
    for p in sorted((HERE / "data" / "weights").glob("quant-recorded-modelopt-*.json")):
        row = json.loads(p.read_text())["cases"].get(f"{NAME} H100 --tensor-parallel-size 1")
        if row is not None:
            out[p.stem.removeprefix("quant-recorded-modelopt-")] = row
    return out


RECORDED = _recorded()


def test_recorded_releases() -> None:
    """vLLM's answer is recorded for 0.27.1-0.33.0: refused up to 0.32.0, served as modelopt_mixed
    on 0.33.0."""
    assert {"0.27.1", "0.28.0", "0.29.0", "0.30.0", "0.31.0", "0.32.0", "0.33.0"} <= set(RECORDED)
    for version, row in RECORDED.items():
        if version == "0.33.0":
            assert row["ok"] and row["quantization"] == "modelopt_mixed"
        else:
            assert not row["ok"] and MESSAGE in str(row["error"]), version


@pytest.mark.parametrize("version", sorted(RECORDED))
def test_plan_as_the_release(version: str) -> None:
    """``dryboot plan`` refuses where the release refuses, with vLLM's words, and plans where it serves."""
    row = RECORDED[version]
    result = CliRunner().invoke(
        cli, ["plan", "--serve", f"vllm serve {CONFIG} --max-model-len 4096", "--vllm-version", version]
    )
    if row["ok"]:
        assert result.exit_code != 2, result.output
        assert "fp8_e4m3" in result.output  # kv_cache_quant_algo FP8: auto becomes fp8_e4m3
    else:
        assert result.exit_code == 2, result.output
        assert f"quantization_config.quantization.quant_algo: {MESSAGE} (vLLM {version})" in result.output


@pytest.mark.parametrize("version", sorted(RECORDED))
def test_weights_as_the_release(version: str) -> None:
    """The weights report refuses with vLLM's error on the releases that refuse the checkpoint."""
    report = model_weights(CONFIG, tp=1, compute_capability=(9, 0), sm_count=132, vllm_version=version)
    row = RECORDED[version]
    if row["ok"] and version == "0.33.0":
        # 0.33 ranks HummingNvFp4LinearKernel and the Humming experts ahead of Marlin on SM 9.0:
        # recorded with humming-kernels, byte-exact (test_quant_humming.py)
        assert row.get("humming") and "HummingNvFp4LinearKernel" in row["kernels"]
        assert report.refused is None, report.refused
        assert report.stages[0].allocated_bytes == row["allocated_bytes"]
    elif row["ok"]:
        assert report.refused is None
        assert report.stages[0].allocated_bytes == row["allocated_bytes"]
    else:
        assert report.refused is not None and MESSAGE in report.refused

"""DeepSeek-V4's weights: vLLM builds its tiny config under the published DeepSeek-V4-Flash
``quantization_config`` (fp8 128x128 block linear layers, ``expert_dtype: fp4`` experts through
``Mxfp4MoEMethod``) on the meta device; dryboot refuses it by name.

vLLM's figures: ``data/weights/quant-recorded-dsv4-<version>.json``, recorded by
``RECORD_SET=dsv4 record_quant_weights.py`` (A100, SM 8.0, TP 1 and 2; ``--kv-cache-dtype fp8``,
``--kernel-config '{"enable_jit_warmup": false}'``). SM 9.0 is not recorded: vLLM's fp8 block
linear layers go through DeepGEMM's ``transform_sf_into_required_layout``, which has no fake shape.
"""

from __future__ import annotations

from typing import Any

import pytest
import quant_cases_dsv4 as dsv4
from quant_harness import case_ids, load_recorded, tp_of

from dryboot.vllm.model_executor.model_loader.loader import model_weights

RECORDED = load_recorded("quant-recorded-dsv4-")
CASES = case_ids(RECORDED)


def _dryboot(row: dict[str, Any], version: str) -> Any:
    return model_weights(
        dsv4.CONFIGS / row["config"],
        tp=tp_of(row),
        compute_capability=tuple(row["capability"]),
        sm_count=row["sm_count"],
        vllm_version=version,
    )


@pytest.mark.parametrize(("version", "cid"), CASES)
def test_refused_by_name_where_vllm_builds(version: str, cid: str) -> None:
    """vLLM builds the model and holds its weights after loading; dryboot, which does not size
    the family, refuses it naming the architecture and the modules it cannot size."""
    row = RECORDED[version][cid]
    assert row["ok"], row.get("error")
    assert row["quantization"] == "deepseek_v4_fp8"
    assert row["kernels"] == {"Fp8LinearMethod": 26, "Mxfp4MoEMethod": 4}
    refused = _dryboot(row, version).refused
    assert refused is not None
    assert "weights of DeepseekV4ForCausalLM are not modelled" in refused, refused


def test_corpus() -> None:
    """A100 at TP 1 and 2 on 0.33.0, TP 2 holding less (the sharded layers)."""
    rows = {tp_of(r): r for r in RECORDED["0.33.0"].values() if r["gpu"] == "A100-80GB"}
    assert set(rows) == {1, 2}
    assert rows[2]["allocated_bytes"] < rows[1]["allocated_bytes"]

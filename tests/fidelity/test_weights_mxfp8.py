"""dryboot's MiniMax-M3-MXFP8 weights against what vLLM holds after loading.

vLLM's figures: ``data/weights/quant-recorded-mxfp8-<version>.json``, recorded by
``RECORD_SET=mxfp8 record_quant_weights.py`` (the model built by vLLM's loader on the meta
device, ``process_weights_after_loading`` run through the repack kernels' fake shapes, every
storage still held counted in 512-byte blocks) for the published MiniMax-M3-MXFP8 config on the
GPUs of ``quant_cases_mxfp8.py``. Byte-exact where dryboot answers (vLLM 0.33.0 on SM 8.6 / 8.9,
Marlin); refused by name elsewhere.
"""

from __future__ import annotations

from typing import Any

import pytest
import quant_cases_mxfp8 as mx
from quant_harness import case_ids, load_recorded, tp_of

from dryboot.errors import InputError
from dryboot.vllm.model_executor.layers.quantization.modelopt import (
    mxfp8_marlin_experts_bytes,
    mxfp8_marlin_linear_bytes,
)
from dryboot.vllm.model_executor.model_loader.loader import model_weights

RECORDED = load_recorded("quant-recorded-mxfp8-")
CASES = case_ids(RECORDED)


def _dryboot(row: dict[str, Any], version: str) -> Any:
    return model_weights(
        mx.CONFIGS / row["config"],
        tp=tp_of(row),
        compute_capability=tuple(row["capability"]),
        sm_count=row["sm_count"],
        vllm_version=version,
        max_num_batched_tokens=mx.MAX_NUM_BATCHED_TOKENS,
    )


@pytest.mark.parametrize(("version", "cid"), CASES)
def test_matches_vllm_after_loading(version: str, cid: str) -> None:
    """Byte-exact where dryboot answers; where it refuses, the refusal names what is missing."""
    row = RECORDED[version][cid]
    report = _dryboot(row, version)
    if not row["ok"]:
        assert report.refused, f"vLLM or the oracle fails ({row['error'][:200]}); dryboot answered"
        return
    if report.refused:
        assert "weights are not modelled: vLLM's layers/quantization/modelopt.py" in report.refused, report.refused
        return
    assert report.stages[0].allocated_bytes == row["allocated_bytes"], (cid, report.stages[0].allocated_bytes)


def test_corpus_size() -> None:
    """The Marlin GPUs of 0.33.0 (SM 8.6, 8.9) are answered and matched for both published
    checkpoints (MXFP8; NVFP4: MXFP8 linear layers, NVFP4 experts); their rows name the Marlin
    MXFP8 linear kernel on every decoder linear layer."""
    exact = {
        (row["config"], row["gpu"], tp_of(row))
        for v, cases in RECORDED.items()
        for row in cases.values()
        if v == "0.33.0" and row["ok"] and not _dryboot(row, v).refused
    }
    marlin = {
        (row["config"], row["gpu"], tp_of(row))
        for row in RECORDED["0.33.0"].values()
        if row["ok"] and row["gpu"] in ("RTX 3090", "RTX 4090")
    }
    assert exact == marlin
    configs = ("MiniMaxAI--MiniMax-M3-MXFP8", "nvidia--MiniMax-M3-NVFP4")
    assert exact == {(c, g, t) for c in configs for g in ("RTX 3090", "RTX 4090") for t in (1, 2)}
    # 0.28.0-0.32.0 at TP 1 (0.28.0-0.30.0: per-layer Marlin workspaces): every row exact
    assert {"0.28.0", "0.29.0", "0.30.0", "0.31.0", "0.32.0"} <= set(RECORDED)
    for v in sorted(set(RECORDED) - {"0.33.0"}):
        assert RECORDED[v], v
        for row in RECORDED[v].values():
            assert row["ok"] and _dryboot(row, v).stages[0].allocated_bytes == row["allocated_bytes"], v
    row = RECORDED["0.33.0"]["MiniMaxAI--MiniMax-M3-MXFP8 RTX 4090 --tensor-parallel-size 1"]
    assert row["kernels"]["MarlinMxfp8LinearKernel"] == 240


def test_marlin_layouts() -> None:
    """Marlin's padding: N to 64 and K to 128 (or N to 128 and K to 64), the smaller by area;
    expert intermediates to 64; one scale byte per 32 weights."""
    assert mxfp8_marlin_linear_bytes(6144, 6144) == [("weight", 6144 * 6144), ("scale", 6144 * 192)]
    assert mxfp8_marlin_linear_bytes(96, 64)[0] == ("weight", 128 * 64)
    assert mxfp8_marlin_experts_bytes(2, 256, 96)[0] == ("experts", 2 * 256 * 2 * 128)
    with pytest.raises(InputError):
        mxfp8_marlin_linear_bytes(64, 48)
    with pytest.raises(InputError):
        mxfp8_marlin_experts_bytes(2, 256, 48)


def test_refused_beyond_marlin() -> None:
    """SM 9.0 / 10.0 / 12.0 and other releases: refused by name (backends not modelled), for both
    checkpoints (the NVFP4 one on 0.33.0 SM 9.0 through Humming: test_weights_mm3hum.py)."""
    cfg = mx.CONFIGS / "MiniMaxAI--MiniMax-M3-MXFP8"
    for cap, version in (((9, 0), "0.33.0"), ((10, 0), "0.33.0"), ((12, 0), "0.33.0"), ((8, 9), "0.27.1")):
        rep = model_weights(cfg, tp=1, compute_capability=cap, sm_count=132, vllm_version=version)
        assert rep.refused and "MXFP8 weights are not modelled" in rep.refused, (cap, version)
        if (cap, version) == ((9, 0), "0.33.0"):
            continue
        rep = model_weights(
            mx.CONFIGS / "nvidia--MiniMax-M3-NVFP4", tp=1, compute_capability=cap, sm_count=132, vllm_version=version
        )
        assert rep.refused and "MIXED_PRECISION weights are not modelled" in rep.refused, (cap, version)

"""dryboot's nvidia/MiniMax-M3-NVFP4 weights where vLLM 0.32.0 and 0.33.0 serve it through Humming,
against what vLLM holds after loading (issue 33).

The set (``quant_cases_mm3hum.py``): ``data/weights/quant-recorded-mm3hum-<release>.json`` holds vLLM's
own figures (``RECORD_SET=mm3hum record_quant_weights.py`` with the humming-kernels each release's
CUDA wheel pins on ``DRYBOOT_HUMMING_PATH``, 0.1.19 for 0.33.0 and 0.1.17 for 0.32.0: the model
built by vLLM's loader on the meta device, ``process_weights_after_loading`` run, every storage
still held counted in 512-byte blocks) for the
published ModelOpt ``MIXED_PRECISION`` config (MXFP8 decoder linear layers, NVFP4 routed experts) on
H100 / H200 (SM 9.0: ``HummingMxfp8LinearKernel`` and the Humming NVFP4 experts, ahead of Marlin) and
B200 (SM 10.0: the oracle fails without ``cutlass``) at TP 1, 2, 4 and 8. Every case is checked in
the default run (no vLLM needed): byte-exact where dryboot answers, refused by name elsewhere.
"""

from __future__ import annotations

import pytest
import quant_cases_mm3hum as mh
from quant_harness import assert_weights, case_ids, dryboot_weights, load_recorded, plan_output

from dryboot.vllm.model_executor.kernels.linear.humming import humming_locks_bytes
from dryboot.vllm.model_executor.layers.quantization.modelopt import (
    mxfp8_humming_linear_bytes,
    mxfp8_marlin_linear_bytes,
)
from dryboot.vllm.model_executor.model_loader.loader import model_weights

RECORDED = load_recorded("quant-recorded-mm3hum-")
CASES = case_ids(RECORDED)
MINIMAX_M3 = "nvidia--MiniMax-M3-NVFP4"


@pytest.mark.parametrize(("version", "cid"), CASES)
def test_matches_vllm_after_loading(version: str, cid: str) -> None:
    """Byte-exact on SM 9.0; on SM 10.0, where the oracle fails, refused by name."""
    row = RECORDED[version][cid]
    why = None if row["ok"] else "MIXED_PRECISION weights are not modelled"
    assert_weights(dryboot_weights(mh.CONFIGS, row, version), row, why)


@pytest.mark.parametrize(("version", "pin"), [("0.33.0", "0.1.19"), ("0.32.0", "0.1.17")])
def test_corpus_size(version: str, pin: str) -> None:
    """12 cases a release: H100 and H200 at TP 1/2/4/8 exact, each with Humming on all 240 decoder
    linear layers and the 57 MoE layers' experts; B200's four refused (no ``cutlass`` module)."""
    rows = RECORDED[version]
    assert len(rows) == 12
    for gpu in ("H100", "H200"):
        for tp in (1, 2, 4, 8):
            row = rows[f"{MINIMAX_M3} {gpu} --tensor-parallel-size {tp}"]
            assert row["ok"] and row["humming"] == pin
            assert row["kernels"] == {"HummingMxfp8LinearKernel": 240, "ModelOptNvFp4FusedMoE": 57}, row["kernels"]
            assert row["linear_kernels"]["FusedMoEKernel/HummingIndexedExperts"] == 57
    assert all(not rows[f"{MINIMAX_M3} B200 --tensor-parallel-size {tp}"]["ok"] for tp in (1, 2, 4, 8))


def test_0_32_holds_what_0_33_holds() -> None:
    """humming-kernels 0.1.17 under 0.32.0 keeps what 0.1.19 under 0.33.0 keeps: the same figure
    on every GPU and TP served (the package's shape rules are unchanged between the two)."""
    for cid, row in RECORDED["0.32.0"].items():
        if row["ok"]:
            assert row["allocated_bytes"] == RECORDED["0.33.0"][cid]["allocated_bytes"], cid


def test_humming_over_marlin() -> None:
    """At TP 8 the Humming layout is Marlin's (the same padded shapes here) plus one set of locks
    (``8 x 132`` int32, one 4,608-byte block) per Humming kernel object: 240 linear layers and 57
    MoE layers, 1,368,576 bytes over the SM 8.9 Marlin walk at 132 SMs."""
    h100 = RECORDED["0.33.0"][f"{MINIMAX_M3} H100 --tensor-parallel-size 8"]["allocated_bytes"]
    marlin = model_weights(
        mh.CONFIGS / MINIMAX_M3,
        tp=8,
        compute_capability=(8, 9),
        sm_count=132,
        vllm_version="0.33.0",
        max_num_batched_tokens=8192,
    )
    assert h100 - marlin.stages[0].allocated_bytes == (240 + 57) * 4608 == 1_368_576
    assert humming_locks_bytes(132) == 4224
    # Humming pads N to 256 and K to 128; Marlin's smaller-area tile can pad less
    assert mxfp8_humming_linear_bytes(6144, 6144, sm_count=132)[:2] == mxfp8_marlin_linear_bytes(6144, 6144)
    assert mxfp8_humming_linear_bytes(96, 64, sm_count=132)[:2] == [("weight", 256 * 128), ("scale", 256 * 4)]


def test_refused_by_name() -> None:
    """0.31.0 on SM 9.0 (Humming after Marlin there, its Marlin layout not recorded), an unknown
    GPU's multiprocessors (Humming's locks) and SM 10.0 stay refused."""
    cfg = mh.CONFIGS / MINIMAX_M3
    for cap, sms, version in (((9, 0), 132, "0.31.0"), ((9, 0), None, "0.32.0"), ((10, 0), 148, "0.33.0")):
        rep = model_weights(
            cfg, tp=8, compute_capability=cap, sm_count=sms, vllm_version=version, max_num_batched_tokens=8192
        )
        assert rep.refused and "MIXED_PRECISION weights are not modelled" in rep.refused, (cap, version)
        assert "HummingMxfp8LinearKernel" in rep.refused


def test_plan_h200_gives_the_weights() -> None:
    """``plan --gpu H200 -tp 8 --vllm-version 0.33.0`` prints vLLM's figure (the H200 row)."""
    want = RECORDED["0.33.0"][f"{MINIMAX_M3} H200 --tensor-parallel-size 8"]["allocated_bytes"]
    _code, out = plan_output(mh.CONFIGS / MINIMAX_M3, "H200", "--tensor-parallel-size", "8", "--vllm-version", "0.33.0")
    assert f"{want:,} bytes" in out, out[-2000:]
    assert "Weights: not given" not in out

"""dryboot's quantized Qwen4-Exp (its plain layout) against what vLLM holds after loading.

The Qwen4-Exp set (``quant_cases_qwen4exp.py``): ``data/weights/quant-recorded-qwen4exp-<version>.json``
holds vLLM's own figures (``RECORD_SET=qwen4exp record_quant_weights.py``: the model built by vLLM's
loader on the meta device, ``process_weights_after_loading`` run, every storage still held counted
in 512-byte blocks; 0.33.0 with humming-kernels, as its CUDA install has them) for the tiny
``Qwen4ExpForCausalLM`` config under plain fp8 blocks, compressed-tensors W8A8 fp8 / int8, NVFP4 and
W4A16, AWQ and GPTQ, on SM 8.6 / 8.9 / 9.0 / 10.0 at TP 1 and 2: the Qwen3-Next layers quantized as
the checkpoint says, the hyper-connection weights, the embedding and the LM head in bfloat16. Every
case is checked in the default run (no vLLM needed); with ``DRYBOOT_VLLM_PYTHON`` set, one is
re-recorded live.
"""

from __future__ import annotations

import json
import os
import re
from pathlib import Path
from typing import Any

import pytest
import quant_cases_qwen4exp as qx
from quant_harness import assert_weights, case_ids, dryboot_weights, load_recorded, record_live, tp_of

from dryboot.errors import InputError
from dryboot.vllm.model_executor.model_loader import weights as W
from dryboot.vllm.model_executor.model_loader.loader import model_weights
from dryboot.vllm.model_executor.models import qwen4_exp

RECORDED = load_recorded("quant-recorded-qwen4exp-")
CASES = case_ids(RECORDED)


def _refusal(version: str, row: dict[str, Any]) -> str | None:
    """What dryboot must name where it does not give vLLM's figure; ``None``: byte-exact."""
    sm = row["capability"][0] * 10 + row["capability"][1]
    config = row["config"]
    if "GPTQ" in config and version in ("0.32.0", "0.33.0"):
        return "Detected some but not all shards"  # vLLM refuses the checkpoint (qwen4_exp.WHY_GPTQ)
    if not row["ok"]:
        return None  # vLLM (or the oracle) fails: dryboot refuses, whatever it names
    if "FP8-block" in config and (sm >= 100 or version in ("0.29.0", "0.31.0", "0.32.0")):
        return "Gated DeltaNet"  # plain fp8 of the Gated DeltaNet layouts: weights.FP8_GDN_RELEASES / CAPABILITIES
    if ("AWQ" in config or "GPTQ" in config) and tp_of(row) == 2:
        return "intermediate 64 per rank"  # Marlin MoE experts under group 128 (auto_gptq.wna16_experts_bytes)
    if ("W4A16" in config or "GPTQ" in config) and sm >= 100:
        return "SM 7.5-9.x only"  # symmetric Marlin MoE experts on Blackwell (another backend)
    return None


def test_corpus_size() -> None:
    """Byte-exact: AWQ and GPTQ (TP 1; GPTQ not on 0.32.0 / 0.33.0, which refuse it), compressed-tensors
    W4A16, W8A8 fp8 / int8 and NVFP4 on 0.29.0-0.33.0, and plain fp8 blocks (TP 1; TP 2 vLLM
    refuses) on 0.30.0 and 0.33.0."""
    exact: dict[str, set[str]] = {}
    n = 0
    for version, cases in RECORDED.items():
        for row in cases.values():
            if row["ok"] and _refusal(version, row) is None:
                exact.setdefault(version, set()).add(row["config"])
                n += 1
    for version in ("0.29.0", "0.30.0", "0.31.0", "0.32.0", "0.33.0"):
        want = {
            "tiny-qwen4-exp+AWQ-g128",
            "tiny-qwen4-exp+CT-W4A16-g32",
            "tiny-qwen4-exp+CT-W8A8-FP8-dynamic",
            "tiny-qwen4-exp+CT-W8A8-INT8-dynamic",
            "tiny-qwen4-exp+CT-NVFP4",
        }
        if version in ("0.30.0", "0.33.0"):
            want.add("tiny-qwen4-exp+FP8-block")
        if version not in ("0.32.0", "0.33.0"):
            want.add("tiny-qwen4-exp+GPTQ-Int4-g128")
        assert want <= exact.get(version, set()), version
    # 30 on 0.29.0, 33 on 0.30.0, 30 on 0.31.0, 27 on 0.32.0 (its H100 rows through Humming, recorded
    # with humming-kernels 0.1.17), 28 on 0.33.0
    assert n >= 148


@pytest.mark.parametrize(("version", "cid"), CASES)
def test_matches_vllm_after_loading(version: str, cid: str) -> None:
    row = RECORDED[version][cid]
    report = dryboot_weights(qx.CONFIGS, row, version)
    assert_weights(report, row, _refusal(version, row))


def test_unrecorded_stays_refused_by_name() -> None:
    """A release, a GPU, a method or a parallelism not recorded is refused by name; without a GPU
    the repacked layout is unknown."""
    cfg = qx.CONFIGS / "tiny-qwen4-exp+CT-W4A16-g32"
    quant = W.quant_from_config(json.loads((cfg / "config.json").read_text()), None)
    with pytest.raises(InputError, match=re.escape("checked on vLLM 0.29.0, 0.30.0, 0.31.0, 0.32.0, 0.33.0 only")):
        qwen4_exp._refuse_quantized(quant, W.Parallel(vllm_version="0.34.0"))
    assert "SM 8.6, 8.9, 9.0, 10.0 only" in (
        model_weights(cfg, compute_capability=(12, 0), sm_count=170, vllm_version="0.30.0").refused or ""
    )
    assert "pipeline or expert" in (
        model_weights(cfg, pp=2, compute_capability=(8, 6), sm_count=82, vllm_version="0.30.0").refused or ""
    )
    assert "name the GPU" in (model_weights(cfg, vllm_version="0.30.0").refused or "")
    gptq = qx.CONFIGS / "tiny-qwen4-exp+GPTQ-Int4-g128"
    refused = model_weights(gptq, compute_capability=(8, 9), sm_count=128, vllm_version="0.33.0").refused or ""
    assert qwen4_exp.WHY_GPTQ in refused


@pytest.mark.skipif(not os.environ.get("DRYBOOT_VLLM_PYTHON"), reason="needs vLLM (DRYBOOT_VLLM_PYTHON)")
def test_live_oracle(tmp_path: Path) -> None:
    """Re-record one case with the boot environment's vLLM and check dryboot against it."""
    doc = record_live(
        tmp_path,
        ["tiny-qwen4-exp+CT-W4A16-g32"],
        RECORD_SET="qwen4exp",
        RECORD_GPUS="RTX 3090",
        RECORD_TPS="2",
        RECORD_FAST="1",
    )
    for row in doc["cases"].values():
        report = dryboot_weights(qx.CONFIGS, row, doc["vllm"])
        if doc["vllm"] not in qwen4_exp.QUANT_RELEASES:  # before 0.29.0 vLLM has no Qwen4-Exp
            assert report.refused, row
            continue
        assert_weights(report, row, _refusal(doc["vllm"], row))

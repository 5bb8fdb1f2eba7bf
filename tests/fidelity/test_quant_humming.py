"""vLLM 0.33.0's Humming kernels (``humming-kernels``) on SM 9.0: where they serve, and what they keep.

vLLM 0.33.0's ``layers/quantization/utils/humming/priority.py`` (``prioritize_humming``) moves
Humming directly ahead of Marlin in every kernel list on SM 9.0 only
(``_HUMMING_PREFERRED_CAPABILITIES``): the mixed-precision list (Machete, Humming, Marlin, ...),
the NVFP4 list and the fused-MoE backend lists. 0.27.1-0.30.0 have no ``prioritize_humming``.

The cases are recorded by ``record_quant_weights.py`` with the unpacked ``humming-kernels`` 0.1.19
wheel (the release 0.33.0's CUDA wheel pins) on ``DRYBOOT_HUMMING_PATH``: its own post-load step
runs on the meta device through its own shape declarations (``quant_fakes.humming_stand_ins``).
They are the H100 rows of the other sets' 0.33.0 files (each with ``"humming": "0.1.19"``) and the
Humming set of ``quant_cases_humming.py`` (zero points, a bias, padded shapes, 8-bit weights,
group 256). Every case is checked in the default run; with ``DRYBOOT_VLLM_PYTHON`` (a 0.33.0 boot
environment) and ``DRYBOOT_HUMMING_PATH`` set, two are re-recorded live and checked.
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

import pytest
import quant_cases_humming as hc
from quant_harness import DATA, case_ids, dryboot_weights, load_recorded, record_live

from dryboot.vllm.model_executor.kernels.linear.humming import HummingLayer, humming_locks_bytes, humming_tensors
from dryboot.vllm.model_executor.kernels.linear.mixed_precision import MPLinearLayerConfig, choose_mp_linear_kernel
from dryboot.vllm.model_executor.layers.quantization import QUANT_RULES
from dryboot.vllm.model_executor.model_loader.loader import model_weights

RECORDED = load_recorded("quant-recorded-humming-")
CASES = case_ids(RECORDED)
#: every recorded set: its files' prefix and its configs
SETS = {
    "quant-recorded-": DATA / "quant-configs",
    "quant-recorded-extra-": DATA / "quant-configs-extra",
    "quant-recorded-modelopt-": DATA / "quant-configs-modelopt",
    "quant-recorded-moe-": DATA / "quant-configs-moe",
    "quant-recorded-humming-": hc.CONFIGS,
}
HUMMING_KERNELS = ("HummingLinearKernel", "HummingNvFp4LinearKernel", "Humming")


def _humming_rows() -> list[tuple[Path, str, dict[str, Any]]]:
    """(configs, release, row) of every recorded case in which vLLM picked a Humming kernel."""
    out = []
    for prefix, configs in SETS.items():
        for version, cases in load_recorded(prefix).items():
            for row in cases.values():
                if row["ok"] and any(h in k for k in row.get("kernels", {}) for h in HUMMING_KERNELS):
                    out.append((configs, version, row))
    return out


def test_only_0330_prefers_humming_and_only_on_sm90() -> None:
    assert {v: r.humming_before_marlin for v, r in QUANT_RULES.items()} == {
        "0.27.1": (),
        "0.28.0": (),
        "0.30.0": (),
        "0.33.0": (90,),
    }


def _g(group: int) -> MPLinearLayerConfig:
    return MPLinearLayerConfig(k=4096, n=4096, full_k=4096, bits=4, zero_points=False, group_size=group, has_g_idx=False)


def test_humming_takes_what_machete_declines() -> None:
    # Machete (ahead of Humming) keeps group 128; group 32 falls to Humming where it is preferred
    assert choose_mp_linear_kernel(_g(128), 90, allspark=False, humming=True) == "MacheteLinearKernel"
    assert choose_mp_linear_kernel(_g(32), 90, allspark=False, humming=True) == "HummingLinearKernel"
    assert choose_mp_linear_kernel(_g(256), 90, allspark=False, humming=True) == "HummingLinearKernel"
    assert choose_mp_linear_kernel(_g(32), 90, allspark=False) == "MarlinLinearKernel"


def test_layout_rules_by_hand() -> None:
    """Humming's shape rules on a padded layer, computed by hand: Qwen2.5-1.5B's gate_up_proj at TP 2
    (n = 2 x 4480 = 8960 -> 9216, k = 1536), int4, group 32, zero points and a bias."""
    layer = HummingLayer(n=8960, k=1536, bits=4, group_size=32, scale_bytes=2, zero_points=True, bias=True)
    assert humming_tensors(layer) == [
        ("weight", 9216 * 1536 // 2),  # [1536 / 16, 9216 x 16 x 4 / 32] int32
        ("scale", 48 * 9216 * 2),  # [1536 / 32, 9216] bf16
        ("scale", 48 * 9216 // 2),  # [48, 9216 x 4 / 32] int32
        ("bias", 9216 * 2),
        ("bias", 9216 * 2),  # zero_bias
    ]
    # down_proj: k = 4480 -> 4608 (128), n = 1536; 8-bit weights keep 8-bit zero points
    down = HummingLayer(n=1536, k=4480, bits=8, group_size=32, scale_bytes=2, zero_points=True)
    assert humming_tensors(down) == [("weight", 1536 * 4608), ("scale", 144 * 1536 * 2), ("scale", 144 * 1536)]
    # NVFP4 experts: fp8 group-16 scales, one float32 secondary scale per expert
    experts = HummingLayer(n=1536, k=2048, bits=4, group_size=16, scale_bytes=1, weight_scale_2="tensor", experts=128)
    assert humming_tensors(experts) == [("weight", 128 * 1536 * 1024), ("scale", 128 * 128 * 1536), ("scale", 512)]
    assert humming_locks_bytes(132) == 4224


@pytest.mark.parametrize(("version", "cid"), CASES)
def test_humming_set_matches_vllm(version: str, cid: str) -> None:
    row = RECORDED[version][cid]
    report = dryboot_weights(hc.CONFIGS, row, version)
    assert row["ok"], row.get("error")
    assert not report.refused, report.refused
    assert report.stages[0].allocated_bytes == row["allocated_bytes"]


def test_every_humming_case_is_exact() -> None:
    """Every recorded case vLLM served with a Humming kernel (dense W4A16 / W8A16 with and without
    zero points, bias, padding; NVFP4 linear; W4A16 and NVFP4 MoE experts) matches to the byte,
    at least 20 of them, each recorded with humming-kernels."""
    rows = _humming_rows()
    assert len(rows) >= 20
    kernels: set[str] = set()
    for configs, version, row in rows:
        assert version == "0.33.0" and row["capability"] == [9, 0] and row.get("humming") == "0.1.19"
        report = dryboot_weights(configs, row, version)
        assert not report.refused, (row["config"], report.refused)
        assert report.stages[0].allocated_bytes == row["allocated_bytes"], row["config"]
        kernels |= {k for k in row["kernels"] if any(h in k for h in HUMMING_KERNELS)}
    assert {"HummingLinearKernel", "HummingNvFp4LinearKernel"} <= kernels


def test_kernels_per_gpu() -> None:
    """The Humming set: Humming on SM 9.0 (0.33.0), Marlin on SM 8.9."""
    for row in RECORDED["0.33.0"].values():
        linear = {k for k in row["kernels"] if k.endswith("LinearKernel")}
        want = "HummingLinearKernel" if row["capability"] == [9, 0] else "MarlinLinearKernel"
        assert linear == {want}, (row["config"], row["gpu"], linear)


def test_other_releases_keep_marlin() -> None:
    """0.30.0 has no prioritize_humming: Marlin serves group 32 on SM 9.0 (the recorded Marlin
    layout: no locks, a workspace per layer)."""
    cfg = hc.CONFIGS / "Qwen--Qwen3-8B+GPTQ-Int4-g256"
    # group 256: Marlin declines it, and 0.30.0 has nothing modelled after Marlin
    assert "not modelled" in (model_weights(cfg, compute_capability=(9, 0), sm_count=132, vllm_version="0.30.0").refused or "")
    r = model_weights(cfg, compute_capability=(9, 0), sm_count=132, vllm_version="0.33.0")
    assert r.refused is None, r.refused


@pytest.mark.skipif(
    not (os.environ.get("DRYBOOT_VLLM_PYTHON") and os.environ.get("DRYBOOT_HUMMING_PATH")),
    reason="needs a 0.33.0 boot environment (DRYBOOT_VLLM_PYTHON) and the unpacked humming-kernels wheel "
    "(DRYBOOT_HUMMING_PATH)",
)
def test_live_oracle(tmp_path: Path) -> None:
    """Re-record two Humming cases with the boot environment's vLLM and check dryboot against them."""
    names = ["Qwen--Qwen2.5-1.5B+GPTQ-Int4-g32", "Qwen--Qwen2.5-7B+AWQ-g32"]
    doc = record_live(tmp_path, names, RECORD_SET="humming", RECORD_GPUS="H100", RECORD_TPS="2", RECORD_FAST="1")
    assert doc["vllm"] == "0.33.0" and len(doc["cases"]) == 2
    for row in doc["cases"].values():
        assert row["ok"] and "HummingLinearKernel" in row["kernels"], row.get("error")
        report = dryboot_weights(hc.CONFIGS, row, doc["vllm"])
        assert report.stages[0].allocated_bytes == row["allocated_bytes"]

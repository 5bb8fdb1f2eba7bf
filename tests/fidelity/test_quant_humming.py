"""vLLM 0.32.0's and 0.33.0's Humming kernels (``humming-kernels``) on SM 9.0: where they serve, and what they keep.

vLLM 0.33.0's ``layers/quantization/utils/humming/priority.py`` (``prioritize_humming``) moves
Humming directly ahead of Marlin in every kernel list on SM 9.0 only
(``_HUMMING_PREFERRED_CAPABILITIES``): the mixed-precision list (Machete, Humming, Marlin, ...),
the NVFP4 list and the fused-MoE backend lists. 0.27.1-0.30.0 have no ``prioritize_humming``.

The cases are recorded by ``record_quant_weights.py`` with the unpacked ``humming-kernels`` wheel
each release's CUDA wheel pins on ``DRYBOOT_HUMMING_PATH`` (0.33.0: 0.1.19; 0.32.0: 0.1.17, whose
imports of ``triton`` and ``cuda-bindings`` are stood in for: ``quant_fakes.humming_import_stand_ins``):
its own post-load step runs on the meta device through its own shape declarations
(``quant_fakes.humming_stand_ins``). They are the H100 rows of the other sets' 0.33.0 files (each
with ``"humming": "0.1.19"``), those re-recorded on 0.32.0 (``"humming": "0.1.17"``) and the
Humming set of ``quant_cases_humming.py`` on both releases (zero points, a bias, padded shapes,
8-bit weights; group 256, which vLLM refuses). Every case is checked in the default run; with
``DRYBOOT_VLLM_PYTHON`` (a 0.32.0 or 0.33.0 boot environment) and ``DRYBOOT_HUMMING_PATH`` (the
humming-kernels that release pins) set, two are re-recorded live and checked.
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

import pytest
import quant_cases_humming as hc
from quant_harness import DATA, case_ids, dryboot_weights, load_recorded, plan_output, record_live

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


def _uses_humming(prefix: str, row: dict[str, Any]) -> bool:
    """vLLM picked a Humming kernel in this case: a Humming linear kernel among the recorded ones,
    or (the MoE experts' backend is not among the recorded kernels) weight-only or NVFP4 experts
    recorded with humming-kernels on SM 9.0."""
    if any(h in k for k in row.get("kernels", {}) for h in HUMMING_KERNELS):
        return True
    moe = prefix == "quant-recorded-moe-" and not any(w in row["config"] for w in ("INT8", "FP8"))
    # a layer vLLM sends to its MoeWNA16 method instead (a group straddling the TP shard) is not Humming
    wna16 = "MoeWNA16Method" in row.get("kernels", {})
    return moe and not wna16 and bool(row.get("humming")) and row["capability"] == [9, 0]


def _humming_rows() -> list[tuple[Path, str, dict[str, Any]]]:
    """(configs, release, row) of every recorded case in which vLLM picked a Humming kernel."""
    out = []
    for prefix, configs in SETS.items():
        for version, cases in load_recorded(prefix).items():
            for row in cases.values():
                if row["ok"] and _uses_humming(prefix, row):
                    out.append((configs, version, row))
    return out


def test_only_0320_and_0330_prefer_humming_and_only_on_sm90() -> None:
    """0.32.0 and 0.33.0 rank Humming first on SM 9.0 (the same ``humming/priority.py``); its
    layouts are recorded on both (0.32.0 with its pin, humming-kernels 0.1.17)."""
    assert {v: r.humming_before_marlin for v, r in QUANT_RULES.items()} == {
        "0.27.1": (),
        "0.28.0": (),
        "0.29.0": (),
        "0.30.0": (),
        "0.31.0": (),
        "0.32.0": (90,),
        "0.33.0": (90,),
    }
    assert {v for v in RECORDED} == {"0.32.0", "0.33.0"}
    assert {row["humming"] for row in RECORDED["0.32.0"].values()} == {"0.1.17"}


def _g(group: int) -> MPLinearLayerConfig:
    return MPLinearLayerConfig(
        k=4096, n=4096, full_k=4096, bits=4, zero_points=False, group_size=group, has_g_idx=False
    )


def test_humming_takes_what_machete_declines() -> None:
    # Machete (ahead of Humming) keeps group 128; group 32 falls to Humming where it is preferred
    assert choose_mp_linear_kernel(_g(128), 90, allspark=False, humming=True) == "MacheteLinearKernel"
    assert choose_mp_linear_kernel(_g(32), 90, allspark=False, humming=True) == "HummingLinearKernel"
    assert choose_mp_linear_kernel(_g(256), 90, allspark=False, humming=True) == "HummingLinearKernel"
    assert choose_mp_linear_kernel(_g(32), 90, allspark=False) == "MarlinLinearKernel"


def test_layout_rules_by_hand() -> None:
    """Humming's shape rules on padded layers, computed by hand: Qwen2.5-72B at TP 4 (intermediate
    29568 / 4 = 7392 per rank). gate_up_proj: n = 2 x 7392 = 14784 -> 14848 (256), k = 8192; int4,
    group 32, zero points, with a bias (to show the bias rule)."""
    layer = HummingLayer(n=14784, k=8192, bits=4, group_size=32, scale_bytes=2, zero_points=True, bias=True)
    assert humming_tensors(layer) == [
        ("weight", 14848 * 8192 // 2),  # [8192 / 16, 14848 x 16 x 4 / 32] int32
        ("scale", 256 * 14848 * 2),  # [8192 / 32, 14848] bf16
        ("scale", 256 * 14848 // 2),  # [256, 14848 x 4 / 32] int32
        ("bias", 14848 * 2),
        ("bias", 14848 * 2),  # zero_bias
    ]
    # down_proj: k = 7392 -> 7424 (128), n = 8192; 8-bit weights keep 8-bit zero points
    down = HummingLayer(n=8192, k=7392, bits=8, group_size=32, scale_bytes=2, zero_points=True)
    assert humming_tensors(down) == [("weight", 8192 * 7424), ("scale", 232 * 8192 * 2), ("scale", 232 * 8192)]
    # NVFP4 experts: fp8 group-16 scales, one float32 secondary scale per expert
    experts = HummingLayer(n=1536, k=2048, bits=4, group_size=16, scale_bytes=1, weight_scale_2="tensor", experts=128)
    assert humming_tensors(experts) == [("weight", 128 * 1536 * 1024), ("scale", 128 * 128 * 1536), ("scale", 512)]
    assert humming_locks_bytes(132) == 4224


@pytest.mark.parametrize(("version", "cid"), CASES)
def test_humming_set_matches_vllm(version: str, cid: str) -> None:
    row = RECORDED[version][cid]
    report = dryboot_weights(hc.CONFIGS, row, version)
    if not row["ok"]:  # GPTQ group 256: vLLM's GPTQ method checks Marlin's group sizes first
        assert "Marlin does not support group_size" in row["error"]
        assert report.refused and "vLLM refuses" in report.refused, report.refused
        return
    assert not report.refused, report.refused
    assert report.stages[0].allocated_bytes == row["allocated_bytes"]


def test_every_humming_case_is_exact() -> None:
    """Every recorded case vLLM served with a Humming kernel (dense W4A16 / W8A16 with and without
    zero points, bias, padding; NVFP4 linear; W4A16 and NVFP4 MoE experts) matches to the byte,
    at least 20 of them, each recorded with humming-kernels."""
    rows = _humming_rows()
    kernels: set[str] = set()
    exact = 0
    for configs, version, row in rows:
        pin = {"0.32.0": "0.1.17", "0.33.0": "0.1.19"}  # the humming-kernels each CUDA wheel pins
        assert row["capability"] == [9, 0] and row.get("humming") == pin[version], (version, row["config"])
        # (a uniform ModelOpt checkpoint on 0.33.0 included: its "2 MiB once per process" was
        # FlashInfer's KV counter on SM 8.x, never on SM 9.0's FlashAttention)
        report = dryboot_weights(configs, row, version)
        assert not report.refused, (row["config"], report.refused)
        assert report.stages[0].allocated_bytes == row["allocated_bytes"], row["config"]
        exact += 1
        kernels |= {k for k in row["kernels"] if any(h in k for h in HUMMING_KERNELS)}
    assert exact >= 20
    assert {"HummingLinearKernel", "HummingNvFp4LinearKernel"} <= kernels


def test_unknown_sm_count_refused_by_name() -> None:
    """Humming's locks are ``8 x SMs`` int32 per Humming layer (vLLM's ``create_humming_locks``
    reads the GPU's multiprocessor count): without the GPU's SM count (``--gpu sm90:80G``, or a
    table GPU no source gives it for, e.g. H100 PCIe) dryboot refuses by name every recorded
    Humming case; it took 256 SMs before (a silent figure: 4 KiB more per layer than an H100's
    132). With the recorded 132 SMs the figure is vLLM's (:func:`test_every_humming_case_is_exact`);
    with another count it moves, so no count can stand in for the GPU's."""
    rows = _humming_rows()
    assert len(rows) >= 20
    for configs, version, row in rows:
        unknown = dryboot_weights(configs, {**row, "sm_count": None}, version)
        assert unknown.refused and "need the GPU's multiprocessors" in unknown.refused, (row["config"], unknown.refused)
        other = dryboot_weights(configs, {**row, "sm_count": 114}, version)
        assert other.stages[0].allocated_bytes != row["allocated_bytes"], row["config"]
    code, out = plan_output(hc.CONFIGS / "Qwen--Qwen2.5-7B+AWQ-g32", "sm90:80G", "--vllm-version", "0.32.0")
    # the plan names it and leaves the budget undetermined (exit 3), as for every weights refusal
    assert code == 3 and "weights: --gpu: Humming's locks" in out, out


def test_kernels_per_gpu() -> None:
    """The Humming set: Humming on SM 9.0 (0.32.0, 0.33.0), Marlin on SM 8.9."""
    for row in (r for cases in RECORDED.values() for r in cases.values()):
        if not row["ok"]:
            continue
        linear = {k for k in row["kernels"] if k.endswith("LinearKernel")}
        want = "HummingLinearKernel" if row["capability"] == [9, 0] else "MarlinLinearKernel"
        assert linear == {want}, (row["config"], row["gpu"], linear)


def test_gptq_group_sizes_marlin_takes_only() -> None:
    """vLLM's GPTQ and AWQ methods check Marlin's group sizes at construction on every CUDA GPU
    (``verify_marlin_supported``), before any kernel is chosen: group 256 is refused even where
    Humming would serve it (recorded: H100 and RTX 4090 on 0.32.0 and 0.33.0)."""
    cfg = hc.CONFIGS / "Qwen--Qwen3-8B+GPTQ-Int4-g256"
    for version, cap in (("0.33.0", (9, 0)), ("0.33.0", (8, 9)), ("0.32.0", (9, 0)), ("0.30.0", (9, 0))):
        refused = model_weights(cfg, compute_capability=cap, sm_count=132, vllm_version=version).refused or ""
        assert "Marlin does not support group_size = 256" in refused, (version, cap, refused)


@pytest.mark.skipif(
    not (os.environ.get("DRYBOOT_VLLM_PYTHON") and os.environ.get("DRYBOOT_HUMMING_PATH")),
    reason="needs a 0.32.0 / 0.33.0 boot environment (DRYBOOT_VLLM_PYTHON) and the unpacked humming-kernels wheel "
    "(DRYBOOT_HUMMING_PATH)",
)
def test_live_oracle(tmp_path: Path) -> None:
    """Re-record two Humming cases with the boot environment's vLLM and check dryboot against them."""
    names = ["Qwen--Qwen2.5-1.5B+GPTQ-Int4-g32", "Qwen--Qwen2.5-7B+AWQ-g32"]
    doc = record_live(tmp_path, names, RECORD_SET="humming", RECORD_GPUS="H100", RECORD_TPS="2", RECORD_FAST="1")
    assert doc["vllm"] in ("0.32.0", "0.33.0") and len(doc["cases"]) == 2
    for row in doc["cases"].values():
        assert row["ok"] and "HummingLinearKernel" in row["kernels"], row.get("error")
        report = dryboot_weights(hc.CONFIGS, row, doc["vllm"])
        assert report.stages[0].allocated_bytes == row["allocated_bytes"]

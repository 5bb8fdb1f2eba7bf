"""Kimi-K3's MXFP4 experts after ``process_weights_after_loading``, against vLLM on the meta device.

vLLM 0.27.1-0.33.0 rewrite the published checkpoint's compressed-tensors ``mxfp4-pack-quantized``
``quantization_config`` to ``quant_method`` ``mxfp4`` (``models/config.py``
``KimiK3ForConditionalGenerationConfig``): ``Mxfp4Config`` builds the routed experts with
``Mxfp4MoEMethod`` and every other layer unquantized. vLLM's figures:
``data/weights/quant-recorded-kimik3-<release>.json`` (``RECORD_SET=kimik3``, ``quant_cases_kimik3.py``:
the published config and a tiny stand-in, TP 8 with and without ``--enable-expert-parallel``, the
MoonViT tower moved as on a GPU, on A100 (SM 8.0, Marlin) and H100 (SM 9.0: Marlin up to 0.31.0,
Humming on 0.32.0 / 0.33.0, recorded with the humming-kernels each pins, 0.1.17 / 0.1.19, on
``DRYBOOT_HUMMING_PATH``)). Here: every
recorded case byte-exact, the backend per SM and release, the refusals by name.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from quant_harness import case_ids, load_recorded, plan_output

import dryboot.vllm.model_executor.models  # noqa: F401  (registers the families of models/)
from dryboot.errors import InputError
from dryboot.vllm.model_executor.layers.quantization.mxfp4 import kimi_k3_mxfp4_backend
from dryboot.vllm.model_executor.model_loader.loader import model_weights
from dryboot.vllm.model_executor.model_loader.weights import Parallel, rank_weights

HERE = Path(__file__).resolve().parent
CONFIGS = HERE / "data" / "weights" / "quant-configs-kimik3"
PUBLISHED = CONFIGS / "moonshotai--Kimi-K3"
RECORDED = load_recorded("quant-recorded-kimik3-")
#: the experts' kernel vLLM built, by dryboot's backend name (Humming's indexed experts, or its
#: grouped ones under expert parallelism: one layout)
KERNELS = {
    "MARLIN": ("FusedMoEKernel/MarlinExperts",),
    "HUMMING": tuple(f"FusedMoEKernel/Humming{k}Experts" for k in ("Indexed", "Grouped")),
}


def _config(row: dict[str, Any]) -> dict[str, Any]:
    config: dict[str, Any] = json.loads((CONFIGS / row["config"] / "config.json").read_text())
    return config


def test_recorded() -> None:
    assert sorted(RECORDED) == ["0.27.1", "0.28.0", "0.29.0", "0.30.0", "0.31.0", "0.32.0", "0.33.0"]
    pin = {"0.32.0": "0.1.17", "0.33.0": "0.1.19"}
    for version, cases in RECORDED.items():
        assert len(cases) == 8, version  # 2 configs x 2 GPUs x (TP 8, TP 8 with expert parallelism)
        assert all(row["ok"] and row["quantization"] == "mxfp4" for row in cases.values())
        # Humming where vLLM 0.32.0 / 0.33.0 rank it ahead of Marlin (SM 9.0), with the package each
        # CUDA wheel pins
        assert all(row.get("humming") == pin.get(version) for row in cases.values())


@pytest.mark.parametrize(("version", "cid"), case_ids(RECORDED))
def test_matches_vllm_after_loading(version: str, cid: str) -> None:
    """dryboot's figure is vLLM's ``allocated_bytes`` after the post-load step, byte for byte, and
    its backend the experts' kernel vLLM built."""
    row = RECORDED[version][cid]
    cap = (int(row["capability"][0]), int(row["capability"][1]))
    par = Parallel(
        tp=8,
        expert_parallel="--enable-expert-parallel" in row["argv"],
        capability=cap,
        sm_count=row["sm_count"],
        vllm_version=version,
    )
    config = _config(row)
    w = rank_weights(config, par, language_model_only=False)
    want = row["allocated_bytes"]
    if par.expert_parallel and version == "0.33.0":
        # each MoE layer's int32 expert map [E]: vLLM 0.33.0 builds it on the host when the default
        # device is the meta device (expert_map_manager.py; earlier releases on the meta device),
        # on the GPU otherwise; the recorder counts the meta device's storages, so it is added here
        # (one 512-byte block per 128 experts)
        n_moe, e = row["kernels"]["Mxfp4MoEMethod"], int(config["text_config"]["num_experts"])
        want += n_moe * -(-4 * e // 512) * 512
    assert w.allocated_bytes == want, (w.allocated_bytes - want, row)
    backend = kimi_k3_mxfp4_backend(cap[0] * 10 + cap[1], version)
    # every MoE layer's Mxfp4MoEMethod built the kernel of dryboot's backend
    built = sum(n for k, n in row["linear_kernels"].items() if k in KERNELS[backend])
    assert built == row["kernels"]["Mxfp4MoEMethod"], row["linear_kernels"]


@pytest.mark.parametrize(
    ("version", "sm", "backend"),
    [
        ("0.27.1", 80, "MARLIN"),
        ("0.27.1", 90, "MARLIN"),
        ("0.30.0", 90, "MARLIN"),
        ("0.31.0", 90, "MARLIN"),
        ("0.32.0", 90, "HUMMING"),  # prioritize_humming from 0.32.0
        ("0.33.0", 90, "HUMMING"),
        ("0.33.0", 89, "MARLIN"),  # Humming outranks Marlin on SM 9.0 only
        ("0.33.0", 100, "FLASHINFER_TRTLLM_MXFP4_MXFP8"),
        ("0.27.1", 103, "FLASHINFER_TRTLLM_MXFP4_MXFP8"),
    ],
)
def test_backend_per_sm_and_release(version: str, sm: int, backend: str) -> None:
    assert kimi_k3_mxfp4_backend(sm, version) == backend


def test_refused_by_name_where_not_modelled() -> None:
    def refused(**kw: Any) -> str:
        report = model_weights(PUBLISHED, tp=8, language_model_only=True, **kw)
        assert report.refused is not None
        return report.refused

    assert "name the GPU" in refused(vllm_version="0.33.0")
    b200 = refused(compute_capability=(10, 0), sm_count=148, vllm_version="0.33.0")
    assert "FLASHINFER_TRTLLM_MXFP4_MXFP8 backend" in b200
    assert "SM 12.0" in refused(compute_capability=(12, 0), sm_count=170, vllm_version="0.33.0")
    assert "from SM 8.0" in refused(compute_capability=(7, 5), sm_count=40, vllm_version="0.33.0")
    assert "checked on vLLM 0.27.1 / 0.28.0 / 0.29.0 / 0.30.0 / 0.31.0 / 0.32.0 / 0.33.0 only" in refused(
        compute_capability=(9, 0), sm_count=132, vllm_version="0.34.0"
    )
    fp16 = refused(compute_capability=(9, 0), sm_count=132, vllm_version="0.33.0", dtype="float16")
    assert "not supported for quantization method mxfp4" in fp16
    pp = refused(compute_capability=(9, 0), sm_count=132, vllm_version="0.33.0", pp=2)
    assert "pipeline parallelism is not checked" in pp
    with pytest.raises(InputError, match=r"from SM 8\.0"):
        kimi_k3_mxfp4_backend(75, "0.33.0")


def test_published_h100_figure() -> None:
    """The published checkpoint on an H100 (vLLM 0.33.0, TP 8): Humming's
    experts keep the MXFP4 bytes as built (no padding at 384 per rank over the latent width 3584)
    plus its locks, 8 x 132 int32 (4,608 B in allocator blocks) per MoE layer (92 of 93)."""
    row = RECORDED["0.33.0"]["moonshotai--Kimi-K3 H100 --tensor-parallel-size 8"]
    assert row["allocated_bytes"] - row["built_allocated_bytes"] == 92 * 4608


def test_plan_prints_the_figure_after_loading() -> None:
    """``plan --gpu H100`` at TP 8 on vLLM 0.33.0 prints the recorded figure (then: the weights
    exceed an H100, vLLM fails loading)."""
    code, out = plan_output(PUBLISHED, "H100", "--tensor-parallel-size", "8", "--vllm-version", "0.33.0")
    want = RECORDED["0.33.0"]["moonshotai--Kimi-K3 H100 --tensor-parallel-size 8"]["allocated_bytes"]
    assert f"{want:,} bytes" in out, out[-1500:]
    assert code == 1 and "verdict: won't (exit 1)" in out, out[-800:]

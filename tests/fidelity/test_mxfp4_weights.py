"""gpt-oss's MXFP4 experts per backend and GPU, against vLLM after ``process_weights_after_loading``.

vLLM's own figures: ``data/weights/quant-recorded-<version>-mxfp4.json`` (``record_quant_weights.py``
on the published gpt-oss-20b / gpt-oss-120b configs; the Marlin backend vLLM picks on SM 8.x and
SM 12.0 (up to 0.31 the OAI Triton kernels stop below SM 11.0, from 0.32 the list puts them after
Marlin there); the OAI Triton backend on SM 9.0 and FlashInfer TRT-LLM on SM 10.0, recorded
with ``RECORD_MXFP4_NATIVE``; 0.33.0's B200 / RTX 5090 rows with ``VLLM_HAS_FLASHINFER_CUBIN`` as
on vLLM's images, where FlashInfer serves the sinks: its KV counter and float32 sinks join the figure),
checked case by case in ``test_quant_weights.py``. Here: the backend vLLM
picks per SM and release, the refusals by name, and ``plan --gpu`` on gpt-oss-20b (GPUs named
explicitly).
"""

from __future__ import annotations

from pathlib import Path

import pytest
from quant_harness import load_recorded, plan_output

from dryboot.errors import InputError
from dryboot.vllm.model_executor.layers.quantization import quant_rules
from dryboot.vllm.model_executor.layers.quantization.mxfp4 import (
    GPT_OSS_CHECKED,
    gpt_oss_mxfp4_backend,
    triton_hopper_mxfp4_experts_bytes,
    trtllm_mxfp4_experts_bytes,
)
from dryboot.vllm.model_executor.model_loader.loader import model_weights

HERE = Path(__file__).resolve().parent
CONFIGS = HERE / "data" / "weights" / "quant-configs"
GPT_OSS_20B = CONFIGS / "openai--gpt-oss-20b"
RECORDED_0_28 = load_recorded("quant-recorded-0.28.0-mxfp4")["0.28.0"]


@pytest.mark.parametrize(
    ("version", "sm", "backend"),
    [
        ("0.28.0", 80, "MARLIN"),
        ("0.28.0", 86, "MARLIN"),
        ("0.28.0", 89, "MARLIN"),
        ("0.28.0", 90, "TRITON"),
        ("0.28.0", 100, "FLASHINFER_TRTLLM_MXFP4_BF16"),
        ("0.28.0", 120, "MARLIN"),  # the OAI Triton kernels stop below SM 11.0 up to 0.30
        ("0.29.0", 120, "MARLIN"),
        ("0.30.0", 120, "MARLIN"),
        ("0.31.0", 120, "MARLIN"),  # recorded: gpt-oss-20b on RTX 5090 through Marlin
        # 0.32+: the OAI Triton kernels serve up to SM 12.x, but the list puts them after Marlin on
        # the SM 12.x family (recorded: gpt-oss on RTX 5090 through Marlin, 0.32.0 and 0.33.0)
        ("0.32.0", 120, "MARLIN"),
        ("0.33.0", 120, "MARLIN"),
        ("0.33.0", 121, "MARLIN"),
        ("0.32.0", 110, "TRITON"),
        ("0.33.0", 110, "TRITON"),
        ("0.33.0", 100, "FLASHINFER_TRTLLM_MXFP4_BF16"),
        ("0.33.0", 89, "MARLIN"),
    ],
)
def test_backend_per_sm_and_release(version: str, sm: int, backend: str) -> None:
    rules = quant_rules(version)
    assert gpt_oss_mxfp4_backend(sm, rules.oai_triton_below, rules.oai_triton_after_marlin) == backend


def test_refused_by_name_where_not_modelled() -> None:
    def refused(**kw: object) -> str:
        report = model_weights(GPT_OSS_20B, **kw)  # type: ignore[arg-type]
        assert report.refused is not None
        return report.refused

    assert "name the GPU" in refused()
    assert "give max_num_batched_tokens" in refused(compute_capability=(10, 0), sm_count=148, vllm_version="0.33.0")
    assert "from SM 8.0" in refused(compute_capability=(7, 5), sm_count=40)
    # SM 11.x (0.32+): the OAI Triton kernels' Blackwell layouts (triton_kernels), not modelled
    assert "Blackwell swizzled" in refused(compute_capability=(11, 0), sm_count=20, vllm_version="0.33.0")
    assert "checked on vLLM" in refused(compute_capability=(8, 9), sm_count=128, vllm_version="0.26.0")
    with pytest.raises(InputError, match="no MXFP4 MoE backend"):
        gpt_oss_mxfp4_backend(70, 110)


def _plan(gpu: str, *extra: str) -> tuple[int, str]:
    return plan_output(GPT_OSS_20B, gpu, *extra)


@pytest.mark.parametrize("gpu", ["RTX 4090", "RTX 5090"])
def test_plan_prints_vllms_weights_and_a_verdict(gpu: str) -> None:
    """Marlin on SM 8.9 and 12.0 (vLLM 0.28.0, dryboot's default release): the weights line is
    vLLM's recorded figure, and the plan ends in a verdict."""
    code, out = _plan(gpu)
    want = RECORDED_0_28[f"openai--gpt-oss-20b {gpu} --tensor-parallel-size 1"]["allocated_bytes"]
    assert f"{want:,} bytes" in out, out[-1500:]
    # 13.70 GiB of tensors; the load segments (max_split_size_mb 20: each repacked expert stack keeps
    # its 2 MiB-rounded segment) make the line 13.80
    assert "Model loading took 13.80 GiB memory" in out
    assert code == 0 and "verdict: fits (exit 0)" in out, out[-800:]


def test_triton_hopper_layout_bytes() -> None:
    """gpt-oss-20b at TP 2 (intermediate 1440 per rank, rounded to 1472 for the Triton backend):
    the Hopper value layout pads nothing here (2 x 1472 rows of 1440 bytes), the scale layout pads
    the rows to 256 and the scale groups (1472 / 32 = 46 -> 48 for ``w2``, 90 -> 92 for ``w13``)."""
    got = triton_hopper_mxfp4_experts_bytes(32, 2880, 1440)
    assert got == [
        ("experts", 32 * 2944 * 1440),
        ("experts", 32 * 2880 * 736),
        ("scale", 32 * 3072 * 92),
        ("scale", 32 * 3072 * 48),
        ("experts", 32 * 2944 * 4),
        ("experts", 32 * 2880 * 4),
    ]


def test_trtllm_layout_bytes() -> None:
    """gpt-oss-20b at TP 2 on FlashInfer TRT-LLM: hidden 2880 -> 3072, intermediate 1440 -> 1536,
    so ``2 ip == hp`` and the two biases share one cached permutation (five int64 row maps)."""
    got = trtllm_mxfp4_experts_bytes(32, 2880, 1440)
    maps = [n for kind, n in got if kind == "workspace" and n != 32 * 4]
    assert sorted(maps) == [3072 * 8] * 5
    assert got[:6] == [
        ("experts", 32 * 3072 * 1536),
        ("experts", 32 * 3072 * 768),
        ("scale", 32 * 3072 * 96),
        ("scale", 32 * 3072 * 48),
        ("experts", 32 * 3072 * 4),
        ("experts", 32 * 3072 * 4),
    ]


@pytest.mark.parametrize(
    ("version", "gpu"),
    [(v, "H100") for v in GPT_OSS_CHECKED["TRITON"]]
    + [(v, "B200") for v in GPT_OSS_CHECKED["FLASHINFER_TRTLLM_MXFP4_BF16"]],
)
def test_plan_on_h100_and_b200_prints_vllms_weights(version: str, gpu: str) -> None:
    """The OAI Triton backend on SM 9.0, FlashInfer TRT-LLM on SM 10.0: the weights line is vLLM's
    recorded figure."""
    # the recorded rows' token count (0.33.0's FlashInfer KV counter on the B200 is sized by it)
    code, out = _plan(gpu, "--vllm-version", version, "--max-num-batched-tokens", "8192")
    rec = load_recorded(f"quant-recorded-{version}-mxfp4")[version]
    want = rec[f"openai--gpt-oss-20b {gpu} --tensor-parallel-size 1"]["allocated_bytes"]
    assert f"{want:,} bytes" in out, out[-1500:]
    assert code == 0 and "verdict: fits (exit 0)" in out, out[-800:]


@pytest.mark.parametrize("gpu", ["B200", "RTX 5090"])
def test_plan_on_blackwell_with_0_33_prints_vllms_weights(gpu: str) -> None:
    """vLLM 0.33.0 on SM 10.0 (FlashInfer TRT-LLM) and SM 12.0 (Marlin ahead of the OAI Triton
    kernels): the weights line is vLLM's figure recorded with ``flashinfer-cubin`` (FlashInfer
    attention for the sinks: its KV counter for the plan's 8,192 batched tokens and the float32
    sinks)."""
    code, out = _plan(gpu, "--vllm-version", "0.33.0", "--max-num-batched-tokens", "8192")
    rec = load_recorded("quant-recorded-0.33.0-mxfp4")["0.33.0"]
    row = rec[f"openai--gpt-oss-20b {gpu} --tensor-parallel-size 1"]
    assert row["flashinfer_cubin"] and row["max_num_batched_tokens"] == 8192
    assert f"{row['allocated_bytes']:,} bytes" in out, out[-1500:]
    assert code == 0 and "verdict: fits (exit 0)" in out, out[-800:]


@pytest.mark.parametrize("gpu", ["B200", "RTX 5090"])
def test_plan_without_flashinfer_cubin_holds_no_counter(gpu: str) -> None:
    """``--no-flashinfer-cubin`` reaches the weights: without the package vLLM 0.33.0 serves the sinks
    on another backend, so neither FlashInfer's KV counter nor the float32 sinks are held (vLLM's
    figure recorded with ``VLLM_HAS_FLASHINFER_CUBIN=0``)."""
    code, out = _plan(gpu, "--vllm-version", "0.33.0", "--max-num-batched-tokens", "8192", "--no-flashinfer-cubin")
    rec = load_recorded("quant-recorded-0.33.0-mxfp4")["0.33.0"]
    row = rec[f"openai--gpt-oss-20b {gpu} --tensor-parallel-size 1 (no flashinfer-cubin)"]
    assert row["flashinfer_cubin"] is False
    assert f"{row['allocated_bytes']:,} bytes" in out, out[-1500:]
    assert code == 0, out[-800:]


#: releases before 0.33.0 (no KV counter with the weights); gpt-oss's decoder layers per config
BEFORE_0_33 = ("0.27.1", "0.28.0", "0.29.0", "0.30.0", "0.31.0", "0.32.0")
GPT_OSS_LAYERS = {"openai--gpt-oss-20b": 24, "openai--gpt-oss-120b": 36}


@pytest.mark.parametrize("version", BEFORE_0_33)
@pytest.mark.parametrize("gpu", ["B200", "RTX 5090"])
def test_flashinfer_cubin_adds_the_float32_sinks_before_0_33(version: str, gpu: str) -> None:
    """With ``flashinfer-cubin`` (``VLLM_HAS_FLASHINFER_CUBIN=1``) FlashInfer serves the sinks on SM
    10.0 on every release, and on SM 12.0 from 0.28.0 (``FlashInferBackend.supports_sink``: 0.27.1
    takes the SM 10.x family only); its post-load step keeps a float32 copy of each layer's sinks
    (``[64]``: one 512-byte block a layer), the only difference from the rows recorded without the
    package (before 0.33.0 no KV counter). dryboot gives both figures (``flashinfer_cubin``); it was
    12,288 B (20b) / 18,432 B (120b) short with the package."""
    rec = load_recorded(f"quant-recorded-{version}-mxfp4")[version]
    checked = 0
    for config, layers in GPT_OSS_LAYERS.items():
        cid = f"{config} {gpu} --tensor-parallel-size 1"
        if cid not in rec or f"{cid} (no flashinfer-cubin)" not in rec:
            continue
        checked += 1
        cubin, without = rec[cid], rec[f"{cid} (no flashinfer-cubin)"]
        assert cubin["flashinfer_cubin"] and without["flashinfer_cubin"] is False
        sinks = 0 if (gpu == "RTX 5090" and version == "0.27.1") else layers * 512
        assert cubin["allocated_bytes"] - without["allocated_bytes"] == sinks
        for row in (cubin, without):
            report = model_weights(
                Path(__file__).resolve().parent / "data" / "weights" / "quant-configs" / config,
                tp=1,
                compute_capability=tuple(row["capability"]),
                sm_count=row["sm_count"],
                vllm_version=version,
                max_num_batched_tokens=8192,
                flashinfer_cubin=row["flashinfer_cubin"],
            )
            assert report.stages[0].allocated_bytes == row["allocated_bytes"], (cid, row["flashinfer_cubin"])
    assert checked, "no pair of rows recorded"

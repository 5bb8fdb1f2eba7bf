"""Compressed-tensors fp8 below SM 8.9 through Humming's W8A16 fp8 kernel, against vLLM itself.

Every release 0.27.1-0.33.0 serves compressed-tensors fp8 weight-only below SM 8.9
(``CompressedTensorsW8A16Fp8``) through its W8A16 fp8 kernel list, ``HummingFP8ScaledMMLinearKernel``
ahead of Marlin's (``kernels/linear/__init__.py`` ``_POSSIBLE_WFP8A16_KERNELS``), and every CUDA wheel
requires ``humming-kernels``. The rows of ``quant-recorded-humfp8-<version>.json`` are vLLM's own after
``process_weights_after_loading`` on the meta device, each recorded with the ``humming-kernels`` wheel
its release pins on ``DRYBOOT_HUMMING_PATH`` (``quant_cases_humfp8.py``): fp8 channel, block and
per-tensor weights (dense Qwen3-8B; Qwen2.5-1.5B / 0.5B with their ``qkv_proj`` bias; the tiny Llama-4's
dense layers, its fp8 experts on Marlin's MoE backend), on the RTX 3090 (SM 8.6) and A100 (SM 8.0). dryboot's model:
``scaled_mm.humming_fp8_linear_bytes``.

``test_live_oracle`` re-records two cases when ``DRYBOOT_VLLM_PYTHON`` and ``DRYBOOT_HUMMING_PATH``
are set (the wheel that release pins).
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

import pytest
import quant_cases_humfp8 as hf
from quant_harness import case_ids, dryboot_weights, load_recorded, plan_output, record_live

from dryboot.vllm.model_executor.kernels.linear.humming import FIXED_LOCKS, humming_fp8_locks_bytes
from dryboot.vllm.model_executor.layers.quantization import QUANT_RULES
from dryboot.vllm.model_executor.layers.quantization.scaled_mm import ScaledScheme, humming_fp8_linear_bytes
from dryboot.vllm.model_executor.models import llama4

RECORDED = load_recorded("quant-recorded-humfp8-")
CASES = case_ids(RECORDED)
#: the humming-kernels wheel each release's CUDA wheel pins (its METADATA's Requires-Dist)
PINNED = {
    "0.27.1": "0.1.10",
    "0.28.0": "0.1.12",
    "0.29.0": "0.1.12",
    "0.30.0": "0.1.12",
    "0.31.0": "0.1.16",
    "0.32.0": "0.1.17",
    "0.33.0": "0.1.19",
}


def _llama4_out_of_scope(version: str, row: dict[str, Any]) -> bool:
    """The tiny Llama-4 on a GPU or release its quantized records do not cover (``llama4.QUANT_SMS`` /
    ``QUANT_RELEASES``: the A100's SM 8.0): dryboot refuses the model by name, whatever the kernel."""
    sm = row["capability"][0] * 10 + row["capability"][1]
    return "llama4" in row["config"] and (sm not in llama4.QUANT_SMS or version not in llama4.QUANT_RELEASES)


def _check(version: str, row: dict[str, Any]) -> None:
    report = dryboot_weights(hf.CONFIGS, row, version)
    if _llama4_out_of_scope(version, row):
        assert "quantized Llama-4 layouts" in (report.refused or ""), report.refused
        return
    if not row["ok"]:
        assert report.refused, f"vLLM or the oracle fails ({str(row.get('error'))[:200]}); dryboot answered"
        return
    assert not report.refused, report.refused
    assert report.stages[0].allocated_bytes == row["allocated_bytes"], (row, report.stages[0].allocated_bytes)


@pytest.mark.parametrize(("version", "cid"), CASES)
def test_matches_vllm_after_loading(version: str, cid: str) -> None:
    """Each recorded case: byte-exact where vLLM answers (before: refused by name, "served weight-only
    by its Humming kernels"), refused where it fails."""
    _check(version, RECORDED[version][cid])


def test_recorded_with_the_pinned_package_through_humming() -> None:
    """Every row is recorded with the wheel its release pins, and every dense fp8 layer vLLM built went
    to ``HummingFP8ScaledMMLinearKernel`` (no Marlin fp8 linear kernel); both GPUs, channel, block and
    per-tensor weights, on every release recorded."""
    assert set(RECORDED) == set(PINNED)
    for version, cases in RECORDED.items():
        gpus, configs = set(), set()
        for row in cases.values():
            assert row["humming"] == PINNED[version], (version, row["humming"])
            if row["ok"]:
                assert "HummingFP8ScaledMMLinearKernel" in row["kernels"], row["kernels"]
                assert "MarlinFP8ScaledMMLinearKernel" not in row["kernels"], row["kernels"]
                gpus.add(row["gpu"])
                configs.add(row["config"].rsplit("-", 1)[-1])
        assert gpus == {"RTX 3090", "A100-80GB"}, (version, gpus)
        assert configs >= {"dynamic", "block", "static"}, (version, configs)


def test_bias_on_every_release() -> None:
    """Qwen2.5's ``qkv_proj`` bias through Humming's W8A16 fp8 kernel: recorded on every release with its
    pinned package (1.5B: 2048 outputs; 0.5B: 1152, the weight padded to 1280; its bias, padded or not,
    fills the same 512-byte blocks) and byte-exact. 0.27.1-0.30.0 keep
    the padded bias alone (``humming_utils.py``), 0.31.0+ a ``zero_bias`` twin too; refused by name on
    0.27.1-0.30.0 before ("bias handling before 0.31.0 is not recorded")."""
    for name in ("Qwen--Qwen2.5-1.5B+CT-W8A8-FP8-dynamic", "Qwen--Qwen2.5-0.5B+CT-W8A8-FP8-dynamic"):
        for version in PINNED:
            rows = [r for r in RECORDED[version].values() if r["config"] == name and r["ok"]]
            assert {r["argv"][-1] for r in rows} == {"1", "2"}, (name, version)
            for row in rows:
                report = dryboot_weights(hf.CONFIGS, row, version)
                assert report.stages[0].allocated_bytes == row["allocated_bytes"], (name, version, row["gpu"])


def test_known_llama4_block_figure() -> None:
    """0.33.0 with humming-kernels 0.1.19, the tiny Llama-4 fp8 block config on the RTX 3090 at TP 1:
    43,294,208 bytes (Marlin's, recorded without the package: 43,548,160)."""
    row = RECORDED["0.33.0"]["tiny-llama4-text+CT-W8A8-FP8-block RTX 3090 --tensor-parallel-size 1"]
    assert row["allocated_bytes"] == 43_294_208
    assert dryboot_weights(hf.CONFIGS, row, "0.33.0").stages[0].allocated_bytes == 43_294_208


def test_layer_layout() -> None:
    """Qwen3-8B's QKV layer at TP 1 (n = 6144, k = 4096): the fp8 weight one byte per element; a
    channel scale per output in the activation dtype, a block scale float32 per 128 x 128 block; no
    input scale; the locks: 1024 int32 before 0.32.0, ``8 x SMs`` int32 from 0.32.0 (82 SMs)."""
    n, k = 6144, 4096
    channel = humming_fp8_linear_bytes(ScaledScheme("fp8", "channel"), n, k, 2, locks=4096)
    assert channel == [("weight", n * k), ("scale", n * 2), ("workspace", 4096)]
    block = humming_fp8_linear_bytes(ScaledScheme("fp8", "block", (128, 128)), n, k, 2, locks=4096)
    assert block == [("weight", n * k), ("scale", 48 * 32 * 4), ("workspace", 4096)]
    # padded to 256 outputs and 128 inputs; a bias and its zero_bias
    odd = humming_fp8_linear_bytes(ScaledScheme("fp8", "channel"), 1000, 1000, 2, locks=0, bias=True)
    assert odd == [("weight", 1024 * 1024), ("scale", 2048), ("bias", 2048), ("bias", 2048), ("workspace", 0)]
    # 0.27.1-0.30.0 (humming_utils.py): the padded bias alone
    alone = humming_fp8_linear_bytes(ScaledScheme("fp8", "channel"), 1000, 1000, 2, locks=0, bias=True, zero_bias=False)
    assert alone == [("weight", 1024 * 1024), ("scale", 2048), ("bias", 2048), ("workspace", 0)]
    assert humming_fp8_locks_bytes("fixed", None) == FIXED_LOCKS * 4 == 4096
    assert humming_fp8_locks_bytes("sm", 82) == 8 * 82 * 4
    assert {v: r.humming_wfp8a16_locks for v, r in QUANT_RULES.items()} == {
        "0.27.1": "fixed",
        "0.28.0": "fixed",
        "0.29.0": "fixed",
        "0.30.0": "fixed",
        "0.31.0": "fixed",
        "0.32.0": "sm",
        "0.33.0": "sm",
    }


def test_plan_rtx3090_prints_weights() -> None:
    """``plan --gpu "RTX 3090"`` on the Qwen3-8B fp8 block checkpoint (0.33.0, the default release):
    vLLM's figure, where dryboot refused before."""
    cfg = hf.CONFIGS / "Qwen--Qwen3-8B+CT-W8A8-FP8-block"
    code, out = plan_output(cfg, "RTX 3090", "--vllm-version", "0.33.0")
    want = RECORDED["0.33.0"][f"{cfg.name} RTX 3090 --tensor-parallel-size 1"]["allocated_bytes"]
    assert code == 0 and f"{want:,} bytes" in out, out[-2000:]


@pytest.mark.skipif(
    not (os.environ.get("DRYBOOT_VLLM_PYTHON") and os.environ.get("DRYBOOT_HUMMING_PATH")),
    reason="needs a boot environment (DRYBOOT_VLLM_PYTHON) and the humming-kernels wheel it pins "
    "(DRYBOOT_HUMMING_PATH)",
)
def test_live_oracle(tmp_path: Path) -> None:
    """Re-record two cases with the boot environment's vLLM and check dryboot against them."""
    names = ["Qwen--Qwen3-8B+CT-W8A8-FP8-block", "tiny-llama4-text+CT-W8A8-FP8-dynamic"]
    doc = record_live(tmp_path, names, RECORD_SET="humfp8", RECORD_GPUS="RTX 3090", RECORD_TPS="1", RECORD_FAST="1")
    assert len(doc["cases"]) == 2
    for row in doc["cases"].values():
        _check(doc["vllm"], row)


def test_static_input_scales_kept_on_0271() -> None:
    """0.27.1 (humming-kernels 0.1.10) keeps each Humming fp8 layer's static ``input_scale`` (``[parts]``
    float32, one 512-byte block): Qwen3-8B's static checkpoint holds 36 layers x 4 linear layers x 512 B =
    73,728 bytes over the dynamic one on the RTX 3090 at TP 1; 0.28.0 drops it (the same figure). dryboot
    refused these rows by name before ("512 more bytes per layer than modelled")."""
    for version, extra in (("0.27.1", 73_728), ("0.28.0", 0)):
        rows = {
            c: RECORDED[version][f"Qwen--Qwen3-8B+CT-W8A8-FP8-{c} RTX 3090 --tensor-parallel-size 1"]
            for c in ("static", "dynamic")
        }
        assert rows["static"]["allocated_bytes"] - rows["dynamic"]["allocated_bytes"] == extra
        got = {c: dryboot_weights(hf.CONFIGS, row, version).stages[0].allocated_bytes for c, row in rows.items()}
        assert got["static"] - got["dynamic"] == extra

"""Which releases and GPUs put vLLM's Humming kernels ahead of Marlin, and what dryboot does there.

vLLM 0.33.0's ``layers/quantization/utils/humming/priority.py`` (``prioritize_humming``) moves
Humming directly ahead of Marlin in every kernel list on SM 9.0 only (``_HUMMING_PREFERRED_CAPABILITIES``);
``kernels/linear/__init__.py`` applies it to the mixed-precision list (CutlassW4A8, Machete,
Humming, Marlin, ...), the NVFP4 list (and forces Marlin for weight-only NVFP4 only where Humming
is not preferred), and the fused-MoE oracles do the same. ``humming-kernels`` is a requirement of
every CUDA wheel 0.27.1-0.33.0 but absent from the CPU boot environments, so the oracle picked
Marlin where a CUDA install picks Humming: those layers are refused by name. 0.27.1-0.30.0 have no
``prioritize_humming`` and list Humming after Marlin (the recorded Marlin cases stand).
"""

from __future__ import annotations

import json
from dataclasses import replace
from pathlib import Path

import pytest

from dryboot.errors import InputError
from dryboot.vllm.model_executor.kernels.linear.mixed_precision import MPLinearLayerConfig, choose_mp_linear_kernel
from dryboot.vllm.model_executor.layers.quantization import QUANT_RULES
from dryboot.vllm.model_executor.layers.quantization.modelopt import modelopt_experts_bytes, modelopt_quant
from dryboot.vllm.model_executor.layers.quantization.scaled_mm import nvfp4_marlin_bytes
from dryboot.vllm.model_executor.model_loader.loader import model_weights

DATA = Path(__file__).resolve().parent / "data" / "weights"
CT_G32 = DATA / "quant-configs" / "Qwen--Qwen3-8B+CT-W4A16-g32"
GPTQ_G128 = DATA / "quant-configs" / "Qwen--Qwen3-8B+GPTQ-Int4-g128"
NVFP4_72B = DATA / "quant-configs-extra" / "Qwen--Qwen2.5-72B+CT-NVFP4"


def test_only_0330_prefers_humming_and_only_on_sm90() -> None:
    assert {v: r.humming_before_marlin for v, r in QUANT_RULES.items()} == {
        "0.27.1": (),
        "0.28.0": (),
        "0.30.0": (),
        "0.33.0": (90,),
    }


def _g(group: int) -> MPLinearLayerConfig:
    return MPLinearLayerConfig(
        k=4096, n=4096, full_k=4096, bits=4, zero_points=False, group_size=group, has_g_idx=False
    )


def test_humming_takes_what_machete_declines() -> None:
    # Machete (ahead of Humming) keeps group 128; group 32 falls to Humming where it is preferred
    assert choose_mp_linear_kernel(_g(128), 90, allspark=False, humming=True) == "MacheteLinearKernel"
    with pytest.raises(InputError, match="HummingLinearKernel"):
        choose_mp_linear_kernel(_g(32), 90, allspark=False, humming=True)
    assert choose_mp_linear_kernel(_g(32), 90, allspark=False) == "MarlinLinearKernel"


@pytest.mark.parametrize(
    ("config", "version", "capability", "humming"),
    [
        (CT_G32, "0.33.0", (9, 0), True),
        (CT_G32, "0.33.0", (8, 9), False),
        (CT_G32, "0.30.0", (9, 0), False),
        (CT_G32, "0.27.1", (9, 0), False),
        (GPTQ_G128, "0.33.0", (9, 0), False),  # Machete serves it, ahead of Humming
        (NVFP4_72B, "0.33.0", (9, 0), True),
        (NVFP4_72B, "0.33.0", (8, 9), False),
        (NVFP4_72B, "0.28.0", (9, 0), False),
    ],
)
def test_refused_where_humming_serves(config: Path, version: str, capability: tuple[int, int], humming: bool) -> None:
    r = model_weights(config, tp=4, compute_capability=capability, sm_count=132, vllm_version=version)
    if humming:
        assert r.refused is not None and "Humming" in r.refused and "not modelled" in r.refused
    else:
        assert r.refused is None, r.refused


def test_modelopt_nvfp4_experts_refused_where_humming_serves() -> None:
    """fused_moe/oracle/nvfp4.py: prioritize_humming over [..., MARLIN, HUMMING, ...]."""
    q = replace(modelopt_quant("NVFP4", ()), capability=90, sm_count=132, layer_workspace=False)
    assert modelopt_experts_bytes(q, "model.layers.0.mlp.experts", 128, 2048, 768)
    with pytest.raises(InputError, match="Humming MoE"):
        modelopt_experts_bytes(replace(q, humming=True), "model.layers.0.mlp.experts", 128, 2048, 768)


def test_nvfp4_marlin_padding() -> None:
    """Qwen2.5-72B's down_proj at TP 4 (k = 29568 / 4 = 7392): Marlin pads k to 7424; the padded
    case is recorded (quant-recorded-extra-0.28.0.json) and matched in test_quant_weights_extra."""
    assert nvfp4_marlin_bytes(8192, 7392) == [("weight", 8192 * 7424 // 2), ("scale", 8192 * 7424 // 16)]
    assert nvfp4_marlin_bytes(4096, 4096) == [("weight", 4096 * 4096 // 2), ("scale", 4096 * 4096 // 16)]
    rec = json.loads((DATA / "quant-recorded-extra-0.28.0.json").read_text())["cases"]
    row = rec["Qwen--Qwen2.5-72B+CT-NVFP4 RTX 3090 --tensor-parallel-size 4"]
    assert row["ok"] and row["kernels"]["MarlinNvFp4LinearKernel"] == 320

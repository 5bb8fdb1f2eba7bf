"""Inkling on vLLM 0.33.0 (issue 37): dryboot's figures and KV cache lines against what vLLM's own
engine start answered and logged (``data/inkling/``, ``record_inkling.py``) on the cases of
``inkling_cases.py``; and the family's readers and refusals. Needs no vLLM.
"""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import Any

import pytest

sys.path.insert(0, str(Path(__file__).resolve().parent))

import e2e_harness as H
import inkling_cases as C

from dryboot.errors import InputError
from dryboot.vllm.config.hf import ConfigFields, InklingConvCaches, LayerKind, extra_of
from dryboot.vllm.engine_args import EngineArgs
from dryboot.vllm.models import inkling
from dryboot.vllm.models.inkling import inkling_conv_spec

pytestmark = pytest.mark.fidelity

#: the lines dryboot prints of those vLLM logs (``engine_start.KV_LOG_MARKERS``; "kv lcm" is a debug line)
_MARKERS = ("block size", "num_gpu_blocks", "Auto-fit max_model_len", "GPU KV cache size", "Maximum concurrency")


def _kv_lines(lines: Any) -> list[str]:
    return [m for m in lines or () if any(k in m for k in _MARKERS) and not m.startswith("kv lcm")]


def _rows() -> list[dict[str, Any]]:
    rows: list[dict[str, Any]] = json.loads(C.record_path().read_text())["cases"]
    return rows


def test_recorded_cases_are_the_cases() -> None:
    assert [(r["id"], r["argv"]) for r in _rows()] == [(c["id"], c["argv"]) for c in C.cases()]


@pytest.mark.parametrize("case", C.cases(), ids=lambda c: c["id"])
def test_figures_and_lines_match_vllm(case: dict[str, Any]) -> None:
    row = next(r for r in _rows() if r["id"] == case["id"])
    gpu = ["--gpu", case["gpu"]] if case.get("gpu") else []
    c = H.Case(id=case["id"], family="inkling", model=C.materialize(case), argv=[*case["argv"], *gpu])
    got = H.run_dryboot(c, C.RELEASE)
    verdict = H.compare(row["vllm"], got)
    assert verdict["agree"], f"vLLM {H._answer(row['vllm'], vllm=True)}\ndryboot {H._answer(got, vllm=False)}"
    if row["vllm"].get("ok"):
        assert _kv_lines(got.get("log")) == _kv_lines(row["vllm"].get("kv_log"))


def _fields(**over: Any) -> ConfigFields:
    data = {
        "model_type": "inkling_model",
        "hidden_size": 256,
        "num_hidden_layers": 4,
        "num_attention_heads": 8,
        "num_key_value_heads": 2,
        "head_dim": 64,
        "local_layer_ids": [0, 2],
        "swa_num_key_value_heads": 4,
        "swa_head_dim": 32,
        "n_routed_experts": 8,
        "n_shared_experts": 1,
        "shared_expert_sink": True,
        "torch_dtype": "bfloat16",
        **over,
    }
    return ConfigFields("config.json", data, "").with_defaults(inkling.defaults(ConfigFields("c", data, "")))


def test_packed_head_is_the_four_streams_rounded_to_a_power_of_two() -> None:
    # K and V of 32, attention and MLP outputs of 256 / 4 = 64 each: 192 -> 256
    assert inkling.packed_head_size(32, 256, 4) == 256
    assert inkling.packed_head_size(64, 256, 2) == 512
    # the published small shape (hidden 4096, 8 KV heads of 128): 256 + 1024 = 1280 -> 2048
    assert inkling.packed_head_size(128, 4096, 8) == 2048


def test_each_layer_keeps_its_conv_state_then_its_attention() -> None:
    model = inkling.read(_fields(), "InklingForCausalLM")
    assert model.layer_kinds[:4] == (
        LayerKind.INKLING_CONV,
        LayerKind.SLIDING,
        LayerKind.INKLING_CONV_FULL,
        LayerKind.FULL,
    )
    assert model.naming.layer_names is not None
    assert model.naming.layer_names[:2] == ("model.layers.0.conv_state", "model.layers.0.attn")
    assert model.num_decoder_layers == 4
    conv = extra_of(model, InklingConvCaches)
    assert conv == InklingConvCaches(kernel_size=4, sliding=(4, 256), full=(2, 512), query_heads=(8, 8))
    spec = inkling_conv_spec(conv, LayerKind.INKLING_CONV, 2)
    # SlidingWindowSpec(block_size=4, num_kv_heads=4 // 2, head_size=256, head_size_v=0, bfloat16, window 4)
    assert (spec.block_size, spec.sliding_window, spec.num_kv_heads, spec.page_size_bytes) == (4, 4, 2, 4096)


def test_hf_kernel_name_is_read() -> None:
    assert inkling.kernel_size(_fields(conv_kernel_size=3)) == 3
    assert inkling.kernel_size(_fields()) == 4


def test_moe_assertions_refused() -> None:
    with pytest.raises(InputError, match="InklingMoE"):
        inkling.read(_fields(shared_expert_sink=False), "InklingForCausalLM")
    # every layer dense: no MoE block is built
    inkling.read(_fields(shared_expert_sink=False, dense_mlp_idx=4), "InklingForCausalLM")
    with pytest.raises(InputError, match="without routed experts"):
        inkling.read(_fields(n_routed_experts=0), "InklingForCausalLM")


def test_tp_above_a_layer_types_kv_heads_refused_layer_zero_first() -> None:
    model = inkling.read(_fields(), "InklingForCausalLM")
    with pytest.raises(InputError, match=r"num_kv_heads \(4\), got 8"):
        inkling.verify_layers(model, EngineArgs(tensor_parallel_size=8))
    full_first = inkling.read(_fields(local_layer_ids=[1, 3]), "InklingForCausalLM")
    with pytest.raises(InputError, match=r"num_kv_heads \(2\), got 4"):
        inkling.verify_layers(full_first, EngineArgs(tensor_parallel_size=4))


def test_float16_refused() -> None:
    model = inkling.read(_fields(), "InklingForCausalLM")
    with pytest.raises(InputError, match="bfloat16 only"):
        inkling.engine_args(model, EngineArgs(dtype="float16"))


def test_mtp_drafter_refused_by_name() -> None:
    model = inkling.read(_fields(num_nextn_predict_layers=1), "InklingForCausalLM")
    with pytest.raises(InputError, match="InklingMTP"):
        inkling.engine_args(model, EngineArgs(speculative_method="mtp", num_speculative_tokens=1))

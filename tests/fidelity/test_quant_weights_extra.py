"""dryboot's W8A8 (int8, fp8) and NVFP4 / ModelOpt weights against what vLLM holds after loading.

The second set of quantized cases (``quant_cases_extra.py``): ``data/weights/
quant-recorded-extra-<version>.json`` holds vLLM's own figures, recorded as the first set's
(``RECORD_SET=extra record_quant_weights.py``: the model built by vLLM's loader on the meta
device, vLLM's ``process_weights_after_loading`` run, every storage still held counted in
512-byte blocks) for the configs of ``data/weights/quant-configs-extra/`` on five GPUs (SM 8.6,
8.9, 9.0, 10.0, 12.0) under TP 1 and 2. Every case is checked in the default run (no vLLM
needed); with ``DRYBOOT_VLLM_PYTHON`` set, a few are re-recorded live and checked.
"""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any

import pytest
import quant_cases_extra as extra
from hypothesis import given, settings
from hypothesis import strategies as st
from quant_harness import (
    NO_TOKEN_COUNT,
    case_ids,
    dryboot_weights,
    load_recorded,
    no_token_count,
    plan_output,
    record_live,
    recorded_without_humming,
)

from dryboot.errors import InputError
from dryboot.vllm.model_executor.layers.quantization.scaled_mm import ct_scaled_from_config
from dryboot.vllm.model_executor.model_loader.loader import model_weights

HERE = Path(__file__).resolve().parent
RECORDED = load_recorded("quant-recorded-extra-")
CASES = case_ids(RECORDED)
#: an oracle failure that is not vLLM's answer: a kernel whose output shape vLLM does not declare
ORACLE_LIMIT = "with Meta tensors"
#: releases whose compressed-tensors W4A16 Marlin MoE experts this set records exact (SM 7.5-9.x)
MARLIN_MOE_RELEASES = ("0.27.1", "0.28.0")


def _dryboot(row: dict[str, Any], version: str) -> Any:
    return dryboot_weights(extra.CONFIGS, row, version)


def _modelopt(row: dict[str, Any]) -> bool:
    """A published ModelOpt config (nvidia's), not one composed on an nvidia base config."""
    return bool(row["config"].startswith("nvidia--") and "+CT-" not in row["config"])


def _deep_gemm(version: str, row: dict[str, Any]) -> bool:
    """fp8 blocks on SM 9.0+ outside 0.28.0: a CUDA install's DeepGEMM (vendored by the wheel) takes
    them, whose scale layout this set's oracle (without DeepGEMM) does not run: refused by name."""
    return version != "0.28.0" and row["capability"][0] >= 9 and "FP8-block" in row["config"]


def _needs_token_count(version: str, row: dict[str, Any]) -> bool:
    """0.33.0's rows on SM 10.0+ lack the token count (``quant_harness.no_token_count``) that sizes
    FlashInfer's KV counter, built on SM 10.x and for the ModelOpt checkpoints' fp8 KV cache on
    SM 12.x: refused by name there (the ``bw33`` set holds them byte-exact, with the count)."""
    return no_token_count(version, row) and (row["capability"][0] == 10 or _modelopt(row))


def _exact(version: str, row: dict[str, Any]) -> bool:
    # 0.33's FlashInfer attention builds its multi-CTA KV counter with the weights: on SM 8.x and
    # 12.x for the ModelOpt checkpoints' fp8 KV cache, on SM 10.x for every checkpoint (their RTX
    # 3090 / 4090 rows re-recorded with it in every case; SM 10.0+: _needs_token_count)
    if _needs_token_count(version, row):
        return False
    if "A3B" in row["config"] and (version not in MARLIN_MOE_RELEASES or row["capability"][0] >= 10):
        return False
    if _deep_gemm(version, row):
        return False
    if _humming_fp8(row):
        return False
    return bool(row["ok"])


def _humming_fp8(row: dict[str, Any]) -> bool:
    """Compressed-tensors fp8 below SM 8.9: served weight-only by Humming's W8A16 fp8 kernel, ahead of Marlin,
    in every release; these rows were recorded without humming-kernels (Marlin's figure, which a CUDA install
    does not take: ``recorded_without_humming``). dryboot answers Humming's layout (test_quant_humfp8.py)."""
    return recorded_without_humming(row)


def test_corpus_size() -> None:
    """At least 60 cases vLLM answered and dryboot matches to the byte, over two releases and
    each method: compressed-tensors int8 / fp8 (channel, block) / NVFP4, ModelOpt FP8 / NVFP4."""
    assert {"0.28.0", "0.33.0"} <= set(RECORDED)
    exact = [(v, row) for v, cases in RECORDED.items() for row in cases.values() if _exact(v, row)]
    assert len(exact) >= 60
    configs = {row["config"] for _, row in exact}
    assert {
        "Qwen--Qwen3-8B+CT-W8A8-INT8-dynamic",
        "Qwen--Qwen3-8B+CT-W8A8-FP8-dynamic",
        "Qwen--Qwen3-8B+CT-W8A8-FP8-block",
        "Qwen--Qwen3-8B+CT-NVFP4",
        "Qwen--Qwen3-30B-A3B+CT-W4A16-g32",  # Marlin MoE experts (0.28.0)
    } <= configs
    assert all(row["ok"] or row.get("error") for cases in RECORDED.values() for row in cases.values())


def test_later_releases_recorded_at_tp1() -> None:
    """0.29.0 to 0.32.0 (recorded at TP 1 on the five GPUs, and 0.30.0 at TP 2 too): int8, fp8
    channel (but compressed-tensors fp8 on the RTX 3090: Humming, recorded in test_quant_humfp8.py), NVFP4 (Marlin below
    SM 10.0, FlashInfer on B200 / RTX 5090) and the published
    ModelOpt FP8 / NVFP4 checkpoints byte-exact on every GPU (0.32.0's H100 NVFP4 rows through
    Humming, recorded with humming-kernels 0.1.17); ModelOpt FP8 on the RTX 3090 through CUTLASS
    on 0.29.0 / 0.30.0, Marlin on 0.31.0 / 0.32.0."""
    gpus = {g for g, _, _ in extra.GPUS}
    dense = (
        "Qwen--Qwen3-8B+CT-W8A8-INT8-dynamic",
        "Qwen--Qwen3-8B+CT-W8A8-FP8-dynamic",
        "Qwen--Qwen3-8B+CT-NVFP4",
        "nvidia--Llama-3.1-70B-Instruct-FP8",
        "nvidia--Qwen3-32B-NVFP4",
    )
    for version in ("0.29.0", "0.30.0", "0.31.0", "0.32.0"):
        exact = {(r["config"], r["gpu"]) for r in RECORDED[version].values() if _exact(version, r)}
        # compressed-tensors fp8 on the RTX 3090: Humming's W8A16 fp8 kernel (recorded without it here, _humming_fp8)
        want = {(c, g) for c in dense for g in gpus if not ("+CT-W8A8-FP8" in c and g == "RTX 3090")}
        assert want <= exact, (version, want - exact)
        for row in RECORDED[version].values():
            if _exact(version, row):
                assert _dryboot(row, version).stages[0].allocated_bytes == row["allocated_bytes"]


def test_0271_recorded_on_three_gpus() -> None:
    """0.27.1 (RTX 3090 / 4090 / H100, TP 1 and 2): every config byte-exact but compressed-tensors fp8
    on the RTX 3090 (weight-only through Humming, ahead of Marlin: the oracle lacked the package; dryboot
    answers Humming's layout, test_quant_humfp8.py) and fp8 blocks on the H100 (DeepGEMM, refused by name)."""
    rows = RECORDED["0.27.1"].values()
    exact = {(r["config"], r["gpu"], r["argv"][-1]) for r in rows if _exact("0.27.1", r)}
    want = {
        (c, g, tp)
        for c in {r["config"] for r in rows}
        for g in ("RTX 3090", "RTX 4090", "H100")
        for tp in ("1", "2")
        if not ("+CT-W8A8-FP8" in c and g == "RTX 3090") and not ("FP8-block" in c and g == "H100")
    }
    assert len(want) == 54 and want == exact
    for row in rows:
        if "+CT-W8A8-FP8" in row["config"] and row["gpu"] == "RTX 3090":
            # recorded without humming-kernels (0.27.1's Humming kernel imports it unchecked): dryboot answers
            # Humming's layout, recorded with 0.1.10 in quant-recorded-humfp8-0.27.1.json
            assert "No module named 'humming'" in row["error"]
            assert _dryboot(row, "0.27.1").refused is None


@pytest.mark.parametrize(("version", "cid"), CASES)
def test_matches_vllm_after_loading(version: str, cid: str) -> None:
    row = RECORDED[version][cid]
    report = _dryboot(row, version)
    if _humming_fp8(row):
        # recorded without humming-kernels (Marlin's figure, or 0.27.1's import error): dryboot answers
        # Humming's layout, recorded with the package in test_quant_humfp8.py
        assert not report.refused, report.refused
        return
    if not row["ok"]:
        # vLLM's refusal, or a kernel the oracle cannot run (named by dryboot)
        assert report.refused, f"vLLM or the oracle fails ({row['error'][:200]}); dryboot answered"
        if ORACLE_LIMIT in row["error"]:
            assert "not modelled" in report.refused
        return
    if "A3B" in row["config"] and (version not in MARLIN_MOE_RELEASES or row["capability"][0] >= 10):
        # Marlin MoE experts are checked on 0.27.1 / 0.28.0, SM 7.5-9.x (recorded there only)
        assert any(w in (report.refused or "") for w in ("0.28.0 only", "SM 7.5-9.x")), report.refused
        return
    if _deep_gemm(version, row):
        assert "DeepGEMM" in (report.refused or ""), report.refused
        return
    if _needs_token_count(version, row):
        assert NO_TOKEN_COUNT in (report.refused or ""), report.refused
        return
    assert not report.refused, report.refused
    assert report.stages[0].allocated_bytes == row["allocated_bytes"]


def test_modelopt_on_033_holds_flashinfers_counter() -> None:
    """The published ModelOpt FP8 / NVFP4 checkpoints on 0.33.0 below SM 9.0: their fp8 KV cache is
    FlashInfer's, which allocates one multi-CTA KV counter per process while the model is built
    (8,192 tokens x 64 query heads / TP int32: 2 MiB at TP 1, the "2 MiB once per process" once
    refused); each is byte-exact with it, and without the scheduler's token count refused by name."""
    from dryboot.vllm.backends import flashinfer_kv_counter_bytes

    rows = [r for r in RECORDED["0.33.0"].values() if _modelopt(r) and r["capability"][0] == 8]
    assert len(rows) == 8
    for row in rows:
        tp = int(row["argv"][-1])
        report = _dryboot(row, "0.33.0")
        assert report.refused is None and report.stages[0].allocated_bytes == row["allocated_bytes"]
        counter = flashinfer_kv_counter_bytes(row["max_num_batched_tokens"], 64 // tp, row["sm_count"])
        assert counter == 2 * 1024 * 1024 // tp
        cap = tuple(row["capability"])
        bare = model_weights(
            extra.CONFIGS / row["config"],
            tp=tp,
            compute_capability=cap,
            sm_count=row["sm_count"],
            vllm_version="0.33.0",
        )
        assert "give max_num_batched_tokens" in (bare.refused or ""), bare.refused


def test_kernel_per_gpu_is_vllms() -> None:
    """The kernels vLLM chose, which the layouts follow: fp8 through Marlin (weight-only) below SM
    8.9, NVFP4 through Marlin below SM 10.0 (Humming on SM 9.0 in 0.32.0 / 0.33.0) and FlashInfer from it,
    int8 through CUTLASS."""
    checked = 0
    for version, cases in RECORDED.items():
        for row in cases.values():
            kernels = {k for k in row.get("kernels", {}) if k.endswith("LinearKernel")}
            if not row["ok"] or not kernels:
                continue
            sm = row["capability"][0] * 10 + row["capability"][1]
            humming = version in ("0.32.0", "0.33.0") and sm == 90  # Humming ahead of Marlin (recorded with it)
            if humming and "NVFP4" in row["config"]:
                assert row.get("humming") and kernels == {"HummingNvFp4LinearKernel"}, (row["config"], kernels)
            elif "W4A16" in row["config"]:  # the MoE model's attention and router (group 32: not Machete)
                assert kernels == {"MarlinLinearKernel"}
                assert row["kernels"]["CompressedTensorsWNA16MoEMethod"] == 48
            elif "INT8" in row["config"]:
                assert kernels == {"CutlassInt8ScaledMMLinearKernel"}
            elif "NVFP4" in row["config"]:
                assert (kernels == {"MarlinNvFp4LinearKernel"}) == (sm < 100), (row["config"], sm, kernels)
            elif sm < 89 and _modelopt(row) and version in ("0.29.0", "0.30.0"):
                # their generic ModelOptLinearMethod takes CUTLASS below SM 8.9 (modelopt_fp8_marlin)
                assert kernels == {"CutlassFP8ScaledMMLinearKernel"}, (row["config"], sm, kernels)
            elif sm < 89:
                assert kernels == {"MarlinFP8ScaledMMLinearKernel"}, (row["config"], sm, kernels)
            else:
                assert "MarlinFP8ScaledMMLinearKernel" not in kernels
            checked += 1
    assert checked >= 40


def test_refusals_name_what_is_missing() -> None:
    """No GPU, asymmetric int8 inputs, W4A4 NVFP4 experts on SM 10.0 (TRT-LLM): refused by name."""
    fp8 = extra.CONFIGS / "Qwen--Qwen3-8B+CT-W8A8-FP8-dynamic"
    assert "name the GPU" in (model_weights(fp8).refused or "")
    qc = json.loads((extra.CONFIGS / "Qwen--Qwen3-8B+CT-W8A8-INT8-dynamic" / "config.json").read_text())[
        "quantization_config"
    ]
    asym = json.loads(json.dumps(qc))
    asym["config_groups"]["group_0"]["input_activations"]["symmetric"] = False
    with pytest.raises(InputError, match="azp"):
        ct_scaled_from_config(asym)
    moe = HERE / "data" / "weights" / "configs" / "nvidia--Qwen3-30B-A3B-NVFP4"
    assert "TRT-LLM" in (
        model_weights(moe, compute_capability=(10, 0), sm_count=148, vllm_version="0.31.0").refused or ""
    )
    # without a GPU ModelOpt keeps the layout vLLM builds (before its post-load step)
    assert model_weights(moe).refused is None


def test_ignore_and_per_layer_groups() -> None:
    """``ignore`` keeps a layer unquantized (a fused one by all its parts; by one part only, vLLM
    refuses it: ``should_ignore_layer``); a group naming a layer wins over ``Linear``; a fused
    layer whose parts differ is refused as vLLM refuses it."""
    fp8 = {
        "weights": {"num_bits": 8, "type": "float", "strategy": "channel", "symmetric": True},
        "input_activations": {"num_bits": 8, "type": "float", "strategy": "token", "dynamic": True},
    }
    int8 = {
        "weights": {"num_bits": 8, "type": "int", "strategy": "channel", "symmetric": True},
        "input_activations": {"num_bits": 8, "type": "int", "strategy": "token", "dynamic": True},
    }
    q = ct_scaled_from_config(
        {
            "config_groups": {
                "a": {**fp8, "targets": ["Linear"]},
                "b": {**int8, "targets": ["re:.*down_proj$"]},
            },
            "ignore": ["lm_head", "re:.*self_attn.[qkv]_proj"],
        }
    )
    qkv = ("m.self_attn.q_proj", "m.self_attn.k_proj", "m.self_attn.v_proj")
    assert q.layer_scheme("m.self_attn.qkv_proj", qkv) is None
    one = ct_scaled_from_config({"config_groups": {"a": {**fp8, "targets": ["Linear"]}}, "ignore": [qkv[1]]})
    with pytest.raises(InputError, match="some but not all shards"):
        one.layer_scheme("m.self_attn.qkv_proj", qkv)
    down = q.layer_scheme("m.mlp.down_proj", ("m.mlp.down_proj",))
    assert down is not None and down.kind == "int8"
    up = q.layer_scheme("m.mlp.gate_up_proj", ("m.mlp.gate_proj", "m.mlp.up_proj"))
    assert up is not None and up.kind == "fp8"
    mixed = ct_scaled_from_config({"config_groups": {"a": {**fp8, "targets": ["re:.*gate_proj$"]}}})
    with pytest.raises(InputError, match="differ"):
        mixed.layer_scheme("m.mlp.gate_up_proj", ("m.mlp.gate_proj", "m.mlp.up_proj"))


_ARGS = st.fixed_dictionaries(
    {},
    optional={
        "num_bits": st.one_of(st.integers(-1, 16), st.none(), st.text(max_size=3)),
        "type": st.sampled_from(["int", "float", "x", None]),
        "strategy": st.sampled_from(["tensor", "channel", "block", "group", "token", "tensor_group", None]),
        "dynamic": st.one_of(st.booleans(), st.just("local"), st.none()),
        "symmetric": st.one_of(st.booleans(), st.none()),
        "group_size": st.one_of(st.integers(-1, 256), st.none()),
        "block_structure": st.one_of(st.none(), st.lists(st.one_of(st.integers(-2, 256), st.text(max_size=2)))),
    },
)


@given(
    st.dictionaries(
        st.text(max_size=4),
        st.one_of(
            st.fixed_dictionaries(
                {},
                optional={
                    "targets": st.one_of(st.none(), st.lists(st.sampled_from(["Linear", "re:(", "re:.*", "x"]))),
                    "weights": st.one_of(st.none(), _ARGS, st.integers()),
                    "input_activations": st.one_of(st.none(), _ARGS, st.text(max_size=2)),
                },
            ),
            st.integers(),
        ),
        max_size=3,
    ),
    st.one_of(st.none(), st.lists(st.sampled_from(["lm_head", "re:(", "re:.*k_proj"]), max_size=2), st.integers()),
)
@settings(max_examples=300, deadline=None)
def test_parser_refuses_with_one_line(groups: dict[str, Any], ignore: Any) -> None:
    """Any compressed-tensors W8A8 / W4A4 config is read or refused as InputError, never a crash."""
    try:
        ct_scaled_from_config({"config_groups": groups, "ignore": ignore})
    except InputError as e:
        assert "\n" not in e.line()


def test_plan_h100_fp8_dynamic_prints_weights_and_verdict() -> None:
    """``plan --gpu H100`` on a compressed-tensors FP8-dynamic checkpoint: vLLM's weights figure
    (the recorded one) and a verdict, not undetermined."""
    cfg = extra.CONFIGS / "Qwen--Qwen3-8B+CT-W8A8-FP8-dynamic"
    _, out = plan_output(cfg, "H100")
    want = RECORDED["0.28.0"][f"{cfg.name} H100 --tensor-parallel-size 1"]["allocated_bytes"]
    assert f"{want:,} bytes" in out, out[-2000:]
    assert "verdict: fits" in out and "undetermined" not in out, out[-2000:]


@pytest.mark.skipif(not os.environ.get("DRYBOOT_VLLM_PYTHON"), reason="needs vLLM (DRYBOOT_VLLM_PYTHON)")
def test_live_oracle(tmp_path: Path) -> None:
    """Re-record a few cases with the boot environment's vLLM and check dryboot against them."""
    names = ["Qwen--Qwen3-8B+CT-W8A8-FP8-dynamic", "Qwen--Qwen3-8B+CT-NVFP4"]
    doc = record_live(tmp_path, names, RECORD_SET="extra", RECORD_GPUS="RTX 3090,H100", RECORD_TPS="1")
    assert len(doc["cases"]) == 4
    for row in doc["cases"].values():
        marlin_not_humming = doc["vllm"] == "0.33.0" and row["capability"] == [9, 0] and not row.get("humming")
        if marlin_not_humming and "NVFP4" in row["config"]:
            # without DRYBOOT_HUMMING_PATH the oracle picks Marlin there, which a CUDA install of
            # 0.33 does not (test_quant_humming.py)
            continue
        report = _dryboot(row, doc["vllm"])
        if _humming_fp8(row):
            # the boot environment lacks humming-kernels (Marlin's figure); a CUDA install takes Humming's
            assert not report.refused, report.refused
            continue
        if not row["ok"]:
            assert report.refused, row["error"]
            continue
        assert report.stages[0].allocated_bytes == row["allocated_bytes"], row["config"]


def test_plan_rtx5090_nvfp4_prints_weights_and_verdict() -> None:
    """``plan --gpu "RTX 5090"`` (SM 12.0) on the published dense ModelOpt NVFP4 checkpoint
    (nvidia/Qwen3-32B-NVFP4): vLLM's weights figure after FlashInfer's swizzle, and a verdict.
    (The NVFP4 35B-A3B checkpoints, ModelOpt MIXED_PRECISION hybrids with NVFP4 experts, stay
    refused by name: their experts are not modelled.)"""
    cfg = extra.CONFIGS / "nvidia--Qwen3-32B-NVFP4"
    _, out = plan_output(cfg, "RTX 5090")
    want = RECORDED["0.28.0"][f"{cfg.name} RTX 5090 --tensor-parallel-size 1"]["allocated_bytes"]
    assert f"{want:,} bytes" in out, out[-2000:]
    assert "verdict: fits" in out and "undetermined" not in out, out[-2000:]

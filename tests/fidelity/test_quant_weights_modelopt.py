"""dryboot's ModelOpt weights (MIXED_PRECISION, NVFP4 MoE experts) against what vLLM holds after loading.

The ModelOpt cases (``quant_cases_modelopt.py``): ``data/weights/quant-recorded-modelopt-<version>.json``
holds vLLM's own figures, recorded as the other sets (``RECORD_SET=modelopt record_quant_weights.py``:
the model built by vLLM's loader on the meta device, vLLM's ``process_weights_after_loading`` run,
every storage still held counted in 512-byte blocks) for the published configs of
``data/weights/quant-configs-modelopt/`` (nvidia/Qwen3.6-35B-A3B-NVFP4, a MIXED_PRECISION
Qwen3.6-MoE hybrid with W4A16 NVFP4 experts and FP8 attention / Gated DeltaNet projections;
nvidia/Qwen3-30B-A3B-NVFP4, W4A4 NVFP4 experts) on five GPUs (SM 8.6, 8.9, 9.0, 10.0, 12.0)
under TP 1 and 2. Every case is checked in the default run (no vLLM needed): byte-exact where
dryboot answers, else refused by name; with ``DRYBOOT_VLLM_PYTHON`` set, two cases are
re-recorded live and checked.
"""

from __future__ import annotations

import json
import os
from dataclasses import replace
from pathlib import Path
from typing import Any

import pytest
import quant_cases_modelopt as mo
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
)

from dryboot.errors import InputError
from dryboot.vllm.model_executor.layers.quantization.modelopt import modelopt_mixed_from_config
from dryboot.vllm.model_executor.model_loader.loader import model_weights

RECORDED = load_recorded("quant-recorded-modelopt-")
CASES = case_ids(RECORDED)
QWEN36 = mo.CONFIGS / "nvidia--Qwen3.6-35B-A3B-NVFP4"


def _dryboot(row: dict[str, Any], version: str) -> Any:
    return dryboot_weights(mo.CONFIGS, row, version)


@pytest.mark.parametrize(("version", "cid"), CASES)
def test_matches_vllm_after_loading(version: str, cid: str) -> None:
    """Byte-exact where dryboot answers; where it refuses, the refusal names what is missing
    (never a figure for what vLLM or the oracle cannot give)."""
    row = RECORDED[version][cid]
    report = _dryboot(row, version)
    if not row["ok"]:
        assert report.refused, f"vLLM or the oracle fails ({row['error'][:200]}); dryboot answered"
        return
    if report.refused:
        # a backend the oracle ran but dryboot does not model, or a release not checked for it; a
        # 0.33.0 row on SM 10.0+ without the token count that sizes FlashInfer's KV counter
        named = ("not modelled", "not checked", " only", *((NO_TOKEN_COUNT,) if no_token_count(version, row) else ()))
        assert any(w in report.refused for w in named), report.refused
        return
    assert report.stages[0].allocated_bytes == row["allocated_bytes"], (cid, report.stages[0].allocated_bytes)


def test_corpus_size() -> None:
    """The mixed-precision Qwen3.6 hybrid matched to the byte on every recorded GPU of 0.28.0
    (its W4A16 experts go through Marlin everywhere) and on 0.27.1, 0.30.0 and 0.33.0 (SM below
    10.0, and SM 12.0 up to 0.30.0); the uniform NVFP4 Qwen3-MoE on 0.28.0 on SM 8.6, 8.9, 9.0
    (Marlin experts) and 12.0 (CUTLASS experts), and on 0.27.1 / 0.30.0 where recorded."""
    exact = {
        (v, row["config"], row["gpu"], row["argv"][-1])
        for v, cases in RECORDED.items()
        for row in cases.values()
        if row["ok"] and not _dryboot(row, v).refused
    }
    assert {(QWEN36.name, g) for g, _, _ in mo.GPUS} <= {(c, g) for v, c, g, _ in exact if v == "0.28.0"}
    for v, gpus in (
        ("0.27.1", ("RTX 3090", "RTX 5090")),
        ("0.30.0", ("RTX 3090", "RTX 5090")),
        # 0.33.0 on SM 9.0: HummingNvFp4LinearKernel and the Humming experts rank ahead of Marlin
        # (humming/priority.py; recorded with humming-kernels)
        ("0.33.0", ("RTX 3090", "H100")),
    ):
        assert {(v, QWEN36.name, g, "1") for g in gpus} <= exact, v
    h100 = RECORDED["0.33.0"][f"{QWEN36.name} H100 --tensor-parallel-size 1"]
    assert h100.get("humming") and "HummingNvFp4LinearKernel" in h100["kernels"]
    moe = "nvidia--Qwen3-30B-A3B-NVFP4"
    assert {("0.28.0", moe, g, t) for g in ("RTX 3090", "RTX 4090", "H100", "RTX 5090") for t in "12"} <= exact
    # 0.27.1 (its q/k/v_range scalars kept by ModelOptKVCacheMethod) and 0.30.0: Marlin experts
    assert {("0.27.1", moe, g, t) for g in ("RTX 3090", "RTX 4090") for t in "12"} <= exact
    assert {("0.30.0", moe, "RTX 3090", t) for t in "12"} <= exact
    assert {(v, moe, g, "1") for v in ("0.27.1", "0.30.0") for g in ("H100", "RTX 5090")} <= exact
    # 0.29.0 / 0.31.0 / 0.32.0 at TP 1, both checkpoints (0.32.0's H100: Humming ahead of Marlin,
    # recorded with humming-kernels 0.1.17); 0.29.0's MIXED_PRECISION hybrid at TP 2 too
    for v, gpus in (
        ("0.29.0", ("RTX 3090", "RTX 4090", "H100", "RTX 5090")),
        ("0.31.0", ("RTX 3090", "H100")),
        ("0.32.0", ("RTX 3090", "RTX 4090", "H100", "RTX 5090")),
    ):
        assert {(v, c, g, "1") for c in (QWEN36.name, moe) for g in gpus} <= exact, v
    assert {("0.29.0", QWEN36.name, g, "2") for g in ("RTX 3090", "RTX 4090", "H100", "RTX 5090", "B200")} <= exact
    # 0.33.0: the uniform NVFP4 Qwen3-MoE (refused before as "recorded with FlashInfer's once-per-process
    # KV counter in a process's first case only"), each case recorded as a fresh process
    assert {("0.33.0", moe, g, t) for g in ("RTX 3090", "RTX 4090", "H100", "RTX 5090") for t in "12"} <= exact
    # 0.33.0 on B200: the Nemotron-3.5 hybrid's W4A16_NVFP4 linear layers through FlashInfer's CuTe DSL
    # kernel (recorded with quant_fakes' FlashInfer stand-ins; the oracle failed there before)
    nemotron = "nvidia--NVIDIA-Nemotron-3.5-Lightning-30B-A3B-NVFP4"
    assert {("0.33.0", nemotron, "B200", t) for t in "12"} <= exact
    # 0.33.0 on B200: the uniform NVFP4 Qwen3-MoE's experts through FlashInfer TRT-LLM
    # (TrtLlmNvFp4ExpertsMonolithic: CUTLASS's sizes plus g1_scale_c [E] float32 per layer; refused before)
    assert {("0.33.0", moe, "B200", t) for t in "12"} <= exact
    # and on 0.28.0 (re-recorded with the interleave by shape; the oracle failed there before)
    assert {("0.28.0", moe, "B200", t) for t in "12"} <= exact
    # 0.30.0-0.32.0 on B200: the Qwen3.6-27B's W4A16_NVFP4 linear layers through FlashInfer's CuTe DSL
    # kernel, prepared as on 0.33.0 (refused by name before: recorded on 0.33.0 only)
    dense = "nvidia--Qwen3.6-27B-NVFP4"
    assert {(v, dense, "B200", t) for v in ("0.30.0", "0.31.0", "0.32.0") for t in "12"} <= exact
    assert len(exact) >= 50


def test_kernels_are_vllms() -> None:
    """The kernels the layouts follow: W4A16 NVFP4 linear layers through Marlin on every SM (Humming
    on SM 9.0 in 0.32.0 / 0.33.0), FP8
    through Marlin below SM 8.9 (CUTLASS on 0.30.0, whose generic ModelOpt method picks it there)
    and CUTLASS / FlashInfer from it, NVFP4 experts as one ``ModelOptNvFp4FusedMoE`` per MoE layer."""
    checked = 0
    for version, cases in RECORDED.items():
        for row in cases.values():
            if not row["ok"] or row["config"] != QWEN36.name:
                continue
            k = row["kernels"]
            humming = version in ("0.32.0", "0.33.0") and row["capability"] == [9, 0]  # ahead of Marlin there
            nvfp4 = "HummingNvFp4LinearKernel" if humming else "MarlinNvFp4LinearKernel"
            assert k[nvfp4] == 81 and k["ModelOptNvFp4FusedMoE"] == 40, k
            fp8 = {n for n in k if "FP8" in n}
            sm = row["capability"][0] * 10 + row["capability"][1]
            marlin = sm < 89 and version not in ("0.29.0", "0.30.0")
            assert (fp8 == {"MarlinFP8ScaledMMLinearKernel"}) == marlin, (version, sm, fp8)
            checked += 1
    assert checked >= 12


def test_per_layer_resolution_is_vllms() -> None:
    """vLLM's ``_resolve_quant_algo``: the checkpoint's wrapper names are the text model's, a
    fused layer takes its parts' common algorithm, the experts their own key, a layer not named
    stays unquantized, an excluded one too; parts that differ are refused."""
    qc = json.loads((QWEN36 / "config.json").read_text())["quantization_config"]
    q = modelopt_mixed_from_config(qc, tuple(qc["ignore"]))
    assert q.algo_of("model.layers.0.linear_attn.in_proj_qkvz") == "FP8"
    assert q.algo_of("model.layers.0.linear_attn.in_proj_ba") is None
    assert q.algo_of("model.layers.3.self_attn.qkv_proj") == "FP8"
    assert q.algo_of("model.layers.0.mlp.experts") == "W4A16_NVFP4"
    assert q.algo_of("model.layers.0.mlp.shared_expert.gate_up_proj") == "W4A16_NVFP4"
    assert q.algo_of("model.layers.0.mlp.gate") is None
    assert q.algo_of("lm_head") == "W4A16_NVFP4"
    assert (
        q.layer_scheme("mtp.layers.0.mlp.shared_expert.down_proj", ("mtp.layers.0.mlp.shared_expert.down_proj",))
        is None
    )
    odd = {
        "quantized_layers": {
            "model.layers.0.self_attn.q_proj": {"quant_algo": "FP8"},
            "model.layers.0.self_attn.k_proj": {"quant_algo": "NVFP4"},
        }
    }
    with pytest.raises(InputError, match="differ"):
        modelopt_mixed_from_config(odd, ()).algo_of("model.layers.0.self_attn.qkv_proj")
    mx = {"quantized_layers": {"model.layers.0.mlp.down_proj": {"quant_algo": "MXFP8"}}}
    with pytest.raises(InputError, match="MXFP8 is not modelled"):
        modelopt_mixed_from_config(mx, ()).layer_scheme("model.layers.0.mlp.down_proj", ())
    with pytest.raises(InputError, match="non-empty"):
        modelopt_mixed_from_config({"quant_algo": "MIXED_PRECISION"}, ())


def test_refusals_name_what_is_missing() -> None:
    """No GPU; W4A4 NVFP4 experts on SM 10.x (FlashInfer TRT-LLM) a caller has not checked; a release not checked:
    refused by name."""
    assert "name the GPU" in (model_weights(QWEN36).refused or "")
    moe = mo.CONFIGS / "nvidia--Qwen3-30B-A3B-NVFP4"
    # experts whose caller has not checked FlashInfer TRT-LLM's layout (SwiGLU limits, a family not recorded)
    from dryboot.vllm.model_executor.layers.quantization.modelopt import modelopt_experts_bytes, modelopt_quant

    q = replace(modelopt_quant("NVFP4", ()), capability=100, vllm_version="0.33.0")
    with pytest.raises(InputError, match=r"TRT-LLM .* not modelled"):
        modelopt_experts_bytes(q, "model.layers.0.mlp.experts", 8, 1024, 384)
    assert len(modelopt_experts_bytes(q, "model.layers.0.mlp.experts", 8, 1024, 384, plain_swiglu=True)) == 11
    # 0.33.0: modelled under expert parallelism too (recorded on tiny configs, quant-recorded-trtllm-0.33.0.json)
    ep = model_weights(
        moe,
        compute_capability=(10, 0),
        sm_count=148,
        vllm_version="0.33.0",
        tp=2,
        expert_parallel=True,
        max_num_batched_tokens=8192,
    )
    assert ep.refused is None, ep.refused
    # a release whose ModelOpt MoE layouts are not checked
    assert "0.26.0" in (
        model_weights(QWEN36, compute_capability=(8, 6), sm_count=82, vllm_version="0.26.0").refused or ""
    )


@given(
    st.dictionaries(
        st.text(max_size=8),
        st.one_of(
            st.integers(),
            st.fixed_dictionaries(
                {},
                optional={
                    "quant_algo": st.one_of(
                        st.sampled_from(["FP8", "NVFP4", "w4a16_nvfp4", "MXFP8", ""]), st.integers()
                    ),
                    "group_size": st.one_of(st.integers(-1, 64), st.none(), st.text(max_size=2)),
                },
            ),
        ),
        max_size=4,
    ),
    st.lists(st.sampled_from(["lm_head", "mtp*", "*", "model.layers.0*"]), max_size=2),
)
@settings(max_examples=300, deadline=None)
def test_parser_refuses_with_one_line(layers: dict[str, Any], ignore: list[str]) -> None:
    """Any ``quantized_layers`` mapping is read or refused as InputError (one line), never a crash."""
    try:
        q = modelopt_mixed_from_config({"quant_algo": "MIXED_PRECISION", "quantized_layers": layers}, tuple(ignore))
        for name in layers:
            q.layer_scheme(str(name), (str(name),))
    except InputError as e:
        assert "\n" not in e.line()


def test_plan_rtx5090_qwen36_prints_weights_and_verdict() -> None:
    """``plan --gpu "RTX 5090"`` on nvidia/Qwen3.6-35B-A3B-NVFP4 (what a 32 GB card serves):
    vLLM's weights figure after loading (the recorded one) and a verdict, not undetermined
    (``--skip-mm-profiling``: the vision encoder's profile is another term, not modelled)."""
    _, out = plan_output(QWEN36, "RTX 5090", "--skip-mm-profiling", max_model_len="32768")
    want = RECORDED["0.28.0"][f"{QWEN36.name} RTX 5090 --tensor-parallel-size 1"]["allocated_bytes"]
    assert f"{want:,} bytes" in out, out[-2000:]
    assert "Model loading took 20.36 GiB memory" in out
    assert "undetermined" not in out and "verdict: fits" in out, out[-2000:]


@pytest.mark.skipif(not os.environ.get("DRYBOOT_VLLM_PYTHON"), reason="needs vLLM (DRYBOOT_VLLM_PYTHON)")
def test_live_oracle(tmp_path: Path) -> None:
    """Re-record one case per config (RTX 3090, TP 1) with the boot environment's vLLM; dryboot agrees."""
    names = sorted(p.name for p in mo.CONFIGS.iterdir() if p.is_dir())
    doc = record_live(tmp_path, names, RECORD_SET="modelopt", RECORD_GPUS="RTX 3090", RECORD_TPS="1", RECORD_FAST="1")
    assert len(doc["cases"]) == len(names)
    for row in doc["cases"].values():
        report = _dryboot(row, doc["vllm"])
        if not row["ok"] or report.refused:
            assert report.refused, row.get("error")
            continue
        assert report.stages[0].allocated_bytes == row["allocated_bytes"], row["config"]


QWEN36_DENSE = mo.CONFIGS / "nvidia--Qwen3.6-27B-NVFP4"


@pytest.mark.parametrize(
    "cid",
    sorted(RECORDED["0.33.0"].keys() & {f"{QWEN36_DENSE.name} RTX 3090 --tensor-parallel-size {t}" for t in (1, 2)}),
)
def test_flashinfer_counter_is_in_the_figure(cid: str) -> None:
    """vLLM 0.33.0 serves the dense MIXED_PRECISION wrapper's fp8 KV cache on SM 8.x with FlashInfer,
    whose ``FlashInferImpl`` allocates one multi-CTA KV counter per process while the model is built
    (8,192 tokens x 24 query heads / TP int32: 768 KiB at TP 1, 384 KiB at TP 2); the recorder starts
    each case without it (``_reset_per_process_caches``). Without ``max_num_batched_tokens`` dryboot
    refuses by name; with it the figure is vLLM's, and exactly the counter above the layers'."""
    from dryboot.vllm.backends import flashinfer_kv_counter_bytes

    row = RECORDED["0.33.0"][cid]
    assert row["max_num_batched_tokens"] == 8192
    tp = int(cid.rsplit(" ", 1)[1])
    counter = flashinfer_kv_counter_bytes(8192, 24 // tp, row["sm_count"])
    assert counter == 786432 // tp
    got = _dryboot(row, "0.33.0")
    assert got.refused is None and got.stages[0].allocated_bytes == row["allocated_bytes"]
    bare = model_weights(QWEN36_DENSE, tp=tp, compute_capability=(8, 6), sm_count=82, vllm_version="0.33.0")
    assert "give max_num_batched_tokens" in (bare.refused or "")
    # SM 9.0 keeps FlashAttention (an fp8 cache there): no counter, no need for the token count
    h100 = model_weights(QWEN36_DENSE, tp=tp, compute_capability=(9, 0), sm_count=132, vllm_version="0.33.0")
    assert h100.refused is None
    # the release before builds no counter
    before = model_weights(QWEN36_DENSE, tp=tp, compute_capability=(8, 6), sm_count=82, vllm_version="0.30.0")
    assert before.refused is None


def test_flashinfer_counter_floor_is_the_sm_count() -> None:
    """FlashInfer's semaphores: at least one per SM, rounded up to 8, four bytes each."""
    from dryboot.vllm.backends import flashinfer_kv_counter_bytes

    assert flashinfer_kv_counter_bytes(1, 1, 82) == 88 * 4
    assert flashinfer_kv_counter_bytes(8192, 12, 82) == 393216


def test_nemotron_on_sm8_holds_the_counter() -> None:
    """nvidia/NVIDIA-Nemotron-3.5-Lightning-30B-A3B-NVFP4 (``kv_cache_quant_algo`` FP8 in its
    ``hf_quant_config.json``) on 0.33.0, RTX 3090 / 4090, TP 1 and 2: byte-exact with FlashInfer's
    KV counter (8,192 tokens x 32 query heads / TP: the "1 MiB not identified" once refused)."""
    rows = [
        r
        for r in RECORDED["0.33.0"].values()
        if r["config"].startswith("nvidia--NVIDIA-Nemotron") and r["capability"][0] == 8
    ]
    assert len(rows) == 4
    for row in rows:
        assert row["max_num_batched_tokens"] == 8192
        report = _dryboot(row, "0.33.0")
        assert report.refused is None and report.stages[0].allocated_bytes == row["allocated_bytes"]


def test_trtllm_nvfp4_experts_pad_hidden_and_intermediate() -> None:
    """FlashInfer TRT-LLM's NVFP4 experts: a hidden size off 256 padded to it (recorded: the trtllm
    set's hidden 1152 -> 1280), the intermediate per rank padded to 64 (recorded: Qwen3-30B-A3B at TP 8)."""
    from dryboot.vllm.model_executor.layers.quantization.modelopt import trtllm_nvfp4_experts_bytes

    assert trtllm_nvfp4_experts_bytes(8, 2880, 64) == trtllm_nvfp4_experts_bytes(8, 3072, 64)
    assert trtllm_nvfp4_experts_bytes(128, 2048, 96) == trtllm_nvfp4_experts_bytes(128, 2048, 128)
    got = trtllm_nvfp4_experts_bytes(128, 2048, 768)
    assert sum(b for _, b in got) == 128 * 3 * 2048 * 768 // 2 * 9 // 8 + 7 * 4 * 128

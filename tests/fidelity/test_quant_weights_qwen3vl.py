"""dryboot's quantized Qwen3-VL / Qwen3-VL-MoE against what vLLM holds after loading.

The Qwen3-VL set (``quant_cases_qwen3vl.py``): ``data/weights/quant-recorded-qwen3vl-<version>.json``
holds vLLM's own figures (``RECORD_SET=qwen3vl record_quant_weights.py``: the model built by vLLM's
loader on the meta device, ``process_weights_after_loading`` run, every storage still held counted
in 512-byte blocks) for the published Qwen3-VL-8B-Instruct and Qwen3-VL-30B-A3B-Instruct configs
under Qwen's plain fp8 ``[128, 128]`` blocks, compressed-tensors W4A16 group 128, AWQ 4-bit group
128 (``modules_to_not_convert: ["visual"]``) and GPTQ 4-bit group 128 (``modules_in_block_to_quantize``
naming the text model's projections) (the vision tower and the LM head left unquantized by the
checkpoint), on SM 8.6 / 8.9 / 9.0 at TP 1 and 2.
Every case is checked in the default run (no vLLM needed); with ``DRYBOOT_VLLM_PYTHON`` set, one is
re-recorded live.
"""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any

import pytest
import quant_cases_qwen3vl as qv
from quant_harness import assert_weights, case_ids, dryboot_weights, load_recorded, plan_output, record_live

from dryboot.vllm.model_executor.layers.quantization.modelopt import checkpoint_module_name
from dryboot.vllm.model_executor.model_loader.loader import model_weights
from dryboot.vllm.model_executor.models import qwen3_vl

RECORDED = load_recorded("quant-recorded-qwen3vl-")
CASES = case_ids(RECORDED)


def _refusal(version: str, row: dict[str, Any]) -> str | None:
    """What dryboot must name where it does not give vLLM's figure; ``None``: byte-exact."""
    if not row["ok"] and "not divisible by weight quantization block_n" in str(row.get("error")):
        return "is not divisible by the block"  # 30B-A3B fp8 at TP 4: 192 per rank (weights._fp8_moe_block_check)
    return None


@pytest.mark.parametrize(("version", "cid"), CASES)
def test_matches_vllm_after_loading(version: str, cid: str) -> None:
    row = RECORDED[version][cid]
    report = dryboot_weights(qv.CONFIGS, row, version)
    assert_weights(report, row, _refusal(version, row))


def test_corpus_size() -> None:
    """Byte-exact: both configs under the four methods on 0.28.0, 0.30.0, 0.32.0 and 0.33.0 (every
    recorded release; 0.32.0's and 0.33.0's H100 rows with humming-kernels), SM 8.6 / 8.9 / 9.0, TP 1
    and 2: 48 cases each."""
    n = 0
    for version, cases in RECORDED.items():
        exact = {row["config"] for row in cases.values() if row["ok"] and _refusal(version, row) is None}
        assert exact == {p.name for p in qv.CONFIGS.iterdir()}, version
        n += sum(1 for row in cases.values() if row["ok"] and _refusal(version, row) is None)
    assert set(RECORDED) == set(qwen3_vl.QUANT_RELEASES)
    assert n >= 48 * len(RECORDED)


def _with_quant(tmp_path: Path, name: str, edit: Any) -> Path:
    """A copy of config ``name`` whose ``quantization_config`` ``edit`` rewrites."""
    config = json.loads((qv.CONFIGS / name / "config.json").read_text())
    config["quantization_config"] = edit(dict(config["quantization_config"]))
    out = tmp_path / name
    out.mkdir()
    (out / "config.json").write_text(json.dumps(config))
    return out


def _weights(cfg: Path, **kw: Any) -> Any:
    base: dict[str, Any] = dict(
        compute_capability=(8, 9), sm_count=128, vllm_version="0.28.0", max_num_batched_tokens=8192
    )
    return model_weights(cfg, **{**base, **kw})


def test_quantized_tower_refused_by_name(tmp_path: Path) -> None:
    """A checkpoint that quantizes a vision-tower linear layer (vLLM builds the tower with the
    model's quant config) is refused naming the layer; ``--language-model-only`` (no tower) is sized."""
    fp8 = _with_quant(
        tmp_path,
        "Qwen--Qwen3-VL-8B-Instruct+FP8-block",
        lambda qc: {
            **qc,
            "modules_to_not_convert": [n for n in qc["modules_to_not_convert"] if "merger.linear_fc2" not in n],
        },
    )
    refused = _weights(fp8).refused or ""
    assert "vision tower quantized (visual.merger.linear_fc2)" in refused, refused
    assert not _weights(fp8, language_model_only=True).refused
    ct = _with_quant(
        tmp_path, "Qwen--Qwen3-VL-30B-A3B-Instruct+CT-W4A16-g128", lambda qc: {**qc, "ignore": ["lm_head"]}
    )
    assert "vision tower quantized (visual.blocks.0.attn.qkv)" in (_weights(ct).refused or "")


@pytest.mark.parametrize(
    ("name", "edit", "layer"),
    [
        # no modules_to_not_convert: vLLM's AWQ quantizes every tower linear layer
        ("Qwen--Qwen3-VL-8B-Instruct+AWQ-g128", lambda qc: {**qc, "modules_to_not_convert": None}, "blocks.0.attn.qkv"),
        # "model.visual" without its dot: the mapper's "model.visual." prefix does not rewrite it, and
        # it is no substring of vLLM's "visual.blocks.0.attn.qkv"
        (
            "Qwen--Qwen3-VL-30B-A3B-Instruct+AWQ-g128",
            lambda qc: {**qc, "modules_to_not_convert": ["model.visual"]},
            "blocks.0.attn.qkv",
        ),
        # GPTQ's list naming the tower's fc2 too (and nothing else of it)
        (
            "Qwen--Qwen3-VL-8B-Instruct+GPTQ-g128",
            lambda qc: {**qc, "modules_in_block_to_quantize": [*qc["modules_in_block_to_quantize"], "linear_fc2"]},
            "blocks.0.mlp.linear_fc2",
        ),
    ],
)
def test_awq_gptq_quantized_tower_refused_by_name(tmp_path: Path, name: str, edit: Any, layer: str) -> None:
    """AWQ / GPTQ checkpoints whose lists leave a vision-tower linear layer quantized (vLLM builds
    the tower with the model's quant config) are refused naming the layer; ``--language-model-only``
    (no tower) is sized, as the text model alone."""
    cfg = _with_quant(tmp_path, name, edit)
    refused = _weights(cfg).refused or ""
    assert f"vision tower quantized (visual.{layer})" in refused, refused
    assert not _weights(cfg, language_model_only=True).refused


@pytest.mark.parametrize("skip", [["lm_head", "visual"], ["lm_head", "model.visual"]])
def test_fp8_tower_skipped_by_exact_names_only(tmp_path: Path, skip: list[str]) -> None:
    """Plain fp8 matches ``modules_to_not_convert`` exactly (``Fp8Config``'s match mode): a bare
    ``visual`` / ``model.visual`` skips no tower layer, vLLM quantizes the tower (probed on 0.28.0,
    RTX 4090, TP 1: 260 ``Fp8LinearMethod`` layers, 10,288,044,544 bytes, where the tower left in
    bfloat16 would be 10,859,381,760); dryboot refuses the quantized tower by name."""
    cfg = _with_quant(
        tmp_path, "Qwen--Qwen3-VL-8B-Instruct+FP8-block", lambda qc: {**qc, "modules_to_not_convert": skip}
    )
    refused = _weights(cfg).refused or ""
    assert "vision tower quantized (visual.blocks.0.attn.qkv)" in refused, refused


def test_awq_gptq_prefixed_names_mapped_as_vllm_maps_them(tmp_path: Path) -> None:
    """``model.visual.`` / ``model.language_model.`` prefixed entries of AWQ's and GPTQ's substring
    lists are rewritten as the wrapper's ``hf_to_vllm_mapper`` rewrites them: the same figure as the
    recorded bare names."""
    assert qwen3_vl.substring_module_name("model.visual.blocks") == "visual.blocks"
    assert qwen3_vl.substring_module_name("model.language_model.layers.0.mlp") == "model.layers.0.mlp"
    assert qwen3_vl.substring_module_name("model.visual") == "model.visual"
    assert qwen3_vl.substring_module_name("visual") == "visual"
    name = "Qwen--Qwen3-VL-8B-Instruct+AWQ-g128"
    cfg = _with_quant(tmp_path, name, lambda qc: {**qc, "modules_to_not_convert": ["model.visual."]})
    want = RECORDED["0.28.0"][f"{name} RTX 4090 --tensor-parallel-size 1"]["allocated_bytes"]
    assert _weights(cfg).stages[0].allocated_bytes == want


def test_checkpoint_names_mapped_as_vllm_maps_them() -> None:
    """``model.visual.X`` is vLLM's ``visual.X``, ``model.language_model.X`` the text walk's
    ``model.X`` (``hf_to_vllm_mapper``); patterns and other names unchanged."""
    assert checkpoint_module_name("model.visual.blocks.3.attn.qkv") == "visual.blocks.3.attn.qkv"
    assert checkpoint_module_name("model.language_model.layers.2.mlp.gate") == "model.layers.2.mlp.gate"
    assert checkpoint_module_name("re:.*visual.*") == "re:.*visual.*"
    assert checkpoint_module_name("lm_head") == "lm_head"
    names = qwen3_vl.tower_linears({"depth": 2, "deepstack_visual_indexes": [0]})
    assert len(names) == 2 * 4 + 2 + 2 and "visual.deepstack_merger_list.0.linear_fc2" in names


def test_unrecorded_stays_refused_by_name(tmp_path: Path) -> None:
    """A release, a GPU, a method or a parallelism not recorded is refused by name; fp8 blocks the
    experts' shard does not divide are refused as vLLM does (0.28.0) or refines them (later)."""
    cfg = qv.CONFIGS / "Qwen--Qwen3-VL-8B-Instruct+CT-W4A16-g128"
    assert "checked on vLLM 0.28.0, 0.30.0, 0.32.0, 0.33.0 only" in (_weights(cfg, vllm_version="0.31.0").refused or "")
    assert "SM 8.6, 8.9, 9.0 only" in (_weights(cfg, compute_capability=(10, 0), sm_count=148).refused or "")
    assert "pipeline or expert" in (_weights(cfg, pp=2).refused or "")
    act_order = _with_quant(tmp_path, "Qwen--Qwen3-VL-8B-Instruct+GPTQ-g128", lambda qc: {**qc, "desc_act": True})
    assert "4-bit GPTQ without act-order only" in (_weights(act_order).refused or "")
    eight = _with_quant(tmp_path, "Qwen--Qwen3-VL-30B-A3B-Instruct+GPTQ-g128", lambda qc: {**qc, "bits": 8})
    assert "4-bit GPTQ without act-order only" in (_weights(eight).refused or "")
    moe = qv.CONFIGS / "Qwen--Qwen3-VL-30B-A3B-Instruct+FP8-block"
    refused = _weights(moe, tp=4).refused or ""
    assert "intermediate size per rank (192) is not divisible by the block" in refused, refused


def test_plan_rtx4090_prints_weights() -> None:
    """``plan --gpu "RTX 4090"`` on the Qwen3-VL-8B fp8 config: vLLM's recorded weights figure and a
    verdict, not undetermined."""
    cfg = qv.CONFIGS / "Qwen--Qwen3-VL-8B-Instruct+FP8-block"
    _, out = plan_output(cfg, "RTX 4090", "--max-num-batched-tokens", "8192")
    want = RECORDED["0.28.0"][f"{cfg.name} RTX 4090 --tensor-parallel-size 1"]["allocated_bytes"]
    assert f"{want:,} bytes" in out, out[-2000:]
    assert "verdict: fits" in out and "undetermined" not in out, out[-2000:]


@pytest.mark.skipif(not os.environ.get("DRYBOOT_VLLM_PYTHON"), reason="needs vLLM (DRYBOOT_VLLM_PYTHON)")
def test_live_oracle(tmp_path: Path) -> None:
    """Re-record one case with the boot environment's vLLM and check dryboot against it."""
    doc = record_live(
        tmp_path,
        ["Qwen--Qwen3-VL-8B-Instruct+FP8-block"],
        RECORD_SET="qwen3vl",
        RECORD_GPUS="RTX 3090",
        RECORD_TPS="2",
        RECORD_FAST="1",
    )
    for row in doc["cases"].values():
        report = dryboot_weights(qv.CONFIGS, row, doc["vllm"])
        if doc["vllm"] not in qwen3_vl.QUANT_RELEASES:
            assert report.refused, row
            continue
        assert_weights(report, row, _refusal(doc["vllm"], row))


def test_cosmos3_quantized_stays_refused(tmp_path: Path) -> None:
    """Cosmos3 shares Qwen3-VL's family (its class with another weights mapper); its quantized
    layouts are not recorded: refused by name."""
    config = json.loads((qv.CONFIGS / "Qwen--Qwen3-VL-8B-Instruct+FP8-block" / "config.json").read_text())
    config["architectures"] = ["Cosmos3ForConditionalGeneration"]
    (tmp_path / "config.json").write_text(json.dumps(config))
    refused = _weights(tmp_path).refused or ""
    assert "quantized Cosmos3ForConditionalGeneration layouts are not modelled" in refused, refused

"""dryboot's weights of GPTQ / AWQ / AutoRound checkpoints against what vLLM holds after loading.

``data/weights/quant-recorded-<version>.json`` holds vLLM's own figures (``record_quant_weights.py``:
the model built by vLLM's loader on the meta device, then vLLM's ``process_weights_after_loading``
run through the repack kernels' own shape declarations (``quant_fakes.py``), every storage still
held counted in 512-byte allocator blocks) for the configs of ``data/weights/quant-configs/`` on
five GPUs (SM 8.0, 8.6, 8.9, 9.0, 10.0) under TP 1/2/4. Every case is checked in the default run
(no vLLM needed); with ``DRYBOOT_VLLM_PYTHON`` set, a few cases are re-recorded live and checked.
"""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any

import pytest
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
from dryboot.vllm.model_executor.kernels.linear.mixed_precision import (
    MPLinearLayerConfig,
    after_loading,
    choose_mp_linear_kernel,
    marlin_padded_nk,
)
from dryboot.vllm.model_executor.layers.quantization import (
    QUANT_RULES,
    WNA16_METHODS,
    quant_rules,
    wna16_from_config,
)
from dryboot.vllm.model_executor.model_loader.loader import model_weights

HERE = Path(__file__).resolve().parent
CONFIGS = HERE / "data" / "weights" / "quant-configs"
#: release -> case id -> vLLM's row, over every recorded file of that release (its ``vllm``); the
#: second set (``quant-recorded-extra-*``) is test_quant_weights_extra.py's, the ModelOpt set
#: (``quant-recorded-modelopt-*``) test_quant_weights_modelopt.py's, the MoE set
#: (``quant-recorded-moe-*``) test_quant_weights_moe.py's
RECORDED = load_recorded()
CASES = case_ids(RECORDED)


def _dryboot(row: dict[str, Any], version: str = "0.28.0") -> Any:
    return dryboot_weights(CONFIGS, row, version)


def test_corpus_size() -> None:
    """At least 100 recorded cases over two releases, each with vLLM's figure or vLLM's refusal."""
    assert len(CASES) >= 100
    assert {"0.28.0", "0.33.0"} <= set(RECORDED)
    assert all(row["ok"] or row.get("error") for cases in RECORDED.values() for row in cases.values())


@pytest.mark.parametrize(("version", "cid"), CASES)
def test_matches_vllm_after_loading(version: str, cid: str) -> None:
    row = RECORDED[version][cid]
    report = _dryboot(row, version)
    if not row["ok"]:
        assert report.refused, f"vLLM refuses ({row['error']}); dryboot answered"
        return
    if no_token_count(version, row) and report.refused:
        # FlashInfer's KV counter is sized by the token count the row lacks (quant_cases_bw33.py)
        assert NO_TOKEN_COUNT in report.refused, report.refused
        return
    assert not report.refused, report.refused
    assert report.stages[0].allocated_bytes == row["allocated_bytes"]


def test_kernel_per_gpu_is_vllms() -> None:
    """The kernels vLLM chose (recorded per layer class): Machete on SM 9.0 for its group sizes
    (Marlin for the row-split layers of an act-order checkpoint, which Machete declines), Humming
    on SM 9.0 for the others on 0.33.0, Marlin elsewhere."""
    checked = 0
    for version, cases in RECORDED.items():
        for row in cases.values():
            kernels = {k for k in row.get("kernels", {}) if k.endswith("LinearKernel")}
            if not row["ok"] or not kernels:  # a release whose method hides its kernel
                continue
            act_order = "desc_act" in row["config"] and row["argv"][-1] != "1"
            if row["capability"] == [9, 0] and _group_size(row["config"]) in (-1, 64, 128):
                want = {"MacheteLinearKernel", "MarlinLinearKernel"} if act_order else {"MacheteLinearKernel"}
            elif row["capability"] == [9, 0] and 90 in quant_rules(version).humming_before_marlin:
                # 0.32 / 0.33 move Humming ahead of Marlin on SM 9.0 (recorded with humming-kernels)
                assert row.get("humming"), row["config"]
                want = {"HummingLinearKernel"}
            else:
                want = {"MarlinLinearKernel"}
            assert kernels == want, (row["config"], row["gpu"], kernels)
            checked += 1
    assert checked >= 20


def _group_size(config: str) -> int:
    qc = json.loads((CONFIGS / config / "config.json").read_text())["quantization_config"]
    if "config_groups" in qc:
        return int(next(iter(qc["config_groups"].values()))["weights"]["group_size"] or -1)
    return int(qc["group_size"])


def _layer(k: int = 4096, n: int = 6144, **kw: Any) -> MPLinearLayerConfig:
    base: dict[str, Any] = {
        "k": k,
        "n": n,
        "full_k": k,
        "bits": 4,
        "zero_points": False,
        "group_size": 128,
        "has_g_idx": False,
    }
    return MPLinearLayerConfig(**{**base, **kw})


def test_choice_by_capability() -> None:
    assert choose_mp_linear_kernel(_layer(), 90) == "MacheteLinearKernel"
    for sm in (75, 80, 86, 89, 100, 120):
        assert choose_mp_linear_kernel(_layer(), sm) == "MarlinLinearKernel"
    # Machete declines act-order over a partitioned input: Marlin takes it on SM 9.0
    assert choose_mp_linear_kernel(_layer(k=2048, full_k=4096, has_g_idx=True), 90) == "MarlinLinearKernel"
    with pytest.raises(InputError, match="AllSpark"):
        choose_mp_linear_kernel(_layer(bits=8, group_size=-1), 86)
    assert choose_mp_linear_kernel(_layer(bits=8, group_size=-1), 86, allspark=False) == "MarlinLinearKernel"
    with pytest.raises(InputError, match="not modelled"):
        choose_mp_linear_kernel(_layer(), 70)


def test_marlin_padding() -> None:
    """``marlin_padded_nk``: n to 64 with k to 128, or n to 128 with k to 64, the smaller."""
    assert marlin_padded_nk(6144, 4096, 128) == (6144, 4096)
    assert marlin_padded_nk(100, 4096, 128) == (128, 4096)
    assert marlin_padded_nk(64, 200, -1) == (64, 256)
    # the repacked weight and scales take the padded extents
    out = dict((k, v) for k, v in after_loading("MarlinLinearKernel", _layer(n=100), 32, sm_count=82, gptq_layout=True))
    assert out["weight"] == 4096 * 128 // 2


@given(
    st.dictionaries(
        st.sampled_from(
            [
                "bits",
                "group_size",
                "desc_act",
                "sym",
                "zero_point",
                "w_bit",
                "q_group_size",
                "lm_head",
                "dynamic",
                "extra_config",
                "packing_format",
                "data_type",
                "block_name_to_quantize",
                "modules_to_not_convert",
            ]
        ),
        st.one_of(
            st.integers(-3, 300),
            st.booleans(),
            st.none(),
            st.text(max_size=8),
            st.dictionaries(
                st.text(max_size=6),
                st.dictionaries(st.sampled_from(["bits", "group_size"]), st.integers(0, 32)),
                max_size=2,
            ),
        ),
    ),
    st.sampled_from(sorted(WNA16_METHODS)),
)
@settings(max_examples=300, deadline=None)
def test_parsers_refuse_with_one_line(qc: dict[str, Any], method: str) -> None:
    """Any ``quantization_config`` is read or refused as InputError, never a crash."""
    try:
        wna16_from_config(method, qc)
    except InputError as e:
        assert "\n" not in e.line()


@pytest.mark.skipif(not os.environ.get("DRYBOOT_VLLM_PYTHON"), reason="needs vLLM (DRYBOOT_VLLM_PYTHON)")
def test_live_oracle(tmp_path: Path) -> None:
    """Re-record a few cases with the boot environment's vLLM (its release's rules) and check
    dryboot against them."""
    # gpt-oss (MXFP4) is not re-recorded live: in vLLM 0.28.0's environment (CI's) its post-load
    # step raises "Tensor on device cpu is not on the expected device meta" (cause not found);
    # its recorded cases (0.27.1, 0.28.0, 0.30.0, 0.33.0) are checked by test_matches_vllm_after_loading
    names = ["Qwen--Qwen3-8B+GPTQ-Int4-g128-desc_act", "Qwen--Qwen3-32B-AWQ"]
    doc = record_live(tmp_path, names, RECORD_GPUS="RTX 3090,H100", RECORD_TPS="1,2")
    assert len(doc["cases"]) == 8
    for row in doc["cases"].values():
        report = _dryboot(row, doc["vllm"])
        if not row["ok"]:
            assert report.refused, row["error"]
            continue
        assert report.stages[0].allocated_bytes == row["allocated_bytes"], row["config"]


def test_refusals_name_what_is_missing() -> None:
    """No GPU, a release not checked, 0.33's act-order refusal, a quantized LM head under a prefix:
    refused by name."""
    gptq = CONFIGS / "Qwen--Qwen3-8B+GPTQ-Int4-g128"
    assert "name the GPU" in (model_weights(gptq).refused or "")
    assert "checked on vLLM 0.27.1, 0.28.0, 0.29.0, 0.30.0, 0.31.0, 0.32.0, 0.33.0 only" in (
        model_weights(gptq, compute_capability=(8, 6), vllm_version="0.26.0").refused or ""
    )
    # 0.32.0 ranks Humming first on SM 9.0 as 0.33.0 does, with the same layouts (humming-kernels
    # 0.1.17 there: quant-recorded-humming-0.32.0.json); 0.31.0 keeps Marlin
    ct = CONFIGS / "Qwen--Qwen3-8B+CT-W4A16-g32"
    on = {
        v: model_weights(ct, compute_capability=(9, 0), sm_count=132, vllm_version=v)
        for v in ("0.31.0", "0.32.0", "0.33.0")
    }
    assert all(r.refused is None for r in on.values()), {v: r.refused for v, r in on.items()}
    assert on["0.32.0"].stages[0].allocated_bytes == on["0.33.0"].stages[0].allocated_bytes
    assert on["0.32.0"].stages[0].allocated_bytes != on["0.31.0"].stages[0].allocated_bytes
    act_order = CONFIGS / "Qwen--Qwen3-8B+GPTQ-Int4-g128-desc_act"
    assert "desc_act" in (model_weights(act_order, compute_capability=(8, 6), vllm_version="0.33.0").refused or "")
    qc = {
        "quant_method": "auto-round",
        "bits": 4,
        "group_size": 128,
        "sym": True,
        "extra_config": {"lm_head": {"bits": 8}},
    }
    # an lm_head entry quantizes the head (recorded: the +int8-lm_head cases); under a prefix: refused
    head = wna16_from_config("auto-round", qc).head_scheme()
    assert head is not None and (head.bits, head.group_size) == (8, 128)
    assert wna16_from_config("auto-round", {**qc, "extra_config": {}}).head_scheme() is None
    with pytest.raises(InputError, match="LM head"):
        wna16_from_config("auto-round", {**qc, "extra_config": {"language_model.lm_head": {"bits": 8}}})


def test_unknown_sm_count_takes_the_larger_workspace() -> None:
    """Without an SM count each Marlin layer's workspace is two blocks (said in a note)."""
    cfg = CONFIGS / "Qwen--Qwen3-8B+GPTQ-Int4-g128"
    known = model_weights(cfg, compute_capability=(8, 6), sm_count=82)
    unknown = model_weights(cfg, compute_capability=(8, 6))
    layers = 36 * 4  # Qwen3-8B: four quantized linear layers per decoder layer
    assert unknown.stages[0].allocated_bytes - known.stages[0].allocated_bytes == layers * 512
    assert any("SM count is unknown" in n for n in unknown.notes)


def test_compressed_tensors_ignore_and_other_schemes() -> None:
    """``ignore`` keeps a layer (a fused one by all its parts) unquantized, one part alone refused
    as vLLM refuses it (``should_ignore_layer``); W8A8 stays refused."""
    base = {
        "quant_method": "compressed-tensors",
        "format": "pack-quantized",
        "config_groups": {
            "group_0": {
                "targets": ["Linear"],
                "input_activations": None,
                "weights": {"num_bits": 4, "type": "int", "symmetric": True, "strategy": "group", "group_size": 128},
            }
        },
        "ignore": ["lm_head", "re:.*self_attn.[qkv]_proj"],
    }
    q = wna16_from_config("compressed-tensors", base)
    assert q is not None
    assert q.layer_scheme("model.layers.0.self_attn.qkv_proj") is None
    one = wna16_from_config("compressed-tensors", {**base, "ignore": ["re:.*self_attn.k_proj"]})
    assert one is not None
    with pytest.raises(InputError, match="some but not all shards"):
        one.layer_scheme("model.layers.0.self_attn.qkv_proj")
    assert q.layer_scheme("model.layers.0.mlp.gate_up_proj") is not None
    w8a8 = json.loads(json.dumps(base))
    w8a8["config_groups"]["group_0"]["input_activations"] = {"num_bits": 8, "type": "int"}
    assert wna16_from_config("compressed-tensors", w8a8) is None


def test_plan_names_the_gpu_weights(tmp_path: Path) -> None:
    """``plan --gpu "RTX 3090"`` on an AutoRound W4A16 checkpoint prints vLLM's weights line."""
    _, out = plan_output(CONFIGS / "Qwen--Qwen3-32B+AutoRound-W4A16", "RTX 3090")
    want = RECORDED["0.28.0"]["Qwen--Qwen3-32B+AutoRound-W4A16 RTX 3090 --tensor-parallel-size 1"]["allocated_bytes"]
    assert f"{want:,} bytes" in out, out[-2000:]


def _gptq_headers(directory: Path, config: dict[str, Any], bf16: tuple[str, ...] = ()) -> None:
    """Header-only safetensors of a GPTQ checkpoint of ``config`` (shapes [1]: vLLM reads dtypes),
    the modules of ``bf16`` left in bfloat16."""
    import struct

    header: dict[str, Any] = {}
    off = 0
    for i in range(config["num_hidden_layers"]):
        for lin in ("self_attn.q_proj", "self_attn.k_proj", "self_attn.v_proj", "self_attn.o_proj",
                    "mlp.gate_proj", "mlp.up_proj", "mlp.down_proj"):  # fmt: skip
            name = f"model.layers.{i}.{lin}"
            tensors = [("weight", "BF16")] if name in bf16 else [("qweight", "I32"), ("scales", "F16")]
            for t, dt in tensors:
                nb = 4 if dt == "I32" else 2
                header[f"{name}.{t}"] = {"dtype": dt, "shape": [1], "data_offsets": [off, off + nb]}
                off += nb
    blob = json.dumps(header).encode()
    (directory / "model.safetensors").write_bytes(struct.pack("<Q", len(blob)) + blob + bytes(off))


def test_gptq_quantized_layers_from_the_headers(tmp_path: Path) -> None:
    """With headers, GPTQ layers are quantized where the checkpoint's tensors are not floats
    (vLLM's ``maybe_update_config``); a fused layer half quantized is refused as vLLM refuses it."""
    src = CONFIGS / "Qwen--Qwen3-8B+GPTQ-Int4-g128"
    config = json.loads((src / "config.json").read_text())
    (tmp_path / "config.json").write_text(json.dumps(config))
    gpu = {"compute_capability": (8, 6), "sm_count": 82}
    _gptq_headers(tmp_path, config)
    assert (
        model_weights(tmp_path, **gpu).stages[0].allocated_bytes == model_weights(src, **gpu).stages[0].allocated_bytes
    )
    _gptq_headers(tmp_path, config, bf16=("model.layers.0.mlp.down_proj",))
    more = (
        model_weights(tmp_path, **gpu).stages[0].allocated_bytes - model_weights(src, **gpu).stages[0].allocated_bytes
    )
    # down_proj [4096, 12288] in bf16 instead of Marlin's 4-bit weight, its g128 scales and workspace
    assert more == 4096 * 12288 * 2 - (4096 * 12288 // 2 + 12288 // 128 * 4096 * 2 + 512)
    _gptq_headers(tmp_path, config, bf16=("model.layers.0.mlp.up_proj",))
    assert "some but not all parts" in (model_weights(tmp_path, **gpu).refused or "")


def test_moe_experts_refused_where_not_checked() -> None:
    """Symmetric Marlin MoE experts are checked on the releases of ``QUANT_RULES`` (0.33.0's in
    test_quant_weights_moe.py) and SM 7.5-9.x: elsewhere refused by name."""
    moe = CONFIGS / "Qwen--Qwen3-30B-A3B+AutoRound-W4A16"
    assert model_weights(moe, compute_capability=(8, 6), sm_count=82, vllm_version="0.28.0").refused is None
    assert model_weights(moe, compute_capability=(8, 6), sm_count=82, vllm_version="0.33.0").refused is None
    assert "0.26.0" in (model_weights(moe, compute_capability=(8, 6), vllm_version="0.26.0").refused or "")
    assert "SM 7.5-9.x" in (model_weights(moe, compute_capability=(10, 0), vllm_version="0.28.0").refused or "")


def _exact(version: str, row: dict[str, Any]) -> bool:
    report = _dryboot(row, version)
    return bool(row["ok"]) and report.refused is None and report.stages[0].allocated_bytes == row["allocated_bytes"]


@pytest.mark.parametrize("version", ["0.27.1", "0.30.0", "0.33.0"])
def test_at_least_100_byte_exact_cases_per_release(version: str) -> None:
    """Issue 33: at least 100 byte-exact cases on each of 0.27.1, 0.30.0 and 0.33.0, over every
    recorded method (GPTQ, AWQ, AutoRound, compressed-tensors, MXFP4, ...)."""
    assert sum(_exact(version, row) for row in RECORDED[version].values()) >= 100


def test_every_release_of_the_rules_is_recorded() -> None:
    """Every release of ``QUANT_RULES`` (0.27.1-0.33.0) has vLLM's own records in this set."""
    assert set(QUANT_RULES) == {"0.27.1", "0.28.0", "0.29.0", "0.30.0", "0.31.0", "0.32.0", "0.33.0"}
    assert set(QUANT_RULES) <= set(RECORDED)


@pytest.mark.parametrize(("version", "least"), [("0.29.0", 100), ("0.31.0", 50), ("0.32.0", 40)])
def test_releases_between_byte_exact(version: str, least: int) -> None:
    """0.29.0 (0.28.0's rules), 0.31.0 (0.30.0's GPTQ rules with 0.33.0's kernels) and 0.32.0
    (0.31.0's with Humming first on SM 9.0 and the OAI Triton MoE kernels up to SM 12.x): the
    recorded GPTQ / AWQ / AutoRound / compressed-tensors / MXFP4 cases are byte-exact, act-order
    refused as vLLM refuses it (0.31.0, 0.32.0)."""
    assert sum(_exact(version, row) for row in RECORDED[version].values()) >= least
    act_order = [row for row in RECORDED[version].values() if "desc_act" in row["config"]]
    assert act_order and all(row["ok"] == quant_rules(version).gptq_act_order for row in act_order)


@pytest.mark.parametrize("config", ["google--gemma-3-12b-it+CT-W4A16-g32", "Qwen--Qwen3.5-27B+CT-W4A16-g32"])
def test_quantized_vision_tower_refused_by_name(config: str, tmp_path: Path) -> None:
    """A wrapper whose ``ignore`` list leaves its vision tower quantized is refused, naming a tower
    layer; without the tower (``--language-model-only``) the text model is answered, and its figure
    is the tower-less share of the checked one (the tower is in the model dtype either way)."""
    cfg = json.loads((CONFIGS / config / "config.json").read_text())
    cfg["quantization_config"] = {**cfg["quantization_config"], "ignore": ["lm_head"]}
    (tmp_path / "config.json").write_text(json.dumps(cfg))
    gpu: dict[str, Any] = {"compute_capability": (8, 6), "sm_count": 82, "vllm_version": "0.28.0"}
    refused = model_weights(tmp_path, **gpu).refused or ""
    assert "vision tower quantized" in refused and ("vision_tower." in refused or "visual." in refused), refused
    text_only = model_weights(tmp_path, language_model_only=True, **gpu)
    assert text_only.refused is None
    checked = model_weights(CONFIGS / config, language_model_only=True, **gpu)
    assert checked.stages[0].allocated_bytes == text_only.stages[0].allocated_bytes


def test_unchecked_methods_of_the_widened_families_refused(tmp_path: Path) -> None:
    """Gemma-3 and the dense Qwen3.5 wrapper take the weight-only integer and compressed-tensors
    layouts; fp8 (``Fp8Config``) and uniform ModelOpt FP8 / NVFP4 stay refused by name."""
    cfg = json.loads((CONFIGS / "google--gemma-3-12b-it+CT-W4A16-g32" / "config.json").read_text())
    for qc in ({"quant_method": "fp8"}, {"quant_method": "modelopt", "quant_algo": "FP8"}):
        (tmp_path / "config.json").write_text(json.dumps({**cfg, "quantization_config": qc}))
        refused = model_weights(tmp_path, compute_capability=(8, 9), sm_count=128, vllm_version="0.28.0").refused
        # plain fp8 on a GPU: refused where its layout after loading is not recorded (the family named)
        want = (
            "not gemma3_mm"
            if qc["quant_method"] == "fp8"
            else "Gemma3ForConditionalGeneration layouts are not modelled"
        )
        assert want in (refused or ""), refused

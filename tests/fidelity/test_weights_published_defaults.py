"""Published configs whose weights need their config class's defaults read as vLLM reads them
(issue 33): Llama-4 Scout / Maverick without a ``vision_config`` (``Llama4VisionConfig()``'s
tower), Qwen3-VL-235B-A22B-Thinking's vision config without ``num_position_embeddings`` and
``deepstack_visual_indexes`` (2304 positions, three deepstack levels), Nemotron-3 Ultra's
``layers_block_type`` list without ``num_hidden_layers`` and Nemotron-3's latent MoE.

``data/weights/published-defaults/recorded-<release>.json``: vLLM 0.28.0's and 0.33.0's own
figures (``record_weights.py`` pointed at that folder, its README) for tiny configs composed from
the published ones. Nothing recorded comes from dryboot. Needs no vLLM.
"""

from __future__ import annotations

import json
import sys
from dataclasses import replace
from pathlib import Path
from typing import Any

import pytest

sys.path.insert(0, str(Path(__file__).resolve().parent))

import quant_cases_nemlatent as nl
import test_weights as T
from quant_harness import case_ids, dryboot_weights, load_recorded, tp_of

from dryboot.errors import InputError
from dryboot.vllm.model_executor.model_loader.loader import model_weights
from dryboot.vllm.model_executor.model_loader.weights import RankWeights, quant_from_config, rank_weights

HERE = Path(__file__).resolve().parent
FOLDER = HERE / "data" / "weights" / "published-defaults"
PUBLIC = HERE.parents[0] / "data" / "configs" / "public"
RELEASES = ("0.28.0", "0.33.0")
RECORDED = {v: json.loads((FOLDER / f"recorded-{v}.json").read_text()) for v in RELEASES}
CASES = sorted((v, cid) for v, doc in RECORDED.items() for cid in doc["cases"])
#: ``Qwen3VLMoeVisionConfig``'s default deepstack levels (transformers 5.20, 5.24)
DEFAULT_DEEPSTACK_LEVELS = 3


def _config(row: dict[str, Any]) -> dict[str, Any]:
    config: dict[str, Any] = json.loads((FOLDER / f"{row['config'][len('arch--') :]}.json").read_text())
    return config


def _stage(version: str, row: dict[str, Any], stage: int) -> RankWeights:
    return rank_weights(_config(row), replace(T._parallel(row["argv"], stage), vllm_version=version), **T._serve(row))


def _listed(row: dict[str, Any], version: str, stage: int) -> int:
    """Qwen3-VL's deepstack feature buffers (a list attribute: in the recorder's allocated bytes,
    not its buffer bytes): the class default's levels of ``[max_num_batched_tokens, H_text]``, bf16,
    where the stage builds the tower."""
    config = _config(row)
    if config["architectures"][0] != "Qwen3VLMoeForConditionalGeneration":
        return 0
    assert "deepstack_visual_indexes" not in config["vision_config"]
    tower = not T._lm_only(row) and (stage == 0 or version != "0.33.0")
    tokens = row.get("max_num_batched_tokens", 8192)
    return DEFAULT_DEEPSTACK_LEVELS * tokens * config["text_config"]["hidden_size"] * 2 if tower else 0


def test_records_are_each_release() -> None:
    for v, doc in RECORDED.items():
        assert doc["vllm"] == v
        configs = {row["config"] for row in doc["cases"].values() if row["ok"]}
        assert configs == {
            "arch--Llama4NoVisionConfig",
            "arch--Qwen3VLMoeThinkingVision",
            "arch--NemotronHLatentMoeLayerList",
        }


@pytest.mark.parametrize(("version", "cid"), CASES)
def test_matches_vllm(version: str, cid: str) -> None:
    """[param, buffer, allocated] bytes of rank 0 of every stage, or vLLM's refusal refused.
    Nemotron-H's Mamba2 ``conv_weights`` buffers are views of parameters (no memory of their own):
    the recorder's buffer sum counts them, dryboot's not."""
    row = RECORDED[version]["cases"][cid]
    stages = row.get("stages") or [[row.get("param_bytes"), row.get("buffer_bytes"), row.get("allocated_bytes")]]
    if not row["ok"]:
        for stage in range(len(stages)):
            with pytest.raises(InputError):
                _stage(version, row, stage)
        return
    for stage, (param, buffer, allocated) in enumerate(stages):
        w = _stage(version, row, stage)
        assert (w.param_bytes, w.allocated_bytes) == (param, allocated)
        if row["config"] == "arch--NemotronHLatentMoeLayerList":
            assert w.buffer_bytes <= buffer
        else:
            assert w.buffer_bytes - _listed(row, version, stage) == buffer


def test_vision_config_absent_or_null_is_the_default_tower() -> None:
    """``null`` reads as absent (``Llama4Config`` / ``Qwen3VLMoeConfig`` build the default config);
    a vision config that is not an object is refused."""
    par = T._parallel(["--tensor-parallel-size", "1"])
    for name in ("Llama4NoVisionConfig", "Qwen3VLMoeThinkingVision"):
        config = json.loads((FOLDER / f"{name}.json").read_text())
        absent = rank_weights(
            {k: v for k, v in config.items() if k != "vision_config"}, par, max_num_batched_tokens=8192
        )
        null = rank_weights({**config, "vision_config": None}, par, max_num_batched_tokens=8192)
        assert (absent.param_bytes, absent.allocated_bytes) == (null.param_bytes, null.allocated_bytes)
        with pytest.raises(InputError):
            rank_weights({**config, "vision_config": 7}, par, max_num_batched_tokens=8192)


#: the published configs (``tests/data/configs/public/``) and TP: a figure on 0.28.0 and 0.33.0
PUBLISHED_FIGURES = (
    ("meta-llama--Llama-4-Scout-17B-16E-Instruct", 8),
    ("meta-llama--Llama-4-Maverick-17B-128E-Instruct", 8),
    ("Qwen--Qwen3-VL-235B-A22B-Thinking", 8),
    ("nvidia--NVIDIA-Nemotron-3-Ultra-550B-A55B-BF16", 8),
    ("nvidia--NVIDIA-Nemotron-3-Ultra-550B-A55B-FP8", 8),
    ("nvidia--NVIDIA-Nemotron-3-Ultra-550B-A55B-NVFP4", 8),
    ("nvidia--NVIDIA-Nemotron-3-Super-120B-A12B-FP8", 4),
    ("nvidia--NVIDIA-Nemotron-3-Super-120B-A12B-NVFP4", 4),
    ("nvidia--NVIDIA-Nemotron-3-Super-120B-NVFP4-FP8KV", 4),
)
#: published copies whose ``hf_quant_config.json`` has no ``producer`` (vLLM reads no quantization)
STRIPPED_PUBLISHED = tuple(n for n, _ in PUBLISHED_FIGURES if n.endswith(("FP8", "NVFP4", "FP8KV")))


@pytest.mark.parametrize("version", RELEASES)
@pytest.mark.parametrize(("name", "tp"), PUBLISHED_FIGURES)
def test_published_config_gets_a_figure(name: str, tp: int, version: str) -> None:
    report = model_weights(
        PUBLIC / name,
        tp=tp,
        compute_capability=(9, 0),
        sm_count=132,
        vllm_version=version,
        max_num_batched_tokens=8192,
    )
    assert not report.refused, report.refused
    assert report.stages[0].allocated_bytes > 0


def test_published_qwen3_vl_thinking_pipeline_stages() -> None:
    """94 text layers in 3 stages start at 0, 32 and 63, past the three deepstack levels: built
    (0.33.0); the deepstack refusal needs a later stage starting before layer 3."""
    config = json.loads((PUBLIC / "Qwen--Qwen3-VL-235B-A22B-Thinking" / "config.json").read_text())
    par = replace(
        T._parallel(["--tensor-parallel-size", "8", "--pipeline-parallel-size", "3"], 1), vllm_version="0.33.0"
    )
    assert rank_weights(config, par, max_num_batched_tokens=8192).param_bytes > 0
    with pytest.raises(InputError, match="deepstack"):
        rank_weights(config, replace(par, pp_partition=(1, 92, 1)), max_num_batched_tokens=8192)


# ------------------------------------------------------------ Nemotron-3's ModelOpt hf_quant_config

#: vLLM's own figures after ``process_weights_after_loading`` (``RECORD_SET=nemlatent
#: record_quant_weights.py``, ``quant_cases_nemlatent.py``) for the tiny latent config under the
#: published Super FP8 / NVFP4 ``hf_quant_config.json`` (no ``producer``: vLLM reads no
#: quantization) and under the NVFP4 one with ``producer`` modelopt added
QUANT = load_recorded("quant-recorded-nemlatent-")
QUANT_CASES = case_ids(QUANT)


@pytest.mark.parametrize(("version", "cid"), QUANT_CASES)
def test_nemotron_latent_quant_configs_match_vllm(version: str, cid: str) -> None:
    row = QUANT[version][cid]
    report = dryboot_weights(nl.CONFIGS, row, version)
    if not row["ok"]:
        # vLLM refuses a nested NVFP4 config without group_size / exclude_modules (as dryboot); the
        # oracle cannot build the NVFP4 experts on its stand-in B200 (dryboot: not modelled there)
        assert report.refused, f"vLLM or the oracle fails ({row['error'][:200]}); dryboot answered"
        if "requires the following fields" in row["error"]:
            assert "requires the following fields" in report.refused
        return
    if row["quantization"] is None:
        # the stripped copies: vLLM builds the model unquantized; dryboot's unquantized figures are
        # the model as initialize_model builds it (before the post-load step), with 0.33.0's
        # FlashInfer KV counter on B200 (test_weights_flashinfer_counter.py)
        assert not report.refused, report.refused
        assert report.stages[0].allocated_bytes == row["built_allocated_bytes"]
        return
    if report.refused:
        assert "not modelled" in report.refused or "not checked" in report.refused, report.refused
        return
    assert report.stages[0].allocated_bytes == row["allocated_bytes"]


def test_stripped_hf_quant_config_is_no_quantization() -> None:
    """The published Nemotron-3 Super / Ultra FP8 and NVFP4 copies (aiconfigurator's) carry an
    ``hf_quant_config.json`` without ``producer``: vLLM (every release) reads no quantization from
    it; so does dryboot (the figure is the BF16 model's)."""
    stripped = [
        (v, row) for v, cases in QUANT.items() for row in cases.values() if row["config"].endswith(("-FP8", "-NVFP4"))
    ]
    assert stripped and all(row["quantization"] is None for _, row in stripped)
    for name in STRIPPED_PUBLISHED:
        hq = json.loads((PUBLIC / name / "hf_quant_config.json").read_text())
        assert "producer" not in hq
        config = json.loads((PUBLIC / name / "config.json").read_text())
        assert quant_from_config(config, hq).method is None


@pytest.mark.parametrize("name", ["XiaomiMiMo--MiMo-V2-Flash", "poolside--Laguna-S-2.1-FP8"])
def test_published_quantized_families_answered(name: str) -> None:
    """Block-fp8 MiMo-V2-Flash and compressed-tensors FP8-block Laguna, once refused by name, are
    modelled after loading (issue 33; vLLM's own figures: test_weights_fp8rest.py, whose H100 TP 8
    rows on 0.33.0 these are)."""
    report = model_weights(PUBLIC / name, tp=8, compute_capability=(9, 0), sm_count=132, vllm_version="0.33.0")
    assert not report.refused, report.refused


def test_quantized_latent_moe_matched_exactly() -> None:
    """The NVFP4 latent MoE (projections, experts L wide) after loading on H100 at TP 1 and 2:
    0.28.0 through Marlin, 0.32.0 / 0.33.0 through Humming (recorded with humming-kernels 0.1.17 /
    0.1.19)."""
    exact = set()
    for v, cases in QUANT.items():
        for row in cases.values():
            if row["config"].endswith("-g16") and row["ok"]:
                report = dryboot_weights(nl.CONFIGS, row, v)
                assert report.stages[0].allocated_bytes == row["allocated_bytes"]
                exact.add((v, row["gpu"], tp_of(row)))
    assert exact == {(v, "H100", tp) for v in (*RELEASES, "0.32.0") for tp in (1, 2)}
    for v in ("0.32.0", "0.33.0"):
        assert all(row.get("humming") for row in QUANT[v].values() if row["config"].endswith("-g16") and row["ok"])

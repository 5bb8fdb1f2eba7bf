"""Attention sinks outside gpt-oss and FlashInfer's KV counter (issue 33).

vLLM's figures: ``data/weights/quant-recorded-sinksfam-<version>.json`` (``RECORD_SET=sinksfam
record_quant_weights.py``, ``quant_cases_sinksfam.py``; ``VLLM_HAS_FLASHINFER_CUBIN=1``, 8,192
batched tokens): Granite-SWA, Granite-MoE-SWA (sinks on) and Laguna (sinks on its sliding layers),
unquantized, and Granite-MoE-SWA's tiny config as published (no sinks: FlashInfer on B200 only), on
RTX 5090 and B200, vLLM 0.33.0 and 0.32.0. With ``flashinfer-cubin`` FlashInfer
serves layers with sinks on SM 12.x (FlashAttention 2, SM 12.x's default, takes none), so vLLM
0.33.0 builds ``FlashInferImpl`` and its shared multi-CTA KV counter for them while the model is
built. Before, these walks did not ask about the counter and the safety net
(``weights.unmodelled_flashinfer_counter``) took SM 12.x's default backend: on RTX 5090 the figures
were answered a counter short (Granite-SWA's tiny config 19,946,496 B for vLLM's 20,208,640;
Laguna's 39,153,664 B for 39,415,808) and on B200 refused by name. dryboot's unquantized figure
is the one as built (``built_allocated_bytes``), as for every unquantized family. 0.32.0 builds no
counter (the same figures on both GPUs). Needs no vLLM.

Why no sinks model reaches that safety net with a wrong answer (it takes SM 12.x's default
backend, right only without sinks): every vLLM 0.33.0 model file passing ``sinks=`` to its
attention (:data:`SINKS_FILES`, checked against the installed source where there is one) is a
family whose walk asks about the counter with its sinks (:data:`SINKS_WALKED`), or is refused by
name: its weights (:data:`SINKS_REFUSED`), a plain Granite config with sinks as it is read
(:data:`SINKS_CONFIG_REFUSED`), a DFlash drafter with sinks.
"""

from __future__ import annotations

import json
import re
import sys
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).resolve().parent))

import quant_cases_sinksfam as sf
from quant_harness import case_ids, dryboot_weights, load_recorded

from dryboot.errors import InputError
from dryboot.vllm.model_executor.model_loader.loader import drafter_model_weights, model_weights
from dryboot.vllm.model_executor.model_loader.weights import Parallel, RankWeights, unmodelled_flashinfer_counter
from dryboot.vllm.transformers_utils.config import geometry_from_config

RECORDED = load_recorded("quant-recorded-sinksfam-")
CASES = case_ids(RECORDED)
#: vLLM 0.33.0's counter per config and GPU (8,192 tokens x query heads x int32): Granite's 8 heads;
#: Laguna's sink (sliding) layers on RTX 5090, every layer on B200 (the buffer grows to 16 heads)
COUNTERS = {
    ("GraniteSWAForCausalLM", "RTX 5090"): 262_144,
    ("GraniteSWAForCausalLM", "B200"): 262_144,
    ("GraniteMoeSWAForCausalLM-sinks", "RTX 5090"): 262_144,
    ("GraniteMoeSWAForCausalLM-sinks", "B200"): 262_144,
    ("LagunaForCausalLM", "RTX 5090"): 262_144,
    ("LagunaForCausalLM", "B200"): 262_144 + 524_288,
    # Granite-MoE-SWA's tiny config as published (attention_sinks false): FlashInfer on B200 only
    ("GraniteMoeSWAForCausalLM", "RTX 5090"): 0,
    ("GraniteMoeSWAForCausalLM", "B200"): 262_144,
}


@pytest.mark.parametrize(("version", "cid"), CASES)
def test_matches_vllm_as_built(version: str, cid: str) -> None:
    """Byte-exact with vLLM's figure as built (the counter in it on 0.33.0)."""
    row = RECORDED[version][cid]
    assert row["ok"], row.get("error")
    report = dryboot_weights(sf.CONFIGS, row, version)
    assert not report.refused, report.refused
    assert report.stages[0].allocated_bytes == row["built_allocated_bytes"]


@pytest.mark.parametrize(("config", "gpu"), sorted(COUNTERS))
def test_counter_is_the_release_difference(config: str, gpu: str) -> None:
    """vLLM 0.33.0 holds the counter above 0.32.0's figure; dryboot names it (``attention counter``)."""
    cid = f"{config} {gpu} --tensor-parallel-size 1"
    new, old = RECORDED["0.33.0"][cid], RECORDED["0.32.0"][cid]
    assert new["built_allocated_bytes"] - old["built_allocated_bytes"] == COUNTERS[config, gpu]
    assert (
        dryboot_weights(sf.CONFIGS, new, "0.33.0").stages[0].by_kind.get("attention counter", 0)
        == COUNTERS[config, gpu]
    )


def test_without_cubin_no_counter_on_rtx5090() -> None:
    """Without ``flashinfer-cubin`` FlashInfer takes no sinks: on RTX 5090 (FlashAttention 2 for the
    other layers) no layer builds it, so dryboot holds no counter there (Granite-SWA: every layer
    has sinks)."""
    row = {**RECORDED["0.33.0"]["GraniteSWAForCausalLM RTX 5090 --tensor-parallel-size 1"], "flashinfer_cubin": False}
    stage = dryboot_weights(sf.CONFIGS, row, "0.33.0").stages[0]
    assert "attention counter" not in stage.by_kind
    assert (
        stage.allocated_bytes
        == RECORDED["0.32.0"]["GraniteSWAForCausalLM RTX 5090 --tensor-parallel-size 1"]["built_allocated_bytes"]
    )


def test_corpus_size() -> None:
    """Four configs on two GPUs on each release."""
    for version in ("0.32.0", "0.33.0"):
        assert len(RECORDED[version]) == 8


ARCH = Path(__file__).resolve().parent / "data" / "architectures"
#: vLLM 0.33.0's model files that build attention layers with sinks (``sinks=`` in
#: ``vllm/model_executor/models/``), read by :func:`test_the_sinks_files_are_these` where installed
SINKS_FILES = (
    "gpt_oss",
    "granite",
    "granitemoe",
    "laguna",
    "mimo_v2",
    "mimo_v2_omni",
    "openai_privacy_filter",
    "qwen3_dflash",
)
#: the planned architectures of those files -> a tiny config with its sinks on
SINKS_WALKED = {
    "GptOssForCausalLM": ARCH / "GptOssForCausalLM.json",
    "GraniteSWAForCausalLM": sf.CONFIGS / "GraniteSWAForCausalLM",
    "GraniteMoeSWAForCausalLM": sf.CONFIGS / "GraniteMoeSWAForCausalLM-sinks",
    "LagunaForCausalLM": ARCH / "LagunaForCausalLM.json",
    "MiMoV2FlashForCausalLM": ARCH / "MiMoV2FlashForCausalLM.json",
}
#: the others, whose weights are refused by name (no figure to be a counter short)
SINKS_REFUSED = ("MiMoV2OmniForCausalLM", "OpenAIPrivacyFilterForTokenClassification")
#: ``granite.py`` / ``granitemoe.py``'s plain architectures, whose layers take sinks when the config
#: says ``attention_sinks`` or sets ``layer_types`` (``granite_layer_attn_params``): refused by the
#: config reader, before any plan or figure
SINKS_CONFIG_REFUSED = ("GraniteForCausalLM", "GraniteMoeForCausalLM", "GraniteMoeSharedForCausalLM")
#: (GPU, capability, SM count) where vLLM 0.33.0 may serve sinks through FlashInfer
FLASHINFER_GPUS = (("RTX 5090", (12, 0), 170), ("B200", (10, 0), 148))
VLLM_033 = Path.home() / ".cache/dryboot/boot-env/0.33.0/lib/python3.11/site-packages/vllm"


def test_the_counter_guard_does_not_know_sinks() -> None:
    """Why every sinks family must ask in its own walk: the guard a walk falls back on
    (``weights.unmodelled_flashinfer_counter``) takes SM 12.x's default backend for FlashAttention 2,
    which is right only without sinks. Given Granite-SWA (sinks on every layer) from a walk that did
    not ask, it lets the figure pass on RTX 5090, where vLLM 0.33.0 builds the counter (262,144 bytes
    over 0.32.0's figure, recorded) : the figure would be a counter short, not refused."""
    config = json.loads((sf.CONFIGS / "GraniteSWAForCausalLM" / "config.json").read_text())
    par = Parallel(capability=(12, 0), sm_count=170, vllm_version="0.33.0")
    assert unmodelled_flashinfer_counter(config, par, RankWeights()) is None
    assert COUNTERS["GraniteSWAForCausalLM", "RTX 5090"] == 262_144


@pytest.mark.parametrize("architecture", sorted(SINKS_WALKED))
@pytest.mark.parametrize("cubin", [True, False])
@pytest.mark.parametrize(("gpu", "capability", "sms"), FLASHINFER_GPUS, ids=[g for g, _, _ in FLASHINFER_GPUS])
def test_every_sinks_walk_asks_about_the_counter(
    architecture: str, cubin: bool, gpu: str, capability: tuple[int, int], sms: int
) -> None:
    """No sinks model reaches the guard: each planned family whose layers hold sinks asks about the
    counter with its own layers and their sinks (``weights.flashinfer_counter_layers`` /
    ``laguna._flashinfer_counters``: ``counter_checked``), on RTX 5090 and B200, with and without
    flashinfer-cubin; the figures where vLLM was recorded: :func:`test_matches_vllm_as_built` and
    ``test_weights_flashinfer_counter_families.py`` (MiMo-V2-Flash)."""
    report = model_weights(
        SINKS_WALKED[architecture],
        compute_capability=capability,
        sm_count=sms,
        vllm_version="0.33.0",
        max_num_batched_tokens=8192,
        flashinfer_cubin=cubin,
    )
    assert not report.refused, report.refused
    assert all(stage.counter_checked for stage in report.stages), f"{architecture} on {gpu}: the walk never asked"


@pytest.mark.parametrize("architecture", SINKS_REFUSED)
def test_the_other_sinks_architectures_are_refused(architecture: str, tmp_path: Path) -> None:
    """MiMo-V2-Omni (a multimodal wrapper of remote config code) and OpenAI's privacy filter (a
    token classifier) have no weights walk: refused by name on a FlashInfer GPU."""
    config = {**json.loads((ARCH / "GptOssForCausalLM.json").read_text()), "architectures": [architecture]}
    (tmp_path / "config.json").write_text(json.dumps(config))
    report = model_weights(
        tmp_path, compute_capability=(12, 0), sm_count=170, vllm_version="0.33.0", max_num_batched_tokens=8192
    )
    assert report.refused and architecture in report.refused


@pytest.mark.parametrize("architecture", SINKS_CONFIG_REFUSED)
@pytest.mark.parametrize("field", ["attention_sinks", "layer_types"])
def test_plain_granite_with_sinks_is_refused_when_read(architecture: str, field: str) -> None:
    """A plain Granite / Granite-MoE / Granite-MoE-Shared config with ``attention_sinks`` true or a
    ``layer_types`` list (vLLM 0.29.0+ then gives every layer a sink) is refused by name as it is
    read, so no plan reaches a weights walk that would miss the sinks or their counter."""
    config = json.loads((ARCH / f"{architecture}.json").read_text())
    config[field] = True if field == "attention_sinks" else ["full_attention"] * config["num_hidden_layers"]
    with pytest.raises(InputError, match="attention sinks"):
        geometry_from_config(config)


def test_a_dflash_drafter_with_sinks_is_refused(tmp_path: Path) -> None:
    """A DFlash drafter (``qwen3_dflash.py``) with sinks (``dflash_config.attention_sink_bias``) is
    refused by name: its layout is not modelled (the drafter's walk asks no GPU)."""
    draft = json.loads((ARCH / "DFlashDraftModel.json").read_text())
    draft["dflash_config"] = {**draft["dflash_config"], "attention_sink_bias": True}
    (tmp_path / "config.json").write_text(json.dumps(draft))
    target = json.loads((ARCH / "Qwen3ForCausalLM.json").read_text())
    with pytest.raises(InputError, match="DFlash drafter's layout is not modelled"):
        drafter_model_weights(tmp_path, target, "dflash", max_model_len=4096, vllm_version="0.33.0")


@pytest.mark.skipif(not VLLM_033.is_dir(), reason="reads vLLM 0.33.0's source (its boot environment)")
def test_the_sinks_files_are_these() -> None:
    """:data:`SINKS_FILES` is every 0.33.0 model file passing ``sinks=`` to its attention."""
    files = sorted(
        p.stem for p in (VLLM_033 / "model_executor" / "models").glob("*.py") if re.search(r"\bsinks=", p.read_text())
    )
    assert tuple(files) == SINKS_FILES

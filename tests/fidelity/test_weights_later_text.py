"""vLLM's later releases' text models (issue 33 item 2): Beam, ExaoneMoE under its second name,
Granite-SWA, Granite-MoE-SWA, Kolibri-1 and Qwen4-Exp's plain layout, dryboot's per-rank weights
against what each release that plans them allocates on the meta device, byte for byte.

``data/weights/recorded-<release>-later-text.json`` are each release's own figures for the tiny
configs (``arch--<Architecture>``) and, on 0.33.0, the configs with every defaultable key left out
(``arch--defaults--<Architecture>``, ``data/architectures/defaults/``; the file's ``overlay``
gives the keys set beside them: Granite-MoE-SWA's 2048 positions, so that the recorder's 4096-token
length passes vLLM's check), at TP 1/2/4/8, expert parallelism and three pipeline stages, recorded
in each release's boot environment with::

    RECORD_WEIGHTS_OUT=tests/fidelity/data/weights/recorded-0.33.0-later-text.json \\
        $DRYBOOT_VLLM_PYTHON tests/fidelity/record_weights.py --tiny BeamForCausalLM \\
        ExaoneMoEForCausalLM GraniteSWAForCausalLM GraniteMoeSWAForCausalLM Kolibri1ForCausalLM \\
        defaults/BeamForCausalLM defaults/GraniteSWAForCausalLM defaults/Kolibri1ForCausalLM
    RECORD_WEIGHTS_OVERLAY='{"GraniteMoeSWAForCausalLM": {"max_position_embeddings": 2048}}' ... \\
        --tiny defaults/GraniteMoeSWAForCausalLM

(0.29.0-0.32.0: the architectures each release plans, ``registry.LATER_ARCHITECTURES``; what the
recorder fakes: its docstring). A case vLLM refuses must be refused.
"""

from __future__ import annotations

import json
from dataclasses import replace
from pathlib import Path
from typing import Any

import pytest
from test_weights import _parallel

import dryboot.vllm.model_executor.models  # noqa: F401  (registers the families of models/ with the walk)
from dryboot.errors import InputError
from dryboot.vllm.model_executor.model_loader.weights import Parallel, modelled_architectures, rank_weights
from dryboot.vllm.model_executor.models import beam
from dryboot.vllm.models.registry import LATER_ARCHITECTURES

HERE = Path(__file__).resolve().parent
ARCHS = HERE / "data" / "architectures"
DATA = HERE / "data" / "weights"
RECORDED = {p.name.split("-")[1]: json.loads(p.read_text()) for p in sorted(DATA.glob("recorded-*-later-text.json"))}
CASES = sorted((v, cid) for v, doc in RECORDED.items() for cid in doc["cases"])
TEXT = (
    "BeamForCausalLM",
    "ExaoneMoEForCausalLM",
    "GraniteSWAForCausalLM",
    "GraniteMoeSWAForCausalLM",
    "Kolibri1ForCausalLM",
    "Qwen4ExpForCausalLM",
)


def _config(name: str, release: str) -> dict[str, Any]:
    """``arch--X`` / ``arch--defaults--X``'s config, with the record's overlay for it."""
    path = ARCHS / f"{name[len('arch--') :].replace('defaults--', 'defaults/')}.json"
    config: dict[str, Any] = json.loads(path.read_text())
    return {**config, **RECORDED[release].get("overlay", {}).get(name, {})}


def _weights(config: dict[str, Any], argv: list[str], release: str, stage: int = 0) -> Any:
    return rank_weights(config, replace(_parallel(argv, stage), vllm_version=release), max_num_batched_tokens=8192)


def test_records_are_each_release() -> None:
    """Each release's file is that release's, and records every text model it plans."""
    assert set(TEXT) <= modelled_architectures()
    assert "0.33.0" in RECORDED
    for v, doc in RECORDED.items():
        assert doc["vllm"] == v
        archs = {row["config"].rsplit("--", 1)[1] for row in doc["cases"].values()}
        assert archs == {a for a in TEXT if v in LATER_ARCHITECTURES[a]}, v


@pytest.mark.parametrize(("release", "cid"), CASES)
def test_matches_vllm(release: str, cid: str) -> None:
    """[param, buffer, allocated] bytes of rank 0 of every stage, or vLLM's refusal refused."""
    row = RECORDED[release]["cases"][cid]
    config = _config(row["config"], release)
    if not row["ok"]:
        with pytest.raises(InputError):
            _weights(config, row["argv"], release)
        return
    stages = row.get("stages") or [[row["param_bytes"], row["buffer_bytes"], row["allocated_bytes"]]]
    got = []
    for stage in range(len(stages)):
        w = _weights(config, row["argv"], release, stage)
        got.append([w.param_bytes, w.buffer_bytes, w.allocated_bytes])
    assert got == stages


def _tiny(arch: str, **changes: Any) -> dict[str, Any]:
    config: dict[str, Any] = json.loads((ARCHS / f"{arch}.json").read_text())
    return {**config, **changes}


def test_beam_all_reduce_workspace_refused() -> None:
    """At TP 2 / 4 / 8, bfloat16, hidden size a multiple of 1024 in [1024, 8192]: vLLM may map
    multicast buffers outside torch's allocator (``BeamAllReduceWorkspace``): refused by name;
    TP 1, float16 or another width: sized."""
    wide = _tiny("BeamForCausalLM", hidden_size=1024)
    with pytest.raises(InputError, match="BeamAllReduceWorkspace"):
        rank_weights(wide, Parallel(tp=2, vllm_version="0.33.0"))
    assert rank_weights(wide, Parallel(tp=1, vllm_version="0.33.0")).param_bytes > 0
    assert rank_weights(wide, Parallel(tp=2, vllm_version="0.33.0"), dtype="float16").param_bytes > 0
    assert beam.allreduce_workspace_refusal(_tiny("BeamForCausalLM", hidden_size=9216), 8) is None
    assert beam.allreduce_workspace_refusal(wide, 8, "auto") is not None


def test_beam_tied_head_refused() -> None:
    """``BeamForCausalLM.__init__`` raises on a tied head; so does dryboot, by name."""
    with pytest.raises(InputError, match="tie_word_embeddings"):
        rank_weights(_tiny("BeamForCausalLM", tie_word_embeddings=True), Parallel(vllm_version="0.33.0"))


def test_granite_swa_sinks_and_rope_tables() -> None:
    """A per-head sink per layer unless ``attention_sinks`` is false; one rotary table per
    distinct non-zero ``layer_rope_theta`` of the stage (the tiny config: NoPE then 10000)."""
    par = Parallel(tp=2, vllm_version="0.33.0")
    tiny = _tiny("GraniteSWAForCausalLM")
    base = rank_weights(tiny, par)
    no_sinks = rank_weights({**tiny, "attention_sinks": False}, par)
    assert base.param_bytes - no_sinks.param_bytes == 4 * (8 // 2) * 2
    two_bases = rank_weights({**tiny, "layer_rope_theta": [0, 10000.0, 500000.0, 10000.0]}, par)
    assert two_bases.buffer_bytes - base.buffer_bytes == 8192 * 64 * 2
    with pytest.raises(InputError, match="layer_rope_theta"):
        rank_weights({**tiny, "layer_rope_theta": [0, 1.0]}, par)


def test_qwen4_exp_hyper_connections() -> None:
    """Qwen4-Exp's plain layout: Qwen3-Next's layers without their norms, two replicated bfloat16
    ``GatedResidual`` per layer and the final mixer (``r + hc`` padded to 16 rows); an incomplete QSA
    config, offloaded PLE tables and quantized checkpoints refused by name."""
    par = Parallel(tp=2, vllm_version="0.33.0")
    tiny = _tiny("Qwen4ExpForCausalLM")
    base = rank_weights(tiny, par)
    # hc_lowrank 32 -> 40: per layer two modules, each r + hc rows 64 -> 80 (72 padded) and 8 more
    # up columns; the mixer 8 more rows and columns (hc x H = 8192, bfloat16)
    wider = rank_weights({**tiny, "hc_lowrank": 40}, par)
    assert wider.param_bytes - base.param_bytes == (4 * 2 * (16 + 8) + 16) * 8192 * 2
    wide = rank_weights(tiny, par, dtype="float32")  # the hyper-connection weights stay bfloat16
    assert wide.by_kind["hyper_connection"] == base.by_kind["hyper_connection"]
    assert wide.by_kind["attention"] == 2 * base.by_kind["attention"]
    for bad, field in (
        ({"indexer_n_heads": 4}, "QSA config is missing required fields"),
        ({"ple_layer_ids": [1]}, "pinned host memory"),  # vLLM's default offload (test_weights_qwen4_exp_side)
        ({"hc_count": 1}, "hc_count"),
        ({"hc_lowrank": 0}, "hc_lowrank"),
        ({"full_attention_interval": 0}, "full_attention_interval"),
        ({"layer_types": ["linear_attention", "full_attention"]}, "layer_types"),
        ({"layer_types": ["linear_attention", "qwen_sparse_attention"] * 2}, "layer_types"),
    ):
        with pytest.raises(InputError, match=field):
            rank_weights({**tiny, **bad}, par)
    with pytest.raises(InputError, match="quantized"):
        rank_weights({**tiny, "quantization_config": {"quant_method": "fp8"}}, par)


@pytest.mark.parametrize("release", ["0.29.0", "0.33.0"])
def test_qwen4_exp_attention_interval(release: str) -> None:
    """``full_attention_interval`` 2 on the tiny config (``data/weights/qwen4-exp-interval-<release>.json``,
    recorded as above with ``RECORD_WEIGHTS_OVERLAY='{"Qwen4ExpForCausalLM": {"full_attention_interval": 2}}'``
    and ``RECORD_WEIGHTS_FLAGS="--tensor-parallel-size 2"``): vLLM's own config class (0.29.0) keeps
    every 4th layer attention, transformers' (0.33.0) reads the interval; both byte-exact."""
    doc = json.loads((DATA / f"qwen4-exp-interval-{release}.json").read_text())
    assert doc["vllm"] == release
    config = {**_tiny("Qwen4ExpForCausalLM"), **doc["overlay"]["Qwen4ExpForCausalLM"]}
    for row in doc["cases"].values():
        stages = row.get("stages") or [[row["param_bytes"], row["buffer_bytes"], row["allocated_bytes"]]]
        got = []
        for stage in range(len(stages)):
            w = _weights(config, row["argv"], release, stage)
            got.append([w.param_bytes, w.buffer_bytes, w.allocated_bytes])
        assert got == stages, row["argv"]

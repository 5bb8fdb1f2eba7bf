"""FlashInfer's KV counter in every family's weights walk (issue 33), vLLM 0.33.0.

``FlashInferImpl.__init__`` allocates a shared multi-CTA KV counter while the model is built
(``weights.flashinfer_kv_counter_bytes``). A family's walk asks about it with its own attention
layers (``weights.flashinfer_counter_layers`` / the base walk's ``_flashinfer_counter``), or the
figure is refused by name (``weights.unmodelled_flashinfer_counter``). That refusal read the head
count from ``num_attention_heads`` and a few other keys, so families keeping theirs elsewhere
(DBRX's ``n_heads``, Moondream 3's ``config.text``) were answered without the counter.

* the sweep: every architecture's tiny config (``data/architectures/``) on B200 with 0.33.0: where
  dryboot's own KV-cache plan puts a layer on FlashInfer (``FLASHINFER`` / ``TRITON_FLASHINFER``),
  the weights figure holds the counter or is refused; where the plan refuses (a family choosing its
  backends itself off SM 9.x) the walk must have asked (no list of families: a new family's walk
  is held to it when its config is added);
* the recorded set ``data/weights/quant-recorded-ficounterfam-0.33.0.json`` (``RECORD_SET=ficounterfam
  record_quant_weights.py``, ``quant_cases_ficounterfam.py``): vLLM's own figures, as built, for DBRX,
  Step-5, Dots3-Note, Moondream 3, MiMo-V2-Flash, AXK1 and Bailing-V2.5 on B200, with an fp8 KV
  cache on RTX 4090, and on H100 (no FlashInfer: the figures without the counter); Gemma-3n's tiny
  config without ``text_config.num_attention_heads`` (``Gemma3nForConditionalGeneration-noheads``, recorded
  in the ``0.33.0-mm`` boot environment: timm), whose head count the refusal reads with the text config
  class's default (the guard once read the raw text config, found no heads and let the figure pass
  262,144 bytes short); and a MiMo-V2-Flash
  stand-in (``MiMoV2Flash-growth``: the tiny config with equal key / value head sizes, 128, no sinks,
  16 sliding heads after 8 full ones) whose layers all select FlashInfer and grow its buffer. Nothing
  recorded comes from dryboot. Needs no vLLM.
"""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Any

import pytest

sys.path.insert(0, str(Path(__file__).resolve().parent))

import quant_cases_ficounterfam as fc
from quant_harness import case_ids, dryboot_weights, load_recorded

from dryboot.errors import InputError
from dryboot.planner.plan import plan
from dryboot.vllm.engine_args import EngineArgs
from dryboot.vllm.gpus import gpu_table
from dryboot.vllm.model_executor.model_loader.loader import model_weights
from dryboot.vllm.model_executor.model_loader.weights import FLASHINFER_IMPL_BACKENDS
from dryboot.vllm.transformers_utils.config import load_model

ARCHITECTURES = Path(__file__).resolve().parent / "data" / "architectures"
CONFIGS = sorted(p for p in ARCHITECTURES.glob("*.json") if p.name != "recorded.json")
RECORDED = load_recorded("quant-recorded-ficounterfam-")
CASES = case_ids(RECORDED)
#: the oracle's failure on SM 10.x for MLA models before it imported CUTLASS MLA's module on meta
#: (``cutlass_mla.py`` ``g_sm100_workspace`` on "cuda"): no recorded row fails so now (AXK1's and
#: Bailing-V2.5's B200 rows re-recorded with the current oracle, issue 33)
ORACLE_NO_DRIVER = "Found no NVIDIA driver"
#: the counter where FlashInfer serves (B200; RTX 4090 with an fp8 cache), 8,192 tokens: DBRX's 8 heads
#: (x 4 bytes); the MiMo-V2-Flash stand-in's full layer of 8 heads first, then sliding layers of 16:
#: vLLM's shared buffer grows and the first layer keeps the smaller one (262,144 + 524,288)
COUNTERS = {"DbrxForCausalLM": 262_144, "MiMoV2Flash-growth": 262_144 + 524_288}
#: Gemma-3n's tiny config without ``text_config.num_attention_heads`` (issue 37): the refusal's head
#: count read with the text config class's default, as vLLM's model takes it
CLASS_DEFAULT_HEADS = "Gemma3nForConditionalGeneration-noheads"


def _planned_backends(config: Path, gpu: str = "B200") -> set[str] | None:
    """The backends dryboot's KV-cache plan gives the model's layers on ``gpu``, 0.33.0 (``None``:
    the plan refuses it)."""
    args = EngineArgs(vllm_version="0.33.0", gpu=gpu_table()[gpu], max_num_batched_tokens=8192)
    try:
        return {lp.backend for lp in plan(load_model(str(config)), args).layers}
    except InputError:
        return None


@pytest.mark.parametrize("config", CONFIGS, ids=[p.stem for p in CONFIGS])
def test_every_walk_counts_the_counter_or_is_refused_on_b200(config: Path) -> None:
    report = model_weights(
        config, compute_capability=(10, 0), sm_count=148, vllm_version="0.33.0", max_num_batched_tokens=8192
    )
    if report.refused:
        return
    rank = report.stages[0]
    backends = _planned_backends(config)
    if backends is None:  # the plan cannot say which backend its layers take: the walk must have asked
        assert rank.counter_checked, f"{config.stem}: answered on B200 / 0.33.0 by a walk that never asked"
    elif backends & FLASHINFER_IMPL_BACKENDS:
        assert rank.by_kind.get("attention counter", 0) > 0, f"{config.stem}: FlashInfer planned, no counter"


@pytest.mark.parametrize("config", CONFIGS, ids=[p.stem for p in CONFIGS])
def test_every_walk_counts_the_counter_or_is_refused_on_rtx5090(config: Path) -> None:
    """SM 12.0 with ``flashinfer-cubin``: FlashAttention 2 by default, FlashInfer for layers with
    attention sinks (which FlashAttention 2 does not take there); where dryboot's plan puts a layer on
    FlashInfer the weights figure holds the counter or is refused (Granite-SWA and Laguna were answered
    a counter short: ``test_weights_sinks_families.py``)."""
    report = model_weights(
        config, compute_capability=(12, 0), sm_count=170, vllm_version="0.33.0", max_num_batched_tokens=8192
    )
    if report.refused:
        return
    backends = _planned_backends(config, "RTX 5090")
    if backends and backends & FLASHINFER_IMPL_BACKENDS:
        assert report.stages[0].by_kind.get("attention counter", 0) > 0, f"{config.stem}: FlashInfer planned"


def test_recorded_set() -> None:
    assert set(RECORDED) == {"0.33.0"}
    rows = RECORDED["0.33.0"].values()
    assert {row["gpu"] for row in rows} == {"B200", "RTX 4090", "H100"} and len(rows) == 25
    assert all(row["argv"][-2:] == ["--kv-cache-dtype", "fp8"] for row in rows if row["gpu"] == "RTX 4090")


def _kv(row: dict[str, Any]) -> str:
    argv = row["argv"]
    return argv[argv.index("--kv-cache-dtype") + 1] if "--kv-cache-dtype" in argv else "auto"


@pytest.mark.parametrize(("version", "cid"), CASES)
def test_families_match_vllm_as_built(version: str, cid: str) -> None:
    """Exact where vLLM builds the model (the counter counted where FlashInfer serves a layer,
    :data:`COUNTERS`; none on H100), refused where vLLM refuses it."""
    row = RECORDED[version][cid]
    report = dryboot_weights(fc.CONFIGS, row, version, kv_cache_dtype=_kv(row))
    assert row["ok"] or ORACLE_NO_DRIVER not in row["error"], "recorded where the oracle could not build it"
    if not row["ok"]:
        assert report.refused, f"vLLM refuses ({row['error'][:160]}); dryboot answered"
        return
    if row["config"] == CLASS_DEFAULT_HEADS:
        # the text config leaves num_attention_heads to Gemma3nTextConfig (8): vLLM's counter holds 8 heads
        # (8,192 x 8 x 4 bytes over the walk's figure); the walk does not ask, so the figure is refused by name
        assert report.refused and "multi-CTA KV counter" in report.refused, report.refused
        # the walk's own figure: on H100 (FlashAttention, no counter)
        walked = dryboot_weights(fc.CONFIGS, {**row, "capability": [9, 0], "sm_count": 132}, version)
        assert row["built_allocated_bytes"] == walked.stages[0].allocated_bytes + 8192 * 8 * 4
        return
    if row["config"] == "Dots3NoteForCausalLM":
        # vLLM builds storages its attention impls hold outside the model (134,367,232 bytes on H100;
        # with CUTLASS-MLA's 128 MiB workspace on B200): refused by name wherever a GPU is named
        assert report.refused and "not modelled" in report.refused
        return
    assert not report.refused, report.refused
    assert report.stages[0].allocated_bytes == row["built_allocated_bytes"]
    counter = report.stages[0].by_kind.get("attention counter", 0)
    assert counter == (0 if row["gpu"] == "H100" else COUNTERS.get(row["config"], 0))

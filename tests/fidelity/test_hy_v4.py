"""HY V4 (``HYV4ForCausalLM``, vLLM 0.29.0-0.33.0's ``vllm/models/hy_v4``; every layer dense MLA on 0.29.0 /
0.30.0, whose transformers renames the sparse layer type to ``indexed_attention``) against each release's own engine
start on the tiny configs of ``hy_v4_cases.py`` (``record_hy_v4.py``, ``data/hy-v4/``): every
served case's block, groups, blocks, tokens, concurrency, group members and KV cache lines are
dryboot's; every refusal is the same refusal, or one dryboot makes by name where vLLM serves what
dryboot does not model (dense beside sparse layers, the sink-less fallback onto FlashInfer's
SM90 sparse kernels) or where the harness cannot build the MTP drafter."""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import Any

import pytest

sys.path.insert(0, str(Path(__file__).resolve().parent))

import e2e_harness as H
import hy_v4_cases as C

pytestmark = pytest.mark.fidelity

#: case -> the words of dryboot's refusal, where vLLM serves the case (or the harness cannot
#: build it) and dryboot refuses by name
#: cases whose weights (``model_executor/models/hy_v4.py``, byte-exact against vLLM's class on the
#: meta device) exceed the GPU: vLLM fails loading them before any KV sizing, which the meta-device
#: engine start cannot see, so dryboot logs no KV cache lines; the geometry is still compared
#: (the preview shape in bfloat16 at TP 8, 182.42 GiB a rank by the walk on a 178.35 GiB B200, was
#: here; MLA weights on SM 10.x are now refused by name (the MLA prefill backend's workspace:
#: ``loader.MLA_PREFILL_WORKSPACE_REFUSAL``), so dryboot plans its KV lines as the oracle does)
WEIGHTS_EXCEED_THE_GPU: set[tuple[str, str]] = set()
REFUSED_BY_NAME = {
    "mixed": "dense MLA layers beside sparse ones",
    # the meta-device harness cannot build HYV4MTP (no NVIDIA driver; 0.29.0 / 0.30.0 build it dense);
    # dryboot does not model it
    "sparse-mtp": "the MTP module of HYV4ForCausalLM (1 layers) is not modelled",
}
#: the cases of :data:`REFUSED_BY_NAME` planned on 0.29.0 / 0.30.0 (every layer dense MLA there); the
#: sparse-fp8-e4m3 case (vLLM drops the sinks, fp8_e4m3 being no FLASHMLA_SPARSE cache, and selects
#: FLASHINFER_MLA_SPARSE_SM90 from 0.31.0) is planned on every release (issue 33)
PLANNED_DENSE = frozenset({"mixed"})


def _case(tmp_path: Path, cid: str) -> H.Case:
    name, argv, gpu = C.CASES[cid]
    return H.Case(
        cid,
        "hy-v4",
        H._write_config(tmp_path, cid, C.config(name)),
        [*argv, *(["--gpu", gpu] if gpu else [])],
    )


def _kv_lines(lines: Any) -> set[str]:
    """The KV cache lines, each once (under pipeline parallelism every stage's worker logs its
    block-size line)."""
    return {str(m) for m in lines or () if not str(m).startswith("kv lcm")}


def _group_layers(case: H.Case, version: str) -> list[list[str]]:
    """dryboot's KV cache groups' member layers (``plan --json``); under pipeline parallelism
    stage 0's (what the record holds)."""
    from click.testing import CliRunner

    from dryboot.cli import cli

    res = CliRunner().invoke(cli, case.dryboot_argv(version), catch_exceptions=False)
    doc = json.loads(res.stdout)
    stage0 = set(doc["pipeline_stages"][0]) if doc.get("pipeline_stages") else None
    return [[n for n in g["layer_names"] if stage0 is None or n in stage0] for g in doc["grouping"]["groups"]]


@pytest.mark.parametrize("version", C.RELEASES)
def test_every_case_is_recorded(version: str) -> None:
    """33 cases a release: 29 served by vLLM, 4 refused (block 16 and an A100: no sparse MLA backend;
    the short indexer_types; the MTP drafter, which the harness cannot build); before 0.32.0 the
    ``indexed_attention`` config too (its transformers' layer-type validation)."""
    rec = C.recorded(version)
    assert sorted(rec) == sorted(C.CASES) and len(rec) == 33
    refused = sorted(c for c, r in rec.items() if not r["vllm"]["ok"])
    if version in C.DENSE_RELEASES:
        # every layer dense MLA: only a named sparse backend is refused (no sparse layer to serve)
        assert refused == ["sparse-backend-fa"]
        served = [r["vllm"] for r in rec.values() if r["vllm"]["ok"]]
        assert not [n for v in served for g in v["group_layers"] for n in g if "indexer" in n]
        return
    early = ["indexed"] if version not in ("0.32.0", "0.33.0") else []
    assert refused == [*early, "indexers-short", "sparse-a100", "sparse-block16", "sparse-mtp"]
    if early:
        assert "validate_layer_type" in rec["indexed"]["vllm"]["error"]


def test_the_sink_hands_the_sparse_layers_flashmla_sparse() -> None:
    """The learned sink changes the backend, not the geometry: on an H200 FLASHMLA_SPARSE with the
    sink, FLASH_ATTN_MLA_SPARSE without it (DeepSeek-V3.2's choice); on a B200 FLASHMLA_SPARSE and
    FLASHINFER_MLA_SPARSE; the same blocks each way."""
    rec = {c: r["vllm"] for c, r in C.recorded().items()}
    backend = {c: rec[c]["kv_log"][0] for c in ("sparse", "nosink", "sparse-b200", "nosink-b200")}
    assert "DEEPSEEK_V32_INDEXER/FLASHMLA_SPARSE backend" in backend["sparse"]
    assert "DEEPSEEK_V32_INDEXER/FLASH_ATTN_MLA_SPARSE backend" in backend["nosink"]
    assert "DEEPSEEK_V32_INDEXER/FLASHMLA_SPARSE backend" in backend["sparse-b200"]
    assert "DEEPSEEK_V32_INDEXER/FLASHINFER_MLA_SPARSE backend" in backend["nosink-b200"]
    assert rec["sparse"]["num_blocks"] == rec["nosink"]["num_blocks"] == rec["sparse-b200"]["num_blocks"]


def test_the_default_indexer_types_keep_21_of_78_indexers() -> None:
    """The Hy4-preview-shaped stand-in (every layer sparse, HYV4Config's indexer_types): indexer caches
    in layers 0 and 1, 5, ..., 77, one group of 78 + 21 layers."""
    layers = C.recorded()["preview-shape"]["vllm"]["group_layers"][0]
    indexed = [int(n.split(".")[2]) for n in layers if "indexer" in n]
    assert indexed == [0, *range(1, 78, 4)] and len(layers) == 78 + 21


def test_a_stage_of_shared_layers_logs_its_own_backend_line() -> None:
    """Two stages of hyv4-sparse: the second holds layers 2 and 3, both shared, so no indexer cache
    and its worker logs FLASHMLA_SPARSE alone; dryboot prints both stages' lines."""
    log = C.recorded()["sparse-pp2"]["vllm"]["kv_log"]
    assert "Setting kv cache block size to 64 for FLASHMLA_SPARSE backend(s)." in log
    assert "Setting kv cache block size to 64 for DEEPSEEK_V32_INDEXER/FLASHMLA_SPARSE backend(s)." in log


def test_without_the_sink_backend_the_sinks_are_dropped() -> None:
    """float16: FLASHMLA_SPARSE serves bfloat16 only, so the layers take DeepSeek-V3.2's selection."""
    log = C.recorded()["sparse-fp16"]["vllm"]["kv_log"]
    assert "DEEPSEEK_V32_INDEXER/FLASH_ATTN_MLA_SPARSE backend" in log[0]


def test_shared_layers_keep_no_indexer_cache() -> None:
    """indexer_types full, shared, shared, full, shared, full: indexer caches in layers 0, 3, 5 only."""
    layers = C.recorded()["indexers"]["vllm"]["group_layers"][0]
    assert [n for n in layers if "indexer" in n] == [f"model.layers.{i}.self_attn.indexer.k_cache" for i in (0, 3, 5)]
    assert len(layers) == 9


@pytest.mark.parametrize("version", C.RELEASES)
@pytest.mark.parametrize("cid", sorted(C.CASES))
def test_dryboot_plans_hy_v4_as_vllm(tmp_path: Path, cid: str, version: str) -> None:
    """Each recorded case: dryboot's figures, groups and their members, and the KV cache lines are
    the release's; its refusals are vLLM's, or by name (:data:`REFUSED_BY_NAME`)."""
    v = C.recorded(version)[cid]["vllm"]
    case = _case(tmp_path, cid)
    d = H.run_dryboot(case, version)
    if cid in REFUSED_BY_NAME and not (version in C.DENSE_RELEASES and cid in PLANNED_DENSE):
        assert d.get("refused") and REFUSED_BY_NAME[cid] in str(d["error"]), d
        return
    verdict = H.compare(v, d)
    assert verdict["agree"], verdict
    if not v["ok"]:
        assert verdict["same_refusal"], verdict
        return
    assert not verdict["diffs"] and v["final_block_size"] == d["block_size"]
    if (cid, version) in WEIGHTS_EXCEED_THE_GPU:
        assert not _kv_lines(d.get("log")), d.get("log")
    else:
        assert _kv_lines(v.get("kv_log")) == _kv_lines(d.get("log"))
    assert _group_layers(case, version) == v["group_layers"]

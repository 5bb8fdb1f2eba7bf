"""vLLM 0.33.0's GLM-5.3-Flash (``Glm5NextForCausalLM``) is planned (``models/glm5next.py``) and agrees
with vLLM's recorded engine start on its tiny stand-in configs (``record_glm5next.py``,
``data/glm5next/``): a Mamba group per KDA layer, an MLAAttention group of the kpool indexer's key
caches with the NoPE MLA rows, a CircularBuffer group of the tail rings, packed by repeat pattern
under the BLHNC layout; the block the smallest every backend (indexer, tail ring, sparse MLA)
addresses, grown by the hybrid alignment where the KDA state is larger; the pool's bytes per block
the widest group rounded up to lcm(one MLA row, one tail row, the indexer's page at its largest
kernel block). 0.32.0 builds that layout too; 0.30.0 and 0.31.0 build every layer as an indexed one
(one uniform-type group, the tail rings allocated as full attention), also planned and checked."""

from __future__ import annotations

import math
import sys
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).resolve().parent))

import e2e_harness as H
import glm5next_cases as C

from dryboot.vllm.models.glm5next import tail_ring
from dryboot.vllm.models.registry import LATER_ARCHITECTURES, NOT_MODELLED

pytestmark = pytest.mark.fidelity


def test_every_case_is_recorded() -> None:
    rec = C.recorded()
    assert list(rec) == list(C.CASES)
    for cid, r in rec.items():
        assert r["config"] == C.CASES[cid][0] and r["argv"] == C.CASES[cid][1], cid


@pytest.mark.parametrize("cid", ["flash", "flash-tp2", "flash-h100"])
def test_groups_are_kda_states_then_the_indexer_with_the_mla_rows_then_the_tail_ring(cid: str) -> None:
    v = C.recorded()[cid]["vllm"]
    assert v["block_size"] == 512 and v["num_blocks"] == 8112
    assert [g[0] for g in v["groups"]] == ["Mamba"] * 3 + ["MLAAttention", "CircularBuffer"]
    assert v["group_layers"][3] == ["model.layers.3.self_attn.indexer.k_cache", "model.layers.3.self_attn.attn"]
    assert any("DEEPSEEK_V32_INDEXER/KPOOL_TAIL/FLASHINFER_MLA_SPARSE_SM90" in line for line in v["kv_log"])


def test_pool_stride_is_the_mla_group_rounded_to_a_row() -> None:
    """4 x 2^30 / 8,112 blocks: the MLA group's 4,224 + 524,288 bytes at 512 tokens, rounded up to
    lcm(one 1,024-byte MLA row, one 512-byte tail row) = 529,408."""
    v = C.recorded()["flash"]["vllm"]
    stride = -(-(4224 + 512 * 1024) // math.lcm(1024, 512)) * 1024
    assert stride == 529_408 and (4 << 30) // stride == v["num_blocks"]


def test_tail_ring_grows_with_speculative_tokens() -> None:
    assert tail_ring(16, 0) == 16 and tail_ring(16, 1) == 32 and tail_ring(16, 3) == 32 and tail_ring(16, 17) == 64
    v = C.recorded()["flash-ngram"]["vllm"]
    assert ["CircularBuffer", 32, 16384, 1] in v["groups"]


def test_planned_on_0_30_to_0_33_and_no_longer_refused() -> None:
    assert "Glm5NextForCausalLM" not in NOT_MODELLED
    assert LATER_ARCHITECTURES["Glm5NextForCausalLM"] == ("0.30.0", "0.31.0", "0.32.0", "0.33.0")
    assert LATER_ARCHITECTURES["Glm5NextForConditionalGeneration"] == ("0.33.0",)


@pytest.mark.parametrize("cid", list(C.CASES))
def test_dryboot_agrees_with_the_engine_start(tmp_path: Path, cid: str) -> None:
    name, argv, gpu = C.CASES[cid]
    model = H._write_config(tmp_path, cid, C.config(name))
    case = H.Case(cid, "glm5next", model, [*argv, *(["--gpu", gpu] if gpu else [])])
    d = H.run_dryboot(case, C.VERSION)
    verdict = H.compare(C.recorded()[cid]["vllm"], d)
    assert verdict["agree"], (verdict["diffs"], d.get("error"))


def test_pipeline_stages_size_their_own_pools() -> None:
    """PP 2 of ``flash-8``: each stage's worker holds 3 KDA layers and one indexed layer; its stride is its
    MLA group (12,672 + 1,572,864 bytes at 1,536 tokens) rounded up to lcm(1,024-byte row, the indexer's
    512-token page of 4,224 bytes, 512-byte tail row) = 33,792: 1,588,224 bytes, 2,704 blocks of 4 GiB."""
    v = C.recorded()["flash-8-pp2"]["vllm"]
    align = math.lcm(1024, 32 * 132, 512)
    stride = -(-(12672 + 1536 * 1024) // align) * align
    assert align == 33792 and stride == 1_588_224 and (4 << 30) // stride == v["num_blocks"] == 2704


@pytest.mark.parametrize("cid", list(C.cases_for("0.32.0")))
def test_dryboot_agrees_with_0_32s_engine_start(tmp_path: Path, cid: str) -> None:
    """0.32.0 builds the layout 0.33.0 does (its engine start with the indexer's DeepGEMM check answered as a
    CUDA box's: the boot environment cannot load the wheel's vendored DeepGEMM, a GPU box can)."""
    name, argv, gpu = C.CASES[cid]
    model = H._write_config(tmp_path, cid, C.config(name))
    case = H.Case(cid, "glm5next", model, [*argv, *(["--gpu", gpu] if gpu else [])])
    verdict = H.compare(C.recorded("0.32.0")[cid]["vllm"], H.run_dryboot(case, "0.32.0"))
    assert verdict["agree"], verdict["diffs"]


#: the cases dryboot refuses by name on 0.30.0 / 0.31.0 where vLLM serves them (none: ``defaults``, which
#: leaves ``index_topk`` to those releases' config class, is planned as their dense MLA)
REFUSED_BY_NAME: dict[str, str] = {}
ALL_INDEXED = [(v, cid) for v in ("0.30.0", "0.31.0") for cid in C.cases_for(v)]


def test_every_layer_indexed_on_0_30_and_0_31() -> None:
    """0.30.0 and 0.31.0 build every layer of ``flash`` (three KDA layers and one indexed by 0.33.0's
    default ``layer_types``) as an indexed one: one uniform-type group of each layer's indexer key cache,
    its tail ring allocated as full attention and its MLA rows, at the block the KDA state and the kpool
    alignment set (512 tokens): 4 x (4,224 + 262,144 + 524,288) = 3,162,624 bytes a block, 1,358 blocks of
    4 GiB (recorded)."""
    for version in ("0.30.0", "0.31.0"):
        rec = C.recorded(version)
        assert list(rec) == list(C.cases_for(version))
        v = rec["flash"]["vllm"]
        assert v["groups"] == [["MLAAttention", 512, 4224, 12]]
        assert "model.layers.0.self_attn.indexer.tail_cache" in v["group_layers"][0]
        assert not any("DeepGEMM" in str(r["vllm"].get("error")) for r in rec.values())
        assert (4 << 30) // (4 * (512 // 16 * 132 + 512 * 2 * 128 * 2 + 512 * 1024)) == v["num_blocks"] == 1358


@pytest.mark.parametrize("version", ["0.30.0", "0.31.0"])
def test_defaults_are_dense_mla_on_0_30_and_0_31(version: str) -> None:
    """``defaults`` leaves ``index_topk`` to 0.30.0 / 0.31.0's config class (``None``): 45 dense MLA layers on
    FLASH_ATTN_MLA, no indexer or tail ring; the 64-head KDA state (4,341,760 bytes at TP 1: 64 x 128 x 128
    float32 and the three convs' 3 x 64 x 128 x 3 bfloat16) sizes the block to 128 x cdiv(state, 128 x 1,024)
    = 4,352 tokens (1,152 at TP 4), the 128 tokens the hybrid MLA alignment and the default kpool of 4's
    4 x 32 agree on: 8 GiB / (45 x 4,352 x 1,024 bytes) = 42 blocks (recorded)."""
    rec = C.recorded(version)
    v, v4 = rec["defaults"]["vllm"], rec["defaults-tp4"]["vllm"]
    assert v["groups"] == [["MLAAttention", 4352, 4352 * 1024, 45]]
    assert v4["groups"] == [["MLAAttention", 1152, 1152 * 1024, 45]]
    assert not any("indexer" in n for n in v["group_layers"][0])
    state = 64 * 128 * 128 * 4 + 3 * 64 * 128 * 3 * 2
    assert 128 * -(-state // (128 * 1024)) == 4352 and 128 * -(-(state // 4) // (128 * 1024)) == 1152
    assert (8 << 30) // (45 * 4352 * 1024) == v["num_blocks"] == 42


DENSE = [(v, cid) for v in C.DENSE_RELEASES for cid in C.DENSE_CASES]


@pytest.mark.parametrize(("version", "cid"), DENSE)
def test_dense_defaults_agree_under_more_flags(tmp_path: Path, version: str, cid: str) -> None:
    """The dense MLA reading of ``defaults`` on 0.30.0 / 0.31.0 under PP 2, TP 2 x PP 2 and without prefix
    caching (``data/glm5next/dense-<release>.json``): each stage sizes its own pool (23 layers on stage 0:
    83 blocks of 4,352 tokens at PP 2)."""
    assert list(C.dense_recorded(version)) == list(C.DENSE_CASES)
    name, argv, _ = C.DENSE_CASES[cid]
    model = H._write_config(tmp_path, cid, C.config(name))
    d = H.run_dryboot(H.Case(cid, "glm5next", model, argv), version)
    verdict = H.compare(C.dense_recorded(version)[cid]["vllm"], d)
    assert verdict["agree"], (verdict["diffs"], d.get("error"))


@pytest.mark.parametrize(("version", "cid"), ALL_INDEXED)
def test_dryboot_agrees_with_0_30s_and_0_31s_engine_start(tmp_path: Path, version: str, cid: str) -> None:
    """Every recorded case of 0.30.0 and 0.31.0 agrees (served or refused alike), but
    :data:`REFUSED_BY_NAME`, which dryboot refuses by name."""
    name, argv, gpu = C.CASES[cid]
    model = H._write_config(tmp_path, cid, C.config(name))
    d = H.run_dryboot(H.Case(cid, "glm5next", model, [*argv, *(["--gpu", gpu] if gpu else [])]), version)
    if cid in REFUSED_BY_NAME:
        assert d.get("refused") and REFUSED_BY_NAME[cid] in str(d["error"]), d
        return
    verdict = H.compare(C.recorded(version)[cid]["vllm"], d)
    assert verdict["agree"], (verdict["diffs"], d.get("error"))


def test_group_members_on_0_30_are_vllms(tmp_path: Path) -> None:
    """0.30.0's one group: each layer's indexer key cache, tail ring and MLA rows, in vLLM's order."""
    name, argv, _ = C.CASES["flash"]
    case = H.Case("flash", "glm5next", H._write_config(tmp_path, "flash", C.config(name)), argv)
    assert _group_layers(case, "0.30.0") == C.recorded("0.30.0")["flash"]["vllm"]["group_layers"]


def _group_layers(case: H.Case, version: str = C.VERSION) -> list[list[str]]:
    """dryboot's KV cache groups' member layers (``plan --json``), in its group order; under pipeline
    parallelism stage 0's of each (what the record holds)."""
    import json

    from click.testing import CliRunner

    from dryboot.cli import cli

    res = CliRunner().invoke(cli, case.dryboot_argv(version), catch_exceptions=False)
    doc = json.loads(res.stdout)
    stage0 = set(doc["pipeline_stages"][0]) if doc.get("pipeline_stages") else None
    return [[n for n in g["layer_names"] if stage0 is None or n in stage0] for g in doc["grouping"]["groups"]]


@pytest.mark.parametrize("cid", ["flash", "flash-8", "flash-8-pp2", "flash-layers", "flash-hidden", "flash-b200"])
def test_group_members_are_vllms(tmp_path: Path, cid: str) -> None:
    """The groups' members, in vLLM's order: the KDA layers one a group, each indexed layer's k_cache before
    its MLA rows, the tail rings."""
    name, argv, gpu = C.CASES[cid]
    model = H._write_config(tmp_path, cid, C.config(name))
    case = H.Case(cid, "glm5next", model, [*argv, *(["--gpu", gpu] if gpu else [])])
    assert _group_layers(case) == C.recorded()[cid]["vllm"]["group_layers"]


KDA_PP = [(v, cid) for v in C.KDA_PP_RELEASES for cid in C.KDA_PP_CASES]


@pytest.mark.parametrize(("version", "cid"), KDA_PP)
def test_kda_beside_indexed_layers_under_pipeline_parallelism(tmp_path: Path, version: str, cid: str) -> None:
    """``flash-layers`` (KDA layers beside indexed ones) at a block of 1,024 / 2,048 tokens under PP 2 / 3 / 4
    (``data/glm5next/kdapp-<release>.json``): on 0.30.0 each stage's worker holds its decoder layers' caches, the
    KDA groups counted over every stage (``_pp_balanced_mamba_group_count``: at least ``cdiv(KDA, MLA)`` of each
    stage) and dealt round-robin over every KDA layer; a stage of KDA layers only declares every layout, the
    others the indexed layers' one (PP 3 / 4: vLLM's AssertionError). 0.31.0's config class refuses the
    ``layer_types``."""
    assert list(C.kdapp_recorded(version)) == list(C.KDA_PP_CASES)
    name, argv, _ = C.KDA_PP_CASES[cid]
    model = H._write_config(tmp_path, cid, C.config(name))
    d = H.run_dryboot(H.Case(cid, "glm5next", model, argv), version)
    verdict = H.compare(C.kdapp_recorded(version)[cid]["vllm"], d)
    assert verdict["agree"], (verdict["diffs"], d.get("error"))

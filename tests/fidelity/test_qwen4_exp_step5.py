"""vLLM 0.33.0's Qwen4-Exp and Step5 against their recorded engine starts on tiny configs
(``record_qwen4_exp_step5.py``, ``data/refused-0.33/``). Qwen4-Exp's plain layout is planned on
0.29.0-0.33.0 and its QSA layers on 0.33.0 (a layer's index-key ring and compressed keys: a
CircularBuffer and an MLAAttention group, 0.33.0's repeat-pattern packing), both checked here; its
PLE layers are refused by name (their n-gram embedding the harness cannot build); Step5's DSA layers
keep summary caches and tail rings (the harness stands in for their FlashInfer workspace). Qwen4-Exp
is in the registries of 0.29.0-0.32.0 too: its cases are recorded there (0.29-0.31 read the config
with vLLM's own class, which refuses QSA layers unless ``indexer_budget / indexer_compress_ratio``
is 512 or 2048; 0.29.0 builds the PLE layers)."""

from __future__ import annotations

import math
import sys
from collections.abc import Callable
from pathlib import Path

import pytest

from dryboot.vllm.versions import VersionRules

sys.path.insert(0, str(Path(__file__).resolve().parent))

import e2e_harness as H
import qwen4_exp_step5_cases as Q

from dryboot.vllm.models.qwen4_exp import QSA_RELEASES
from dryboot.vllm.models.registry import NOT_MODELLED, QWEN4_EXP_LAYERS

RELEASES = (*Q.EARLIER, Q.VERSION)
#: the words on Qwen4-Exp's QSA and PLE layers (registry ``QWEN4_EXP_LAYERS``); the plain layout
#: (text model and wrapper), its QSA and PLE layers are planned
QWEN4_EXP = QWEN4_EXP_LAYERS
#: the releases reading Qwen4-Exp's config with vLLM's own Qwen4ExpTextConfig (qwen4_exp/config.py)
OWN_CONFIG_CLASS = ("0.29.0", "0.30.0", "0.31.0")


@pytest.mark.parametrize("version", RELEASES)
def test_every_case_is_recorded(version: str) -> None:
    rec = Q.recorded(version)
    assert set(rec) == set(Q.cases_for(version))
    for cid, (name, argv) in Q.cases_for(version).items():
        assert rec[cid]["config"] == name and rec[cid]["argv"] == argv, cid


@pytest.mark.parametrize("version", RELEASES)
def test_qsa_layers_group_alike_on_every_release(version: str) -> None:
    """The QSA layout every release accepts (budget / ratio = 512): a CircularBuffer group and an
    MLAAttention group beside the Mamba groups, on each release whose registry lists Qwen4-Exp."""
    v = Q.recorded(version)["qwen4-qsa-512"]["vllm"]
    assert v["ok"]
    assert {g[0] for g in v["groups"]} == {"Mamba", "CircularBuffer", "MLAAttention"}
    layers = [name for group in v["group_layers"] for name in group]
    assert any(n.endswith("indexer.raw_key_cache") for n in layers)
    assert any(n.endswith("indexer.compressed_key_cache") for n in layers)
    assert f"vLLM {RELEASES[0]}-{Q.VERSION} group" in QWEN4_EXP


@pytest.mark.parametrize("version", OWN_CONFIG_CLASS)
def test_own_config_class_refuses_other_qsa_budgets(version: str) -> None:
    rec = Q.recorded(version)
    for cid in ("qwen4-qsa", "qwen4-qsa-mtp", "qwen4-vl-qsa"):
        v = rec[cid]["vllm"]
        assert not v.get("ok") and v["stage"] == "config", cid
        assert "indexer_budget / indexer_compress_ratio to be 512 or 2048, got 64" in v["error"], cid
    assert "unless indexer_budget / indexer_compress_ratio is 512 or 2048" in QWEN4_EXP


def test_qsa_layers_add_a_circular_buffer_and_an_mla_group() -> None:
    """A QSA layer's caches: a CircularBuffer group (the raw index keys) and an MLAAttention group
    (the compressed keys with the layer's own KV), beside the Gated DeltaNet layers' Mamba groups
    (planned on 0.33.0: :func:`test_dryboot_plans_qsa_layers_as_vllm`)."""
    v = Q.recorded()["qwen4-qsa"]["vllm"]
    assert v["ok"]
    kinds = {g[0] for g in v["groups"]}
    assert kinds == {"Mamba", "CircularBuffer", "MLAAttention"}
    layers = [name for group in v["group_layers"] for name in group]
    assert any(n.endswith("indexer.raw_key_cache") for n in layers)
    assert any(n.endswith("indexer.compressed_key_cache") for n in layers)
    for words in ("CircularBufferSpec", "MLAAttentionSpec", "CircularBuffer group", "MLAAttention group"):
        assert words in QWEN4_EXP


@pytest.mark.parametrize("version", RELEASES[1:])
@pytest.mark.parametrize("cid", ["qwen4-qsa-ple", "qwen4-ple"])
def test_ple_layers_are_not_built_by_the_harness(cid: str, version: str) -> None:
    rec = Q.recorded(version)
    if version in OWN_CONFIG_CLASS and cid == "qwen4-qsa-ple":
        # the QSA budget of that config is refused first
        assert "512 or 2048" in rec[cid]["vllm"]["error"]
        return
    v = rec[cid]["vllm"]
    assert not v.get("ok") and v["stage"] == "model"
    assert "Engram CPU offload requires UVA support" in v["error"]
    assert "Engram CPU offload requires UVA" in QWEN4_EXP
    no_offload = rec[f"{cid}-no-offload"]["vllm"]
    # the harness stands in the Engram tensor-parallel group: without the offload the PLE layer's
    # state is a Mamba group of its own (planned: test_qwen4_ple.py, test_dryboot_plans_qsa_and_ple_layers_as_vllm)
    assert no_offload["ok"] and ["model.layers.1.ple"] in no_offload["group_layers"]


def test_ple_layers_on_0_29_add_a_mamba_group() -> None:
    """0.29.0 builds the PLE layers (no Engram offload, no --engram-config): their short-conv
    state is a Mamba group beside the Gated DeltaNet layers' (four, where the plain layout has three)."""
    rec = Q.recorded("0.29.0")
    ple, plain = rec["qwen4-ple"]["vllm"], rec["qwen4-plain"]["vllm"]
    assert ple["ok"] and plain["ok"]
    mamba = [sum(g[0] == "Mamba" for g in v["groups"]) for v in (ple, plain)]
    assert mamba == [4, 3]
    assert "unrecognized arguments: --engram-config" in rec["qwen4-ple-no-offload"]["vllm"]["error"]
    assert "a Mamba group of its own on 0.29.0" in QWEN4_EXP


#: the Step5 cases vLLM serves with sparse_config enabled (the harness stands in for the DSA
#: layers' FlashInfer workspace): case id -> (KV heads per rank, KV bytes per element)
STEP5_SERVED = {
    "step5-sparse": (2, 2),
    "step5-vl": (2, 2),
    "step5-sparse-len2048": (2, 2),
    "step5-sparse-len5000": (2, 2),
    "step5-sparse-batched2048": (2, 2),
    "step5-sparse-block32": (2, 2),
    "step5-sparse-block64": (2, 2),
    "step5-sparse-tp2": (1, 2),
    "step5-sparse-fp8": (2, 1),
    "step5-sparse-mix": (2, 2),
    "step5-sparse-all-full": (2, 2),
    "step5-sparse-g4": (4, 2),
    "step5-sparse-g4-tp2": (2, 2),
    "step5-sparse-g4-tp4": (1, 2),
}


def _memory(argv: list[str]) -> int:
    value = argv[argv.index("--kv-cache-memory-bytes") + 1]
    return int(value[:-1]) << 30


@pytest.mark.parametrize("cid", sorted(STEP5_SERVED))
def test_step5_dsa_layers_group_as_the_reason_says(cid: str) -> None:
    """Each DSA layer's summary cache joins the DSA layers' FullAttention group and its tail ring
    a CircularBuffer group; every group's page is one KV page (heads x 192 x K and V x bytes a token)."""
    v = Q.recorded()[cid]["vllm"]
    assert v["ok"], v
    heads, nbytes = STEP5_SERVED[cid]
    block = v["block_size"]
    for (kind, group_block, page, n), names in zip(v["groups"], v["group_layers"], strict=True):
        assert group_block == block and page == block * heads * 192 * 2 * nbytes and n == len(names)
        if kind == "FullAttention":
            dsa = [x for x in names if x.endswith("self_attn.attn")]
            assert sorted(names) == sorted([*dsa, *(f"{x}.sparse_summary_cache" for x in dsa)])
        elif kind == "CircularBuffer":
            assert all(x.endswith("self_attn.attn.csa_tail_ring") for x in names)
        else:
            assert kind == "SlidingWindow"


@pytest.mark.parametrize("cid", sorted(STEP5_SERVED))
def test_step5_pool_block_is_the_largest_group_rounded_to_eight_tokens(cid: str) -> None:
    """The recorded blocks are the memory over one pool block: the largest group's pages summed (a
    summary page block / 8 x 256 bytes), rounded up to lcm(8 tokens' KV bytes, the ring's 1 KiB rows)
    (vLLM 0.33.0's ``_get_kv_cache_bytes_per_block`` in the BLNHC layout)."""
    rec = Q.recorded()[cid]
    v = rec["vllm"]
    block = v["block_size"]
    sums = []
    for (_kind, _, page, _n), names in zip(v["groups"], v["group_layers"], strict=True):
        summaries = sum(x.endswith("sparse_summary_cache") for x in names)
        sums.append((len(names) - summaries) * page + summaries * block // 8 * 256)
    align = math.lcm(8 * v["groups"][0][2] // block, 1024)
    per_block = -(-max(sums) // align) * align
    assert v["num_blocks"] == _memory(rec["argv"]) // per_block


def test_step5_tail_ring_takes_one_block_a_request() -> None:
    """The blocks a request takes (blocks over concurrency): the disabled layout's plus one for the
    ring group (the sliding and full groups alike); every layer full: 512 + 1."""
    rec = Q.recorded()

    def per_request(cid: str) -> float:
        v = rec[cid]["vllm"]
        return round(v["num_blocks"] / v["concurrency"], 6)

    assert per_request("step5-sparse") == per_request("step5-sparse-off") + 1
    assert per_request("step5-sparse-all-full") == 8192 // 16 + 1


def test_step5_refusals_recorded() -> None:
    """What vLLM 0.33.0 refuses of Step5: a head size other than 192 (the DSA kernels), a KV page
    under the tail ring's 7 rows of 1 KiB (fp8 at TP 2, 16-token blocks: 6144 bytes)."""
    rec = Q.recorded()
    assert "Step5 DSA kernels require head_size 192, got 128" in rec["step5-sparse-hd128"]["vllm"]["error"]
    assert "needs 7 rows of 1024 bytes in one 6144-byte KV page" in rec["step5-sparse-fp8-tp2"]["vllm"]["error"]
    # the drafter: the V2 runner compares its lm_head with the target's weights (meta tensors here)
    assert "aten::equal" in rec["step5-sparse-mtp"]["vllm"]["error"]
    assert "torch.equal" in NOT_MODELLED["Step5MTP"]


def test_step5_without_sparse_layers_is_served() -> None:
    """``sparse_config`` disabled: plain sliding-window and full-attention layers,
    ``num_attention_groups`` KV heads of ``head_dim`` (2 x 192 bf16: 768 bytes a token)."""
    v = Q.recorded()["step5-sparse-off"]["vllm"]
    assert v["ok"]
    assert [g[0] for g in v["groups"]] == ["SlidingWindow", "FullAttention"]
    assert all(g[2] == g[1] * 2 * 2 * 192 * 2 for g in v["groups"])


#: Step5's text model, planned on 0.33.0 (``models/step5.py``, ``kv_cache_utils/repeat_packed.py``)
PLANNED_STEP5 = ("Step5ForCausalLM",)
#: its multimodal wrapper, planned through its text rules (test_dryboot_plans_step5_vl_as_vllm)
STEP5_VL = "Step5ForConditionalGeneration"
#: its recorded flag sets (every config whose architecture is Step5ForCausalLM)
STEP5_CASES = sorted(c for c, (name, _) in Q.CASES.items() if Q.config(name)["architectures"][0] in PLANNED_STEP5)


#: the plain Qwen4-Exp configs (no QSA, no PLE layers): dryboot plans them (``models/qwen4_exp.py``)
PLAIN = ("qwen4-plain", "qwen4-plain-interval", "qwen4-vl-plain")
#: the Qwen4-Exp text configs dryboot refuses in its family, each with the words naming the layers
REFUSED_LAYERS = {
    "qwen4-ple": "PLE layers",
}
#: QSA and PLE layers together (planned; ``test_dryboot_plans_qsa_and_ple_layers_as_vllm``)
QSA_PLE = ("qwen4-qsa-ple", "qwen4-qsa-512-ple")
#: the QSA configs without PLE layers: planned on 0.33.0 (``models/qwen4_exp.py`` on 0.33.0's
#: repeat-pattern packing), each case checked against every release's record
QSA = (
    "qwen4-qsa",
    "qwen4-qsa-512",
    "qwen4-qsa-mtp",
    "qwen4-qsa-512-mtp",
    "qwen4-vl-qsa",
    "qwen4-qsa-ratio8",
    "qwen4-vl-qsa-mrope",
    "qwen4-qsa-ratio128",
)


#: configs planned on a release beside the plain layout: the PLE layers on 0.29.0-0.33.0 (checked against
#: vLLM in test_qwen4_ple.py; here the oracle could not build them: the n-gram table's CPU offload
#: needs UVA, and before the harness stood in the Engram group, neither could it without)
#: GLM-5.3-Flash on 0.33.0: planned (models/glm5next.py; test_glm5next.py)
PLANNED_ON = {v: ("qwen4-ple",) for v in ("0.29.0", "0.30.0", "0.31.0", "0.32.0")}
PLANNED_ON["0.33.0"] = ("qwen4-ple", "glm53-flash")


def _dryboot(tmp_path: Path, name: str, argv: list[str], version: str) -> dict[str, object]:
    case = H.Case(name, "refused-0.33", H._write_config(tmp_path, name, Q.config(name)), argv)
    return H.run_dryboot(case, version)


@pytest.mark.parametrize(
    ("version", "cid"),
    [
        (v, c)
        for v in RELEASES
        for c, (name, argv) in Q.cases_for(v).items()
        # 0.29.0 lacks --engram-config: its ratio-512 cases run without it
        if name in QSA_PLE and (("--engram-config" in argv) != (v == Q.NO_ENGRAM))
    ],
)
def test_dryboot_plans_qsa_and_ple_layers_as_vllm(tmp_path: Path, version: str, cid: str) -> None:
    """QSA and PLE layers in one model (the n-gram table's CPU offload off where the release has
    ``--engram-config``; dryboot does not take the flag, no cache reads it): vLLM 0.32.0 / 0.33.0
    serve the ratio-64 config and every release the ratio-512 one (0.29-0.31's own config class
    refuses the 64, in vLLM's words in dryboot too); the PLE state's own group comes after the
    Gated DeltaNet states' (a TP-replicated ``MambaSpec`` is not uniform with them)."""
    name, argv = Q.cases_for(version)[cid]
    v = Q.recorded(version)[cid]["vllm"]
    argv = [a for a in argv if a not in Q.NO_OFFLOAD[len(Q.BASE) :]]
    case = H.Case(cid, "refused-0.33", H._write_config(tmp_path, cid, Q.config(name)), argv)
    d = H.run_dryboot(case, version)
    verdict = H.compare(v, d)
    if not v["ok"]:
        assert verdict["agree"] and d.get("refused") and verdict["same_refusal"], verdict
        return
    diffs = {k: pair for k, pair in verdict["diffs"].items() if pair[0] is not None}
    if v["final_block_size"] != v["block_size"]:  # 0.29.0: the engine block ends on the ring's
        diffs.pop("block_size", None)
    assert not diffs and v["final_block_size"] == d["block_size"], verdict
    assert _group_layers(case, version) == v["group_layers"]


@pytest.mark.parametrize(
    ("version", "name"),
    [
        (v, name)
        for v in RELEASES
        for name in sorted({name for name, _ in Q.cases_for(v).values()})
        if name not in (*PLAIN, *QSA, *QSA_PLE) and Q.config(name)["architectures"][0] not in (*PLANNED_STEP5, STEP5_VL)
    ],
)
def test_dryboot_refuses_every_other_config_by_name(tmp_path: Path, version: str, name: str) -> None:
    """Every config but the plain layout's is refused: Qwen4-Exp's text model by the QSA or PLE
    layers it has (named), the other architectures by their reason. dryboot has no
    ``--engram-config``: the configs are planned under the base flags."""
    arch = Q.config(name)["architectures"][0]
    out = _dryboot(tmp_path, name, Q.BASE, version)
    if name in PLANNED_ON.get(version, ()):
        assert not out.get("refused"), out
        return
    assert out.get("refused"), out
    if arch in ("Qwen4ExpForCausalLM", "Qwen4ExpForConditionalGeneration"):
        assert REFUSED_LAYERS[name] in str(out["error"]) and "is not modelled" not in str(out["error"])[:40]
        return
    assert f"architectures: {arch} is not modelled by dryboot" in str(out["error"])
    assert NOT_MODELLED[arch] in str(out["error"])


@pytest.mark.parametrize("version", RELEASES)
@pytest.mark.parametrize("cid", [c for c, (name, _) in Q.CASES.items() if name in PLAIN])
def test_dryboot_plans_the_plain_layout_as_vllm(tmp_path: Path, version: str, cid: str) -> None:
    """The plain layout (no QSA, no PLE layers), which vLLM serves on every release: dryboot's
    groups, block and blocks are vLLM's (the interval config: every 4th layer attention on 0.29-0.31,
    every 2nd from 0.32)."""
    name, argv = Q.CASES[cid]
    v = Q.recorded(version)[cid]["vllm"]
    assert v["ok"], v
    verdict = H.compare(v, _dryboot(tmp_path, name, argv, version))
    # these records keep the block, the groups and the blocks (not tokens, concurrency, length)
    diffs = {k: pair for k, pair in verdict["diffs"].items() if pair[0] is not None}
    assert not diffs and {"block_size", "groups", "group_layers", "num_blocks"} <= set(v), verdict


#: (release, case) where both refuse at the config stage, each naming another check: vLLM 0.29.0's
#: to 0.31.0's own config class refuses the budget (ModelConfig) before the DCP / TP check
#: (VllmConfig), which dryboot makes first
QSA_OTHER_ORDER = {("0.29.0", "qwen4-qsa-dcp2"), ("0.30.0", "qwen4-qsa-dcp2"), ("0.31.0", "qwen4-qsa-dcp2")}


@pytest.mark.parametrize(
    ("version", "cid"), [(v, c) for v in RELEASES for c, (name, _) in Q.cases_for(v).items() if name in QSA]
)
def test_dryboot_plans_qsa_layers_as_vllm(tmp_path: Path, version: str, cid: str) -> None:
    """Every recorded QSA flag set: on 0.32.0 and 0.33.0 dryboot's block, groups (kind, block, page, layers),
    blocks, tokens, concurrency and max length are vLLM's, its group members too (TP 1-4, fp8,
    blocks, lengths, auto-fit, no prefix caching, n-gram drafting, the wrapper); what vLLM refuses
    dryboot refuses (0.29-0.31's own config class on the budget in vLLM's words; two pipeline
    stages by vLLM's words); the MTP drafter and the releases before 0.32.0 by name."""
    name, argv = Q.CASES[cid]
    v = Q.recorded(version)[cid]["vllm"]
    case = H.Case(cid, "refused-0.33", H._write_config(tmp_path, cid, Q.config(name)), argv)
    d = H.run_dryboot(case, version)
    if "mtp" in cid:
        assert d.get("refused") and "MTP drafter (Qwen4ExpMTP" in str(d["error"]), d
        return
    if version not in QSA_RELEASES and v.get("ok"):
        assert d.get("refused") and f"QSA layers on vLLM {version} are not modelled" in str(d["error"]), d
        return
    verdict = H.compare(v, d)
    if (version, cid) in QSA_OTHER_ORDER:
        assert not v["ok"] and d.get("refused"), (v, d)
        return
    if not v["ok"]:
        assert verdict["agree"] and d.get("refused") and verdict["same_refusal"], verdict
        return
    assert not d.get("refused"), d
    # the first records (0.29.0-0.32.0) keep the block, the groups and the blocks only
    diffs = {k: pair for k, pair in verdict["diffs"].items() if pair[0] is not None}
    if v.get("final_block_size", v["block_size"]) != v["block_size"]:
        # 0.29.0: the engine's block ends on every group's smallest, the ring's (dryboot's block_size);
        # vLLM's recorded block_size is the cache block it set first (dryboot's hybrid-block log line)
        diffs.pop("block_size", None)
    assert not diffs, verdict
    assert v.get("final_block_size", v["block_size"]) == d["block_size"]
    assert _group_layers(case) == v["group_layers"]


@pytest.mark.parametrize(("gpu", "cid"), [(g, c) for g in Q.QSA_GPUS for c in Q.QSA_GPU_CASES])
def test_dryboot_plans_qsa_layers_on_other_gpus(tmp_path: Path, gpu: str, cid: str) -> None:
    """The QSA cases recorded as other GPUs (``data/refused-0.33/qsa-gpus-0.33.0.json``): off SM90
    the Gated DeltaNet prefill keeps no checkpoint page and the hybrid block differs (48 tokens,
    80 under fp8); dryboot's figures and group members are vLLM's on each."""
    name, argv = Q.CASES[cid]
    rec = Q.gpu_recorded()[gpu][cid]
    assert rec["argv"] == argv
    v = rec["vllm"]
    case = H.Case(cid, "refused-0.33", H._write_config(tmp_path, cid, Q.config(name)), [*argv, "--gpu", gpu])
    d = H.run_dryboot(case, Q.VERSION)
    verdict = H.compare(v, d)
    assert verdict["agree"] and not verdict["diffs"], verdict
    assert v["final_block_size"] == d["block_size"]
    assert _group_layers(case) == v["group_layers"]


@pytest.mark.parametrize("cid", ["glm53-flash", "glm53-flash-tp2"])
def test_glm53_caches_group_as_dryboot_plans_them(tmp_path: Path, cid: str) -> None:
    """GLM-5.3-Flash's tiny stand-in (no published config found): vLLM 0.33.0 serves it with KDA Mamba
    groups, the kpool indexer's k_cache with the MLA KV, the tail buffer as a CircularBuffer group,
    block 512; 4G / 8,112 blocks: a 529,408-byte stride (the 528,512 bytes of the widest group rounded
    up to 1024). dryboot plans it now (models/glm5next.py; its own cases: test_glm5next.py)."""
    v = Q.recorded()[cid]["vllm"]
    assert v["ok"] and v["block_size"] == 512
    assert [g[0] for g in v["groups"]] == ["Mamba"] * 3 + ["MLAAttention", "CircularBuffer"]
    assert v["group_layers"][3] == ["model.layers.3.self_attn.indexer.k_cache", "model.layers.3.self_attn.attn"]
    assert v["group_layers"][4] == ["model.layers.3.self_attn.indexer.tail_cache"]
    assert 4 * 2**30 // 529_408 == v["num_blocks"] == 8112
    assert "Glm5NextForCausalLM" not in NOT_MODELLED
    name, argv = Q.CASES[cid]
    d = H.run_dryboot(H.Case(cid, "refused-0.33", H._write_config(tmp_path, cid, Q.config(name)), argv), Q.VERSION)
    verdict = H.compare(v, d)
    assert verdict["agree"], verdict


def _scheduler_blocks() -> list[tuple[str, str, list[int]]]:
    import json

    doc = json.loads((Q.DATA / "qsa-scheduler-blocks.json").read_text())
    return [(v, c, blocks) for v, cases in doc.items() for c, blocks in cases.items() if blocks[0] is not None]


@pytest.mark.parametrize(("version", "cid", "blocks"), _scheduler_blocks())
def test_qsa_scheduler_and_hash_blocks(tmp_path: Path, version: str, cid: str, blocks: list[int]) -> None:
    """The scheduler's and the hash block are the lcm of every group's block
    (``record_qsa_scheduler_blocks.py``): without prefix caching the Mamba groups keep
    max_model_len tokens a block, so lcm(8192, 4, 48) = 24,576."""
    import json

    from click.testing import CliRunner

    from dryboot.cli import cli

    name, argv = Q.CASES[cid]
    case = H.Case(cid, "refused-0.33", H._write_config(tmp_path, cid, Q.config(name)), argv)
    res = CliRunner().invoke(cli, case.dryboot_argv(version), catch_exceptions=False)
    doc = json.loads(res.stdout)
    assert [doc["scheduler_block_size"], doc["hash_block_size"], doc["block_size"]] == blocks


def test_qsa_releases_are_the_recorded_ones() -> None:
    assert set(QSA_RELEASES) == set(Q.QSA_PLANNED) == set(Q.QSA_RELEASES)


def test_engine_block_switch_is_needed(tmp_path: Path, flip_rules: Callable[..., VersionRules]) -> None:
    """``VersionRules.engine_block_all_groups`` flipped on 0.29.0, dryboot's block is the cache block (48),
    not the ring's (4) the engine ends on."""
    name, argv = Q.CASES["qwen4-qsa-512"]
    v = Q.recorded("0.29.0")["qwen4-qsa-512"]["vllm"]
    case = H.Case("qwen4-qsa-512", "refused-0.33", H._write_config(tmp_path, name, Q.config(name)), argv)
    assert H.run_dryboot(case, "0.29.0")["block_size"] == v["final_block_size"] == 4
    flip_rules("0.29.0", engine_block_all_groups=False)
    assert H.run_dryboot(case, "0.29.0")["block_size"] == 48


def test_qsa_on_0_29_ends_on_the_ring_block() -> None:
    """0.29.0's engine block is every group's smallest, the ring's included (no prefix-caching
    opt-out before 0.30: ``VersionRules.engine_block_all_groups``); the cache block stays 48."""
    v = Q.recorded("0.29.0")["qwen4-qsa-512-len2048"]["vllm"]
    assert v["block_size"] == 48 and v["final_block_size"] == 4


def test_qsa_cases_cover_the_flags() -> None:
    """28 flag sets beside the base ones; vLLM 0.33.0 refuses two pipeline stages, float16, a
    ratio the block does not hold, decode context parallelism, an fp8 e5m2 cache. The
    ring holds round_up(ratio + speculative tokens, ratio) rows (4 + 3 -> 8; 8 + 5 -> 16), each
    128 bfloat16 wide, 140 under multimodal RoPE (three int64 positions appended)."""
    rec = Q.recorded()
    assert len(Q.QSA_033) == 28
    refused = [c for c in Q.QSA_033 if not rec[c]["vllm"]["ok"]]
    assert refused == [
        "qwen4-qsa-pp2",
        "qwen4-qsa-fp16",
        "qwen4-qsa-ratio128",
        "qwen4-qsa-dcp2",
        "qwen4-qsa-tp4-dcp2",
        "qwen4-qsa-fp8-e5m2",
    ]
    assert rec["qwen4-qsa-ngram3"]["vllm"]["groups"][3] == ["CircularBuffer", 8, 2048, 1]
    assert rec["qwen4-qsa-ratio8-ngram5"]["vllm"]["groups"][3] == ["CircularBuffer", 16, 4096, 1]
    assert rec["qwen4-vl-qsa-mrope"]["vllm"]["groups"][3] == ["CircularBuffer", 4, 4 * 140 * 2, 1]


def test_plain_interval_is_read_from_0_32() -> None:
    attention = {
        v: sum(
            n.endswith("self_attn.attn")
            for g in Q.recorded(v)["qwen4-plain-interval"]["vllm"]["group_layers"]
            for n in g
        )
        for v in RELEASES
    }
    assert attention == {"0.29.0": 1, "0.30.0": 1, "0.31.0": 1, "0.32.0": 2, "0.33.0": 2}


@pytest.mark.parametrize("version", RELEASES)
def test_mtp_layers_widen_every_qsa_ring(version: str) -> None:
    """With one MTP layer and one speculative token, each QSA ring (the target's and the MTP
    layer's) holds round_up(4 + 1, 4) = 8 rows, as the Qwen4ExpMTP reason says."""
    v = Q.recorded(version)["qwen4-qsa-512-mtp"]["vllm"]
    assert v["ok"]
    ring = [(g, names) for g, names in zip(v["groups"], v["group_layers"], strict=True) if g[0] == "CircularBuffer"]
    [(group, names)] = ring
    assert group[1] == 8 and any(n.startswith("mtp.") for n in names)
    assert "indexer_compress_ratio + num_speculative_tokens" in NOT_MODELLED["Qwen4ExpMTP"]


def test_wrappers_build_their_text_models() -> None:
    """Qwen4-Exp's wrapper groups its text model's caches as the text model does (QSA or plain:
    dryboot plans the plain one through its text model); Step5's wrapper groups its text model's."""
    rec = Q.recorded()
    for text_id, wrapped_id in (("qwen4-qsa", "qwen4-vl-qsa"), ("qwen4-plain", "qwen4-vl-plain")):
        text, wrapped = rec[text_id]["vllm"], rec[wrapped_id]["vllm"]
        assert wrapped["groups"] == text["groups"]
        assert wrapped["group_layers"] == [[f"language_model.{n}" for n in g] for g in text["group_layers"]]
    text, wrapped = rec["step5-sparse"]["vllm"], rec["step5-vl"]["vllm"]
    assert wrapped["groups"] == text["groups"] and wrapped["num_blocks"] == text["num_blocks"]
    assert wrapped["group_layers"] == [[f"language_model.{n}" for n in g] for g in text["group_layers"]]


def test_step5_cases_cover_the_served_and_the_refused() -> None:
    """22 flag sets on Step5ForCausalLM's configs: 19 served (two pipeline stages among them); vLLM
    refuses the fp8 cache at TP 2 (its tail ring), the 128-wide heads and (in the harness) the MTP
    drafter."""
    rec = Q.recorded()
    served = [c for c in STEP5_CASES if rec[c]["vllm"]["ok"]]
    assert len(STEP5_CASES) == 22 and len(served) == 19
    assert sorted(set(STEP5_CASES) - set(served)) == ["step5-sparse-fp8-tp2", "step5-sparse-hd128", "step5-sparse-mtp"]


@pytest.mark.parametrize("cid", STEP5_CASES)
def test_dryboot_plans_step5_as_vllm(tmp_path: Path, cid: str) -> None:
    """Every recorded Step5ForCausalLM flag set: dryboot's block, groups (kind, block, page, layers),
    blocks, tokens, concurrency and max length are vLLM 0.33.0's, its group members too; what vLLM
    refuses dryboot refuses (the tail ring's rows and the head size in vLLM's words; the MTP
    drafter by name)."""
    name, argv = Q.CASES[cid]
    v = Q.recorded()[cid]["vllm"]
    case = H.Case(cid, "refused-0.33", H._write_config(tmp_path, cid, Q.config(name)), argv)
    d = H.run_dryboot(case, Q.VERSION)
    verdict = H.compare(v, d)
    assert verdict["agree"], verdict
    if not v["ok"]:
        assert d.get("refused")
        if cid != "step5-sparse-mtp":
            assert verdict["same_refusal"], verdict
        return
    assert v["final_block_size"] == d["block_size"]
    assert not verdict["diffs"]
    assert _group_layers(case) == v["group_layers"]


def _group_layers(case: H.Case, version: str = Q.VERSION) -> list[list[str]]:
    """dryboot's KV cache groups' member layers (``plan --json``), in its group order; under
    pipeline parallelism stage 0's of each (what vLLM's scheduler keeps and the record holds)."""
    import json

    from click.testing import CliRunner

    from dryboot.cli import cli

    res = CliRunner().invoke(cli, case.dryboot_argv(version), catch_exceptions=False)
    doc = json.loads(res.stdout)
    stage0 = set(doc["pipeline_stages"][0]) if doc.get("pipeline_stages") else None
    return [[n for n in g["layer_names"] if stage0 is None or n in stage0] for g in doc["grouping"]["groups"]]


#: Step5's multimodal wrapper, planned on 0.33.0 through Step5's text rules (``wrappers.WRAPPERS``)
STEP5_VL_CASES = sorted(c for c, (name, _) in Q.CASES.items() if Q.config(name)["architectures"][0] == STEP5_VL)


def test_step5_vl_cases_cover_the_tower_checks() -> None:
    """13 flag sets on the wrapper's configs: vLLM builds the perception-encoder tower before the
    language model, under --language-model-only and a zero image limit too, so TP 2 fails on its
    MLP width (int(64 * 8960 / 1536) = 373) or its heads (1), except under --mm-encoder-tp-mode data
    (the tower and projector unsharded); a text config naming no architectures is refused; the rest
    is served."""
    rec = Q.recorded()
    refused = {c: rec[c]["vllm"]["error"] for c in STEP5_VL_CASES if not rec[c]["vllm"]["ok"]}
    assert len(STEP5_VL_CASES) == 13
    assert rec["step5-vl-heads1-tp2-data"]["vllm"]["ok"] and rec["step5-vl-mlp4-tp2-data"]["vllm"]["ok"]
    assert refused == {
        "step5-vl-tp2": "AssertionError: 373 is not divisible by 2",
        "step5-vl-tp2-lmo": "AssertionError: 373 is not divisible by 2",
        "step5-vl-tp2-limit0": "AssertionError: 373 is not divisible by 2",
        "step5-vl-heads1-tp2": "AssertionError: embed_dim must be divisible by num_heads",
        "step5-vl-unnamed": "ValueError: No model architectures are specified",
    }


@pytest.mark.parametrize("cid", STEP5_VL_CASES)
def test_dryboot_plans_step5_vl_as_vllm(tmp_path: Path, cid: str) -> None:
    """Every recorded Step5ForConditionalGeneration flag set: dryboot's plan (blocks, groups and
    their ``language_model.``-prefixed members) is vLLM 0.33.0's; its refusals are vLLM's words."""
    name, argv = Q.CASES[cid]
    v = Q.recorded()[cid]["vllm"]
    case = H.Case(cid, "refused-0.33", H._write_config(tmp_path, cid, Q.config(name)), argv)
    d = H.run_dryboot(case, Q.VERSION)
    verdict = H.compare(v, d)
    assert verdict["agree"], verdict
    if not v["ok"]:
        assert d.get("refused") and verdict["same_refusal"], verdict
        return
    assert v["final_block_size"] == d["block_size"]
    assert not verdict["diffs"]
    assert _group_layers(case) == v["group_layers"]

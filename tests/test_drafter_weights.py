"""The drafters' own weights (``models/llama_eagle3.py``) against vLLM 0.28.0 on the meta device
(``tests/fidelity/data/weights/drafters/recorded.json``, written by
``tests/fidelity/record_drafter_weights.py``): the shared bound against vLLM's drafter after its
load-time sharing, the own bound against the drafter as ``get_model`` built it, both in 512-byte
allocator blocks, per TP."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from collections.abc import Callable
from pathlib import Path

import pytest

from dryboot.errors import InputError
from dryboot.vllm.model_executor.model_loader.weights import Parallel
from dryboot.vllm.model_executor.models import llama_eagle  # noqa: F401  (registers EAGLE-1's walk)
from dryboot.vllm.model_executor.models.llama_eagle3 import drafter_weights
from dryboot.vllm.versions import VersionRules

HERE = Path(__file__).resolve().parent
RECORDED = json.loads((HERE / "fidelity/data/weights/drafters/recorded.json").read_text())
CASES = sorted(RECORDED["cases"].items())
#: the drafters modelled (MTP: recorded, not modelled yet)
MODELLED = [(c, r) for c, r in CASES if r["method"] in ("eagle3", "dflash", "eagle") and r["ok"]]
#: heads vLLM refuses (its registry has no class for the architecture EAGLEConfig names)
VLLM_REFUSED = [(c, r) for c, r in CASES if r["method"] == "eagle3" and not r["ok"]]
MEDUSA = [(c, r) for c, r in CASES if r["method"] == "medusa"]
MTP = [(c, r) for c, r in CASES if r["method"] == "mtp"]
DRAFT_MODELS = [(c, r) for c, r in CASES if r["method"] == "draft_model"]


def _spec(row: dict) -> dict:
    """The case's extra ``--speculative-config`` fields as :func:`drafter_weights` keywords."""
    spec = row.get("extra", {}).get("spec", {})
    return {"parallel_drafting": bool(spec.get("parallel_drafting"))}


def _target_dir(row: dict) -> Path:
    """The target's folder: under data/weights/configs, or relative to the repository."""
    t = row["target"]
    return HERE.parent / t if "/" in t else HERE / "fidelity/data/weights/configs" / t


def _hf_quant(row: dict) -> dict | None:
    """The target's ``hf_quant_config.json`` (ModelOpt's older form), which its MTP layers take."""
    path = _target_dir(row) / "hf_quant_config.json"
    return json.loads(path.read_text()) if path.is_file() else None


#: targets whose quantization config quantizes their MTP layers (vLLM builds them quantized under
#: their mtp.layers.* names): refused by name
QUANTIZED_MTP = ("Qwen--Qwen3.5-27B+CT-W4A16-g32",)


def _quantized_mtp(row: dict) -> bool:
    return row["method"] == "mtp" and row["target"].endswith(QUANTIZED_MTP)


def _configs(row: dict) -> tuple[dict, dict]:
    target = json.loads((_target_dir(row) / "config.json").read_text())
    if row["drafter"] is None:  # the target's own MTP layers
        return target, target
    drafter = row["drafter"]
    if drafter.endswith(".json"):
        where = HERE.parent / drafter
    elif "/" in drafter:
        where = HERE.parent / drafter / "config.json"
    else:
        where = HERE / "data/configs/public" / drafter / "config.json"
    draft = json.loads(where.read_text())
    # a variant case: the published config with the named fields set (the recorder's)
    return target, {**draft, **row.get("extra", {}).get("config", {})}


@pytest.mark.parametrize(("cid", "row"), MODELLED, ids=[c for c, _ in MODELLED])
def test_config_alone_bounds_are_vllms(cid: str, row: dict) -> None:
    assert row["ok"], row.get("error")
    target, draft = _configs(row)
    got = drafter_weights(target, draft, row["method"], Parallel(tp=row["tp"]), max_model_len=4096, **_spec(row))
    assert got.low.allocated_bytes == row["shared_allocated_bytes"]
    assert got.high.allocated_bytes == row["own_allocated_bytes"]
    assert not got.decided


@pytest.mark.parametrize(("cid", "row"), VLLM_REFUSED, ids=[c for c, _ in VLLM_REFUSED])
def test_heads_vllm_refuses_are_refused(cid: str, row: dict) -> None:
    # vLLM: "Model architectures [...] are not supported"; dryboot names the architecture it looked up
    assert "are not supported" in row["error"]
    target, draft = _configs(row)
    with pytest.raises(InputError, match="are not supported for now"):
        drafter_weights(target, draft, "eagle3", Parallel(tp=row["tp"]), max_model_len=4096)


@pytest.mark.parametrize(("cid", "row"), MEDUSA, ids=[c for c, _ in MEDUSA])
def test_medusa_heads_are_vllms(cid: str, row: dict) -> None:
    # Medusa heads share nothing with the target: decided; the recorder asks for 3 speculative tokens
    target, draft = _configs(row)
    if not row["ok"]:  # a config naming its base model's class: vLLM builds that class and fails
        assert "Duplicate layer name" in row["error"]
        with pytest.raises(InputError, match="vLLM builds that class"):
            drafter_weights(target, draft, "medusa", Parallel(tp=row["tp"]), max_model_len=4096)
        return
    got = drafter_weights(target, draft, "medusa", Parallel(tp=row["tp"]), max_model_len=4096, num_speculative_tokens=3)
    assert got.decided and got.low.allocated_bytes == row["shared_allocated_bytes"]


@pytest.mark.parametrize(("cid", "row"), MTP, ids=[c for c, _ in MTP])
def test_mtp_layers_are_vllms(cid: str, row: dict) -> None:
    # an MTP drafter always shares the target's embedding and LM head: decided, vLLM's shared figure
    assert row["ok"], row.get("error")
    target, _ = _configs(row)

    def walk() -> object:
        return drafter_weights(
            target, target, "mtp", Parallel(tp=row["tp"]), max_model_len=4096, hf_quant=_hf_quant(row)
        )

    if _quantized_mtp(row):
        with pytest.raises(InputError, match="quantized by its config"):
            walk()
        return
    got = walk()
    assert got.decided and got.low.allocated_bytes == row["shared_allocated_bytes"]  # type: ignore[attr-defined]


@pytest.mark.parametrize(("cid", "row"), DRAFT_MODELS, ids=[c for c, _ in DRAFT_MODELS])
def test_draft_models_are_vllms(cid: str, row: dict) -> None:
    # a whole draft model shares nothing (its rotary table aside, when get_rope hands back the
    # target's); vLLM refuses a draft model of another vocabulary, and so does dryboot's plan
    target, draft = _configs(row)
    if not row["ok"]:
        assert "same vocabulary size" in row["error"]
        spec = {"method": "draft_model", "model": str(HERE.parent / row["drafter"]), "num_speculative_tokens": 3}
        r = _plan(
            "--model", str(HERE / "fidelity/data/weights/configs" / row["target"]),
            "--max-model-len", "4096", "--speculative-config", json.dumps(spec),
        )  # fmt: skip
        assert r.returncode == 2 and "same vocabulary size" in r.stderr, r.stdout
        return
    got = drafter_weights(target, draft, "draft_model", Parallel(tp=row["tp"]), max_model_len=4096)
    assert got.decided and got.low.allocated_bytes == row["shared_allocated_bytes"]


EAGLE3_LLAMA_8B = [(c, r) for c, r in CASES if r["drafter"] == "specforge--llama3-8B-eagle3"]


@pytest.mark.parametrize(("cid", "row"), EAGLE3_LLAMA_8B, ids=[c for c, _ in EAGLE3_LLAMA_8B])
def test_checkpoint_names_decide(cid: str, row: dict) -> None:
    target, draft = _configs(row)
    par = Parallel(tp=row["tp"])
    # a SpecForge EAGLE-3 checkpoint: its own LM head over the draft vocabulary, no embedding
    names = ["midlayer.self_attn.q_proj.weight", "fc.weight", "norm.weight", "lm_head.weight", "d2t", "t2d"]
    got = drafter_weights(target, draft, "eagle3", par, names, max_model_len=4096)
    assert got.decided
    head = row["tensors"]["lm_head.weight"][2]
    assert got.low.allocated_bytes == row["shared_allocated_bytes"] + -(-head // 512) * 512
    # no lm_head, no embedding: both shared, as vLLM's process_eagle_weight leaves them
    shared = drafter_weights(target, draft, "eagle3", par, names[:3], max_model_len=4096)
    assert shared.decided and shared.low.allocated_bytes == row["shared_allocated_bytes"]
    # an own embedding of the target's shape: vLLM compares values, so it stays open
    both = drafter_weights(target, draft, "eagle3", par, [*names, "embed_tokens.weight"], max_model_len=4096)
    assert not both.decided


def test_other_drafters_refused_by_name() -> None:
    target, draft = _configs(EAGLE3_LLAMA_8B[0][1])
    with pytest.raises(InputError, match="not modelled"):
        drafter_weights(
            target, {**draft, "architectures": ["Qwen2ForCausalLM"]}, "eagle", Parallel(), max_model_len=4096
        )
    with pytest.raises(InputError, match="not modelled"):
        drafter_weights(target, draft, "ngram_gpu", Parallel(), max_model_len=4096)
    with pytest.raises(InputError, match="not modelled"):
        drafter_weights(
            target,
            {**draft, "architectures": ["DFlashDraftModel"], "attention_bias": True},
            "dflash",
            Parallel(),
            max_model_len=4096,
        )
    with pytest.raises(InputError, match="are not supported for now"):
        drafter_weights(
            target, {**draft, "architectures": ["MistralForCausalLM"]}, "eagle3", Parallel(), max_model_len=4096
        )


# The tensors of an EAGLE-3 checkpoint as published (EAGLE and SpecForge format: one "midlayer",
# the draft vocabulary's LM head and d2t / t2d maps, no embedding), shapes of the Llama-3.1-8B head.
EAGLE3_8B = {
    "midlayer.input_layernorm.weight": ("BF16", [4096]),
    "midlayer.hidden_norm.weight": ("BF16", [4096]),
    "midlayer.post_attention_layernorm.weight": ("BF16", [4096]),
    "midlayer.self_attn.q_proj.weight": ("BF16", [4096, 8192]),
    "midlayer.self_attn.k_proj.weight": ("BF16", [1024, 8192]),
    "midlayer.self_attn.v_proj.weight": ("BF16", [1024, 8192]),
    "midlayer.self_attn.o_proj.weight": ("BF16", [4096, 4096]),
    "midlayer.mlp.gate_proj.weight": ("BF16", [14336, 4096]),
    "midlayer.mlp.up_proj.weight": ("BF16", [14336, 4096]),
    "midlayer.mlp.down_proj.weight": ("BF16", [4096, 14336]),
    "norm.weight": ("BF16", [4096]),
    "fc.weight": ("BF16", [4096, 12288]),
    "lm_head.weight": ("BF16", [32000, 4096]),
    "d2t": ("F32", [32000]),
    "t2d": ("F32", [128256]),
}


def _plan(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "dryboot", "plan", *args], capture_output=True, text=True, check=False)


def _drafter_term(doc: dict) -> dict:
    return next(t for t in doc["budget"]["terms"] if t["name"] == "weights: the drafter's own")


def test_plan_budget_counts_the_drafter(tmp_path: Path) -> None:
    import shutil

    sys.path.insert(0, str(HERE / "fidelity"))
    from test_weights import write_header_only_shards

    row = RECORDED["cases"][
        "meta-llama--Meta-Llama-3.1-8B + specforge--llama3-8B-eagle3 (eagle3) --tensor-parallel-size 1"
    ]
    target = str(HERE / "fidelity/data/weights/configs/meta-llama--Meta-Llama-3.1-8B")
    common = ("--model", target, "--gpu", "H100", "--max-model-len", "4096", "--json")
    spec = {
        "method": "eagle3",
        "model": str(HERE / "data/configs/public/specforge--llama3-8B-eagle3"),
        "num_speculative_tokens": 3,
    }
    plain = json.loads(_plan(*common).stdout)
    r = _plan(*common, "--speculative-config", json.dumps(spec))
    doc = json.loads(r.stdout)
    term = _drafter_term(doc)
    assert (term["low"], term["high"]) == (row["shared_allocated_bytes"], row["own_allocated_bytes"])
    assert "config alone" in term["source"]
    # with the checkpoint's headers: no embedding, its own LM head (draft vocabulary): decided
    d = tmp_path / "eagle3"
    d.mkdir()
    shutil.copy(HERE / "data/configs/public/specforge--llama3-8B-eagle3/config.json", d / "config.json")
    write_header_only_shards(d, EAGLE3_8B, shards=1)
    r = _plan(*common, "--speculative-config", json.dumps({**spec, "model": str(d)}))
    term = _drafter_term(json.loads(r.stdout))
    head = -(-row["tensors"]["lm_head.weight"][2] // 512) * 512
    assert term["low"] == term["high"] == row["shared_allocated_bytes"] + head
    assert plain["budget"]["weights_bytes"] == json.loads(r.stdout)["budget"]["weights_bytes"]


def test_plan_budget_undetermined_for_unmodelled_drafters(tmp_path: Path) -> None:
    public = HERE / "data/configs/public"
    # an EAGLE-1 head whose layout is not modelled (the published Llama-3 head with attention biases)
    head = json.loads((public / "eagle--EAGLE-LLaMA3-Instruct-8B" / "config.json").read_text())
    (tmp_path / "config.json").write_text(json.dumps({**head, "attention_bias": True}))
    eagle = {"method": "eagle", "model": str(tmp_path), "num_speculative_tokens": 3}
    r = _plan(
        "--model", str(public / "meta-llama--Meta-Llama-3-8B-Instruct"), "--gpu", "H100", "--max-model-len", "4096",
        "--speculative-config", json.dumps(eagle),
    )  # fmt: skip
    assert r.returncode == 3, r.stderr
    text = " ".join(r.stdout.split())
    assert "speculative decoding (eagle): the drafter's weights" in text and "not modelled" in text
    # a pinned pool on a named GPU: whether the weights and the pool fit is undetermined too
    r = _plan(
        "--model", str(public / "meta-llama--Meta-Llama-3-8B-Instruct"), "--gpu", "H100", "--max-model-len", "4096",
        "--kv-cache-memory-bytes", "10G", "--speculative-config", json.dumps(eagle),
    )  # fmt: skip
    assert r.returncode == 3, r.stdout
    assert "speculative decoding: the drafter's weights" in " ".join(r.stdout.split())
    mtp = {"method": "mtp", "num_speculative_tokens": 1}
    r = _plan(
        "--model", str(public / "zai-org--GLM-4.5"), "--gpu", "H200", "-tp", "8", "--max-model-len", "4096",
        "--speculative-config", json.dumps(mtp),
    )  # fmt: skip
    assert r.returncode == 3, r.stderr
    assert "the MTP layers of Glm4MoeForCausalLM are not modelled" in " ".join(r.stdout.split())


from hypothesis import given, settings  # noqa: E402
from hypothesis import strategies as st  # noqa: E402

_VALUES = st.one_of(
    st.none(), st.booleans(), st.integers(-3, 1 << 20), st.text(max_size=3), st.lists(st.integers(0, 8), max_size=3)
)
_FIELDS = (
    "hidden_size", "num_attention_heads", "num_key_value_heads", "head_dim", "intermediate_size", "vocab_size",
    "draft_vocab_size", "num_hidden_layers", "max_position_embeddings", "target_layer_ids", "rope_theta",
    "norm_before_fc", "fc_norm", "attention_bias", "mlp_bias", "num_aux_hidden_states", "num_aux_layers",
    "target_hidden_size", "medusa_num_heads", "medusa_fc_bias", "original_lm_head", "truncated_vocab_size",
)  # fmt: skip


@settings(max_examples=150, deadline=None, derandomize=True)
@given(
    method=st.sampled_from(["eagle3", "dflash", "draft_model", "mtp", "medusa"]),
    changes=st.dictionaries(st.sampled_from(_FIELDS), _VALUES, max_size=4),
    tp=st.sampled_from([1, 2, 3, 8]),
)
def test_hostile_drafter_configs_are_refused_by_name(method: str, changes: dict, tp: int) -> None:
    # a drafter config with missing, zero, negative or mistyped fields: a figure or one InputError
    target, draft = _configs(EAGLE3_LLAMA_8B[0][1])
    arch = {"dflash": "DFlashDraftModel", "draft_model": "LlamaForCausalLM"}.get(method, "LlamaForCausalLMEagle3")
    hostile = {**draft, "architectures": [arch], **changes}
    try:
        got = drafter_weights(target, hostile, method, Parallel(tp=tp), max_model_len=4096)
    except InputError:
        return
    assert 0 <= got.low.allocated_bytes <= got.high.allocated_bytes


@pytest.mark.skipif(not os.environ.get("DRYBOOT_VLLM_PYTHON"), reason="needs vLLM (DRYBOOT_VLLM_PYTHON)")
def test_live_oracle(tmp_path: Path) -> None:
    """Re-record every drafter case at TP 2 with the boot environment's vLLM and check dryboot
    against it (seconds)."""
    env = {**os.environ, "RECORD_OUT": str(tmp_path / "live.json"), "RECORD_TPS": "2"}
    subprocess.run(
        [os.environ["DRYBOOT_VLLM_PYTHON"], str(HERE / "fidelity/record_drafter_weights.py")],
        check=True,
        env=env,
        stdout=subprocess.DEVNULL,
        timeout=900,
    )
    live = json.loads((tmp_path / "live.json").read_text())["cases"]
    assert len(live) == len([c for c, r in CASES if r["tp"] == 2])
    for row in live.values():
        target, draft = _configs(row)
        if not row["ok"]:
            if row["method"] == "draft_model":
                assert "same vocabulary size" in row["error"]
            elif row["method"] == "medusa":
                assert "Duplicate layer name" in row["error"]
            else:
                assert "are not supported" in row["error"]
                with pytest.raises(InputError, match="are not supported for now"):
                    drafter_weights(target, draft, row["method"], Parallel(tp=2), max_model_len=4096)
            continue
        tokens = 3 if row["method"] == "medusa" else None
        if _quantized_mtp(row):
            with pytest.raises(InputError, match="quantized by its config"):
                drafter_weights(target, target, "mtp", Parallel(tp=2), max_model_len=4096, hf_quant=_hf_quant(row))
            continue
        got = drafter_weights(
            target,
            draft,
            row["method"],
            Parallel(tp=2),
            max_model_len=4096,
            num_speculative_tokens=tokens,
            hf_quant=_hf_quant(row),
            **_spec(row),
        )
        assert got.low.allocated_bytes == row["shared_allocated_bytes"]
        if row["method"] in ("eagle3", "dflash"):
            assert got.high.allocated_bytes == row["own_allocated_bytes"]


#: the other releases' recordings (``recorded-<version>.json``, TP 2): (version, case id) -> row
OTHER_RELEASES = {
    (doc["vllm"], cid): row
    for doc in (
        json.loads(p.read_text()) for p in sorted((HERE / "fidelity/data/weights/drafters").glob("recorded-*.json"))
    )
    for cid, row in doc["cases"].items()
}


@pytest.mark.parametrize("key", sorted(OTHER_RELEASES), ids=[f"{v} {c}" for v, c in sorted(OTHER_RELEASES)])
def test_other_releases_are_vllms(key: tuple[str, str]) -> None:
    # 0.30 builds an EAGLE-3 head's draft_id_to_target_id only for another vocabulary; 0.33 has no
    # Medusa; the rest is 0.28.0's
    version, _ = key
    row = OTHER_RELEASES[key]
    target, draft = _configs(row)
    tokens = 3 if row["method"] == "medusa" else None

    def walk() -> object:
        return drafter_weights(
            target, draft, row["method"], Parallel(tp=row["tp"]), max_model_len=4096,
            num_speculative_tokens=tokens, vllm_version=version, hf_quant=_hf_quant(row), **_spec(row),
        )  # fmt: skip

    if not row["ok"]:
        if row["method"] == "draft_model":
            assert "same vocabulary size" in row["error"]
            return
        with pytest.raises(InputError):
            walk()
        return
    if _quantized_mtp(row):
        with pytest.raises(InputError, match="quantized by its config"):
            walk()
        return
    got = walk()
    assert got.low.allocated_bytes == row["shared_allocated_bytes"]  # type: ignore[attr-defined]
    if row["method"] in ("eagle3", "dflash", "eagle"):
        assert got.high.allocated_bytes == row["own_allocated_bytes"]  # type: ignore[attr-defined]


MEDUSA_ROW = next(r for c, r in CASES if r["method"] == "medusa" and r["ok"] and r["tp"] == 1)


def test_plan_budget_counts_medusa_heads() -> None:
    # Medusa keeps no KV cache (the plan is the target's), yet its heads are in Model loading took
    spec = {"method": "medusa", "model": str(HERE.parent / MEDUSA_ROW["drafter"]), "num_speculative_tokens": 3}
    common = ("--model", str(HERE / "fidelity/data/weights/configs" / MEDUSA_ROW["target"]), "--max-model-len", "4096")
    r = _plan(*common, "--gpu", "H100", "--json", "--speculative-config", json.dumps(spec))
    term = _drafter_term(json.loads(r.stdout))
    assert term["low"] == term["high"] == MEDUSA_ROW["shared_allocated_bytes"]
    # vLLM 0.33.0 has no Medusa drafter: its SpeculativeConfig refuses the method
    r = _plan(*common, "--vllm-version", "0.33.0", "--speculative-config", json.dumps(spec))
    assert r.returncode == 2 and "has no Medusa drafter" in r.stderr, r.stdout


def test_deepseek_eagle3_yarn_switch_is_needed(flip_rules: Callable[..., VersionRules]) -> None:
    """vLLM 0.27.1 fails to build an MLA EAGLE-3 head without YaRN (recorded: ``KeyError:
    'factor'``); ``deepseek_eagle3_yarn_only`` refuses it, and flipped off dryboot would size it."""
    key = next(
        k for k in OTHER_RELEASES if k[0] == "0.27.1" and "eagle3-mla" in k[1] and '"rope_scaling": null' in k[1]
    )
    row = OTHER_RELEASES[key]
    assert not row["ok"] and "KeyError: 'factor'" in row["error"]
    target, draft = _configs(row)

    def walk() -> object:
        return drafter_weights(
            target, draft, "eagle3", Parallel(tp=row["tp"]), max_model_len=4096, vllm_version="0.27.1"
        )

    with pytest.raises(InputError, match="KeyError: 'factor'"):
        walk()
    flip_rules("0.27.1", deepseek_eagle3_yarn_only=False)
    assert walk().low.allocated_bytes > 0  # type: ignore[attr-defined]


def test_mtp_of_a_modelopt_target_reads_its_exclusions() -> None:
    """The NVFP4 DeepSeek-V3's hf_quant_config.json excludes model.layers.61* (its MTP layer):
    vLLM builds that layer in bf16 (with ModelOpt's four KV-cache scales on its MLA layer); read
    as quantized (its exclusions dropped), the figure is far below vLLM's."""
    row = next(r for c, r in CASES if r["target"] == "nvidia--DeepSeek-V3-0324-NVFP4" and r["tp"] == 2)
    target, _ = _configs(row)
    hq = _hf_quant(row)
    assert hq is not None and "model.layers.61*" in hq["quantization"]["exclude_modules"]
    got = drafter_weights(target, target, "mtp", Parallel(tp=2), max_model_len=4096, hf_quant=hq)
    assert got.low.allocated_bytes == row["shared_allocated_bytes"]
    unexcluded = {**hq, "quantization": {**hq["quantization"], "exclude_modules": []}}
    quantized = drafter_weights(target, target, "mtp", Parallel(tp=2), max_model_len=4096, hf_quant=unexcluded)
    assert quantized.low.allocated_bytes < row["shared_allocated_bytes"] // 2


QUANT_MTP = [(c, r) for c, r in CASES if r["method"] == "mtp" and "/" in r["target"]]


def test_quantized_qwen_mtp_corpus() -> None:
    """The MTP layers of the published quantized Qwen3.5 / 3.6 targets (ModelOpt MIXED_PRECISION
    dense and MoE, ModelOpt NVFP4 MoE whose ignore lists leave mtp* unquantized; an AutoRound
    export whose block_name_to_quantize leaves them out) are recorded at TP 1/2/4 and modelled;
    the compressed-tensors W4A16 target quantizes them (vLLM: under mtp.layers.*) and is refused."""
    modelled = [r for _, r in QUANT_MTP if not _quantized_mtp(r)]
    assert len(modelled) == 15 and len(QUANT_MTP) == 18
    # ModelOpt's KV-cache method: four scale parameters (one block each) above the unquantized layer
    for name, kv in (("nvidia--Qwen3.6-27B-NVFP4", 4), ("nvidia--Qwen3.6-35B-A3B-NVFP4", 0)):
        row = next(r for _, r in QUANT_MTP if r["target"].endswith(name) and r["tp"] == 2)
        target, _ = _configs(row)
        plain = {k: v for k, v in target.items() if k != "quantization_config"}
        bare = drafter_weights(plain, plain, "mtp", Parallel(tp=2), max_model_len=4096)
        assert row["shared_allocated_bytes"] - bare.low.allocated_bytes == kv * 512, name


def test_quantized_qwen_mtp_needs_every_module_unquantized() -> None:
    """An ignore list that leaves one MTP module quantized (the NVFP4 target without its mtp*
    entries): vLLM quantizes that layer, which is not modelled: refused naming the module."""
    row = next(r for _, r in QUANT_MTP if r["target"].endswith("nvidia--Qwen3.6-27B-NVFP4") and r["tp"] == 2)
    target, _ = _configs(row)
    qc = target["quantization_config"]
    layers = {**qc["quantized_layers"], "mtp.layers.0.mlp.down_proj": {"quant_algo": "W4A16_NVFP4"}}
    edited = {**target, "quantization_config": {**qc, "ignore": [], "quantized_layers": layers}}
    with pytest.raises(InputError, match=r"mtp\.layers\.0\.mlp\.down_proj"):
        drafter_weights(edited, edited, "mtp", Parallel(tp=2), max_model_len=4096)


def test_post_load_figures_are_below_by_the_scales() -> None:
    """vLLM's loader runs the post-load step inside the drafter's get_model (recorded with
    RECORD_POST_LOAD on 0.28.0, TP 2): ModelOpt's KV-cache method deletes its four scale
    parameters, and without a KV-cache method the attention moves two scalar blocks to the host.
    dryboot's figure is the drafter as built (every drafter's, as recorded): above by those blocks."""
    post = json.loads((HERE / "fidelity/data/weights/drafters/post-load-0.28.0.json").read_text())["cases"]
    assert len(post) == 3
    for row in post.values():
        target, _ = _configs(row)
        got = drafter_weights(target, target, "mtp", Parallel(tp=2), max_model_len=4096, hf_quant=_hf_quant(row))
        blocks = 2 if "AutoRound" in row["target"] else 4
        assert got.low.allocated_bytes - row["shared_allocated_bytes"] == blocks * 512, row["target"]


def test_text_only_qwen_mtp_refused_on_0271() -> None:
    """vLLM 0.27.1 refuses an MTP drafter for a text-only Qwen3.5 / 3.6 target (recorded:
    "Unsupported speculative method: 'mtp'"); ``plan`` refuses it there (exit 2) and plans it on
    0.28.0, whose recorded figure the drafter term is."""
    row = next(r for _, r in QUANT_MTP if "AutoRound" in r["target"] and r["tp"] == 1)
    key = next(k for k in OTHER_RELEASES if k[0] == "0.27.1" and "AutoRound" in k[1])
    assert "Unsupported speculative method: 'mtp'" in OTHER_RELEASES[key]["error"]
    spec = json.dumps({"method": "mtp", "num_speculative_tokens": 1})
    common = ("--model", str(_target_dir(row)), "--max-model-len", "4096", "--speculative-config", spec)
    r = _plan(*common, "--vllm-version", "0.27.1")
    assert r.returncode == 2 and "Unsupported speculative method" in r.stderr, r.stdout
    serve = f"vllm serve {_target_dir(row)} --max-model-len 4096 --speculative-config '{spec}'"
    r = _plan("--serve", serve, "--vllm-version", "0.27.1")  # a pasted command line: refused the same
    assert r.returncode == 2 and "Unsupported speculative method" in r.stderr, (r.stdout, r.stderr)
    r = _plan(*common, "--gpu", "H100", "--json")
    assert r.returncode in (0, 3), r.stderr
    term = _drafter_term(json.loads(r.stdout))
    assert term["low"] == term["high"] >= row["shared_allocated_bytes"]

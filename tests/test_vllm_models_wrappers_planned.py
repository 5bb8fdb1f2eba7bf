"""Issue 37: a multimodal wrapper whose language model dryboot plans is planned too, on every
release's registry, or refused for a reason of its own that is listed here (strict both ways: a
listed wrapper that becomes planned, or stops naming a planned text model, fails until its entry
goes). "Names a planned text model": the refusal's reason names an architecture that registry's
table verifies."""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any

import pytest

from dryboot.vllm.models.registry import architecture_table

TINY = Path(__file__).resolve().parent / "fidelity" / "data" / "architectures"
RELEASES = ("0.27.1", "0.28.0", "0.29.0", "0.30.0", "0.31.0", "0.32.0", "0.33.0")
#: wrapper -> why it stays refused although its text model is planned
KNOWN = {
    # vLLM 0.33.0's
    "NemotronH_Omni_Reasoning_V3": "its model class reads config keys transformers' nemotron_h_omni class lacks",
    # 0.33.0 only: no transformers it allows (<5.21) nor vLLM has the minicpm_ocr config class
    "MiniCPMOcrForConditionalGeneration": "vLLM 0.33.0 cannot read its config (model_type minicpm_ocr)",
    # vLLM 0.28.0 and 0.33.0 fail to build them (recorded: tests/fidelity/data/wrappers/, case ids in
    # RECORDED below)
    "NemotronH_Nano_VL_V2": "a remote-code config class; on nemotron_h_omni the model class reads keys it lacks",
    "NemotronH_Nano_Omni_Reasoning_V3": "the NemotronH_Nano_VL_V2 class: reads config keys nemotron_h_omni lacks",
    "NemotronH_Super_Omni_Reasoning_V3": "the NemotronH_Nano_VL_V2 class: reads config keys nemotron_h_omni lacks",
    "Step3p7ForConditionalGeneration": "vLLM reads a per-layer num_attention_heads as global (transformers' config)",
    # issue 37: a config class of the checkpoint's own (remote code) whose published Python file was not
    # found to run vLLM's engine start on with --trust-remote-code (refusals.remote_config names what
    # was searched); dots.ocr's was found and DotsOCRForCausalLM is planned
    **{
        w: "a remote-code config class whose published Python file was not found"
        for w in (
            "KeyeForConditionalGeneration",
            "KeyeVL1_5ForConditionalGeneration",
            "LlavaOnevision2ForConditionalGeneration",
            "MiniCPMO",
            "MiniCPMV",
            "MoonshotKimiaForCausalLM",
            "MossAudioModel",
            "OpenCUAForConditionalGeneration",
            "Ovis2_5",
            "Ovis2_6ForCausalLM",
            "Ovis2_6_MoeForCausalLM",
            "Phi3VForCausalLM",
            "Phi4ForCausalLMV",
        )
    },
}
#: refused wrapper of a planned text model -> the case ids of ``tests/fidelity/wrapper_cases.py``
#: whose recorded engine start (vLLM 0.28.0 and 0.33.0) backs its refusal
RECORDED = {
    "NemotronH_Nano_VL_V2": ("nano-vl-v2-remote", "nano-vl-v2-omni"),
    "NemotronH_Nano_Omni_Reasoning_V3": ("nano-omni-v3",),
    "NemotronH_Super_Omni_Reasoning_V3": ("super-omni-v3",),
    "NemotronH_Omni_Reasoning_V3": ("omni-v3",),
    "MiMoV2OmniForCausalLM": ("mimo-v2-omni",),
    "Step3p7ForConditionalGeneration": ("step3p7",),
    "MiniCPMOcrForConditionalGeneration": ("minicpm-ocr",),
}


def _refused_over_planned(version: str) -> set[str]:
    rows = architecture_table(version)
    planned = {r.architecture for r in rows if r.status == "verified"}
    out = set()
    for r in rows:
        if r.status != "refused" or r.kind != "multimodal":
            continue
        if any(re.search(rf"\b{re.escape(p)}\b", r.reason) for p in planned):
            out.add(r.architecture)
    return out


@pytest.mark.parametrize("version", RELEASES)
def test_no_wrapper_of_a_planned_text_model_is_refused_unlisted(version: str) -> None:
    found = _refused_over_planned(version)
    assert found <= set(KNOWN), (
        f"vLLM {version}: refused though their text model is planned: {sorted(found - set(KNOWN))}"
    )


def test_every_listed_wrapper_still_needs_its_entry() -> None:
    found = set().union(*(_refused_over_planned(v) for v in RELEASES))
    assert set(KNOWN) <= found, f"planned now (remove from KNOWN): {sorted(set(KNOWN) - found)}"


def test_minicpm_v_4_6_is_planned_through_qwen3_5() -> None:
    rows = {r.architecture: r for r in architecture_table("0.33.0")}
    row = rows["MiniCPMV4_6ForConditionalGeneration"]
    assert row.status == "verified" and row.family == "qwen3_next"


@pytest.mark.parametrize("version", ["0.32.0", "0.33.0"])
def test_minicpm_v_4_7_is_planned_through_qwen3_5(version: str) -> None:
    rows = {r.architecture: r for r in architecture_table(version)}
    row = rows["MiniCPMV4_7ForConditionalGeneration"]
    assert row.status == "verified" and row.family == "qwen3_next", row.reason


def test_minicpm_v_4_7_is_refused_where_the_registry_lacks_it() -> None:
    """vLLM 0.27.1-0.31.0's registries have no MiniCPM-V 4.7: ModelConfig refuses it (recorded on
    0.28.0 and 0.29.0; 0.27.1 and 0.31.0 refuse its model_type first; 0.30.0 resolves it to the
    Transformers backend, refused by name), and so does dryboot."""
    from dryboot.vllm.models.registry import absent_from_release

    for version in ("0.27.1", "0.28.0", "0.29.0", "0.30.0", "0.31.0"):
        why = absent_from_release("MiniCPMV4_7ForConditionalGeneration", version)
        assert why is not None and "so dryboot does not plan it for that release" in why, version
    for version in ("0.32.0", "0.33.0"):
        assert absent_from_release("MiniCPMV4_7ForConditionalGeneration", version) is None
    # an architecture 0.28.0's registry has is never refused this way
    assert absent_from_release("MiniCPMV4_6ForConditionalGeneration", "0.28.0") is None


def test_minicpm_ocr_is_refused_for_its_config_class() -> None:
    rows = {r.architecture: r for r in architecture_table("0.33.0")}
    row = rows["MiniCPMOcrForConditionalGeneration"]
    assert row.status == "refused" and "minicpm_ocr" in row.reason and "Qwen3_5ForCausalLM" in row.reason


#: multimodal wrapper -> the registered text architecture its vLLM model class composes (read from
#: each wrapper's ``vllm/model_executor/models/`` file in 0.28.0 and 0.33.0: the text config it hands
#: ``init_vllm_registered_model``, or the class it builds). Wrappers whose language model is a class
#: of their own (Ernie-4.5-VL, Molmo2, Moondream3, MuseGlimmer) are not listed: they compose nothing
#: dryboot plans.
COMPOSES = {
    "Mistral3ForConditionalGeneration": "Ministral3ForCausalLM",
    "LightOnOCRForConditionalGeneration": "Qwen3ForCausalLM",
    "LlavaOnevisionForConditionalGeneration": "Qwen2ForCausalLM",
    "LlavaNextVideoForConditionalGeneration": "LlamaForCausalLM",
    "LlavaForConditionalGeneration": "LlamaForCausalLM",
    "LlavaNextForConditionalGeneration": "MistralForCausalLM",
    "Step3VLForConditionalGeneration": "Step3TextForCausalLM",
    "Step3p7ForConditionalGeneration": "Step3p5ForCausalLM",
    "Granite4VisionForConditionalGeneration": "GraniteForCausalLM",
    "Cosmos3ForConditionalGeneration": "Qwen3VLForConditionalGeneration",
    "Cosmos3EdgeForConditionalGeneration": "NemotronHForCausalLM",
    "Gemma4UnifiedForConditionalGeneration": "Gemma4ForCausalLM",
    "DiffusionGemmaForBlockDiffusion": "Gemma4ForCausalLM",
    "FunASRForConditionalGeneration": "Qwen3ForCausalLM",
    "MiMoV2OmniForCausalLM": "MiMoV2FlashForCausalLM",
    "HunYuanVLForConditionalGeneration": "HunYuanDenseV1ForCausalLM",
    # its top-level config is a Qwen2Config (fireredasr2.py's processing info asks for that class)
    "FireRedASR2ForConditionalGeneration": "Qwen2ForCausalLM",
    "Gemma3nForConditionalGeneration": "Gemma3nForCausalLM",
    "MiniCPMV4_6ForConditionalGeneration": "Qwen3_5ForCausalLM",
    # minicpmv4_7.py and minicpm_ocr.py (0.33.0) subclass minicpmv4_6.py's class
    "MiniCPMV4_7ForConditionalGeneration": "Qwen3_5ForCausalLM",
    "MiniCPMOcrForConditionalGeneration": "Qwen3_5ForCausalLM",
    # remote-code config classes (neither transformers nor vLLM has their model_type)
    "OpenCUAForConditionalGeneration": "Qwen2ForCausalLM",
    "LlavaOnevision2ForConditionalGeneration": "Qwen3ForCausalLM",
    "MoonshotKimiaForCausalLM": "Qwen2ForCausalLM",
    "MossAudioModel": "Qwen3ForCausalLM",
    "Phi4ForCausalLMV": "Phi3ForCausalLM",
    # new in vLLM 0.33.0's registry (alpamayo2_super.py subclasses Qwen3VLForConditionalGeneration;
    # nano_nemotron_vl.py builds text_config; deepseek_v4's vl_model.py names DeepseekV4ForCausalLM)
    "Alpamayo2Super": "Qwen3VLForConditionalGeneration",
    "NemotronH_Omni_Reasoning_V3": "NemotronHForCausalLM",
    "DeepseekV4ForConditionalGeneration": "DeepseekV4ForCausalLM",
    # nano_nemotron_vl.py's NemotronH_Nano_VL_V2 class under its other names (0.28.0 and 0.33.0)
    "NemotronH_Nano_VL_V2": "NemotronHForCausalLM",
    "NemotronH_Nano_Omni_Reasoning_V3": "NemotronHForCausalLM",
    "NemotronH_Super_Omni_Reasoning_V3": "NemotronHForCausalLM",
    # isaac.py builds Qwen3ForCausalLM on the top-level IsaacConfig (a Qwen3Config)
    "IsaacForConditionalGeneration": "Qwen3ForCausalLM",
}
NOT_TAUGHT = "not yet taught"


@pytest.mark.parametrize("version", ["0.28.0", "0.33.0"])
def test_every_wrapper_of_a_planned_text_model_is_planned_or_refused_for_its_own_reason(version: str) -> None:
    """Issue 37 item 2: over each registry, a wrapper whose composed text model that registry plans
    is planned (verified), or refused for a reason other than "not yet taught" (vLLM refuses it,
    a remote-code config, a module the harness cannot import...)."""
    rows = {r.architecture: r for r in architecture_table(version)}
    planned = {a for a, r in rows.items() if r.status == "verified"}
    untaught = [
        wrapper
        for wrapper, text in COMPOSES.items()
        if wrapper in rows
        and text in planned
        and rows[wrapper].status != "verified"
        and NOT_TAUGHT in rows[wrapper].reason
    ]
    assert not untaught, f"vLLM {version}: refused as not yet taught over a planned text model: {untaught}"


@pytest.mark.parametrize("version", ["0.28.0", "0.33.0"])
def test_no_wrapper_is_refused_as_not_yet_taught(version: str) -> None:
    """No multimodal wrapper of the registry is refused as "not yet taught": each is planned, or
    refused for what it composes or what vLLM (or the offline harness) cannot do."""
    untaught = [
        r.architecture
        for r in architecture_table(version)
        if r.kind == "multimodal" and r.status != "verified" and NOT_TAUGHT in r.reason
    ]
    assert not untaught, f"vLLM {version}: wrappers refused as not yet taught: {untaught}"


@pytest.mark.parametrize(
    ("version", "wrapper"),
    [
        (v, w)
        for v in ("0.28.0", "0.33.0")
        for w in (
            "Mistral3ForConditionalGeneration",
            "LightOnOCRForConditionalGeneration",
            "LlavaOnevisionForConditionalGeneration",
            "LlavaNextVideoForConditionalGeneration",
            "Step3VLForConditionalGeneration",
            "Granite4VisionForConditionalGeneration",
            "Gemma4UnifiedForConditionalGeneration",
            "Cosmos3ForConditionalGeneration",
            "Cosmos3EdgeForConditionalGeneration",
            "DiffusionGemmaForBlockDiffusion",
        )
    ],
)
def test_wrappers_planned_through_their_text_model(version: str, wrapper: str) -> None:
    rows = {r.architecture: r for r in architecture_table(version)}
    assert rows[wrapper].status == "verified", rows[wrapper].reason


def test_hunyuan_vl_is_planned_where_vllm_builds_it() -> None:
    """0.28 builds hunyuan_vision.py (planned through HunYuanDenseV1ForCausalLM); 0.29-0.33 serve it
    through the Transformers modeling backend (planned: its language model's KV cache, recorded in
    tests/fidelity/data/release-architectures/); 0.27.1 fails to inspect the class (refused)."""
    for version in ("0.28.0", "0.29.0", "0.30.0", "0.31.0", "0.32.0", "0.33.0"):
        row = {r.architecture: r for r in architecture_table(version)}["HunYuanVLForConditionalGeneration"]
        assert row.status == "verified", (version, row.reason)
    row = {r.architecture: r for r in architecture_table("0.27.1")}["HunYuanVLForConditionalGeneration"]
    assert row.status == "refused" and "failed to be inspected" in row.reason


def test_hcx_vision_is_planned_where_the_registry_has_it() -> None:
    """hyperclovax_vision.py is in 0.27.1/0.28.0's registries (planned through its text model) and
    gone from 0.30.0/0.33.0's (refused as vLLM refuses its hyperclovax_vlm config)."""
    for version in ("0.27.1", "0.28.0"):
        row = {r.architecture: r for r in architecture_table(version)}["HCXVisionForCausalLM"]
        assert row.status == "verified", row.reason
    for version in ("0.30.0", "0.33.0"):
        assert "HCXVisionForCausalLM" not in {r.architecture for r in architecture_table(version)}


def _hcx_plan(tmp_path: Path, text: dict[str, Any], *flags: str) -> tuple[int, str]:
    from click.testing import CliRunner

    from dryboot.cli import cli

    config = json.loads((TINY / "HCXVisionForCausalLM.json").read_text())
    config["text_config"] = text
    path = tmp_path / "config.json"
    path.write_text(json.dumps(config))
    res = CliRunner().invoke(cli, ["plan", "--model", str(path), "--kv-cache-memory-bytes", "1G", *flags])
    return res.exit_code, res.output


_TEXT = {"num_hidden_layers": 3, "num_attention_heads": 8, "max_position_embeddings": 4096, "vocab_size": 1024}


@pytest.mark.parametrize(
    ("text", "tokens", "kv_heads"),
    [
        ({**_TEXT, "model_type": "llama", "hidden_size": 512, "num_key_value_heads": 2}, 4096, 2),
        ({**_TEXT, "model_type": "hyperclovax", "hidden_size": 512, "num_key_value_heads": 4}, 4096, 4),
        # GPT-2 (n_embd and n_head as GPT2Config names them): multi-head attention, n_positions tokens
        ({"model_type": "gpt2", "n_layer": 3, "n_head": 8, "n_embd": 512, "n_positions": 1024}, 1024, 8),
    ],
)
def test_hcx_vision_reads_its_text_model(tmp_path: Path, text: dict[str, Any], tokens: int, kv_heads: int) -> None:
    code, out = _hcx_plan(tmp_path, text)
    assert code == 0, out
    # 3 layers, K and V, head size 512 / 8 = 64, bfloat16
    need = tokens * 3 * 2 * kv_heads * 64 * 2
    assert f"one {tokens:,}-token request needs {need:,} B" in " ".join(out.split()), out


def test_hcx_vision_refuses_a_text_model_it_does_not_compose(tmp_path: Path) -> None:
    code, out = _hcx_plan(tmp_path, {**_TEXT, "model_type": "qwen2", "hidden_size": 512})
    assert code == 2 and "HCXVisionForCausalLM with a 'qwen2' language model is not modelled" in out, out


def test_hcx_vision_tower_heads_must_split(tmp_path: Path) -> None:
    # the tiny config's SigLIP tower has 4 heads: TP 8 cannot split them (vLLM asserts building it)
    code, out = _hcx_plan(tmp_path, {**_TEXT, "model_type": "llama", "hidden_size": 512}, "-tp", "8")
    assert code == 2 and "vision_config.num_attention_heads" in out, out


@pytest.mark.parametrize(("visual_und", "built"), [(True, True), (False, False), (None, False), ("absent", True)])
def test_bagel_tower_heads_split_only_under_visual_und(tmp_path: Path, visual_und: object, built: bool) -> None:
    """Issue 37: Bagel's class builds its SigLIP tower only ``if config.visual_und`` (BagelConfig:
    true): a one-head tower refuses TP 2 only then (recorded on vLLM 0.28.0 and 0.33.0:
    tests/fidelity/data/wrappers/, bagel-*-tower-1-head-tp2)."""
    config = json.loads((TINY / "BagelForConditionalGeneration.json").read_text())
    config["vit_config"]["num_attention_heads"] = 1
    config.pop("visual_und")
    if visual_und != "absent":
        config["visual_und"] = visual_und
    code, out = _plan(tmp_path, config, "-tp", "2")
    if built:
        assert code == 2 and "vit_config.num_attention_heads: 1 is not divisible" in " ".join(out.split()), out
    else:
        assert code == 0, out


#: vLLM 0.33.0's new multimodal wrappers of issue 37 (not in 0.28.0's registry)
NEW_IN_033 = (
    "NemotronH_Omni_Reasoning_V3",
    "DeepseekV4ForConditionalGeneration",
    "DeepseekV41ForCausalLM",
    "RadioMBartPrefixForCausalLM",
    "CohereCompassForConditionalGeneration",
    "Alpamayo2Super",
)
GENERIC = "its model file is not modelled"


@pytest.mark.parametrize("wrapper", NEW_IN_033)
def test_new_0_33_wrapper_is_planned_or_refused_for_what_it_composes(wrapper: str) -> None:
    """Issue 37: each is planned, or refused naming its language model (no generic line); one whose
    composed text model 0.33.0 plans is planned unless :data:`KNOWN` says why not."""
    rows = {r.architecture: r for r in architecture_table("0.33.0")}
    row = rows[wrapper]
    assert GENERIC not in row.reason, row.reason
    text = COMPOSES.get(wrapper)
    if text is not None and rows[text].status == "verified":
        assert row.status == "verified" or wrapper in KNOWN, row.reason
        if row.status != "verified":
            assert text in row.reason, row.reason
    elif row.status != "verified":
        assert "language model is" in row.reason, row.reason


def test_every_0_33_wrapper_of_a_planned_text_model_is_planned() -> None:
    """Over vLLM 0.33.0's registry: every multimodal wrapper whose composed text model is planned is
    planned, or listed in :data:`KNOWN` with why not."""
    rows = {r.architecture: r for r in architecture_table("0.33.0")}
    missed = [
        w
        for w, text in COMPOSES.items()
        if w in rows
        and rows[w].kind == "multimodal"
        and text in rows
        and rows[text].status == "verified"
        and rows[w].status != "verified"
        and w not in KNOWN
        and "torchaudio" not in rows[w].reason
        and "Transformers modeling backend" not in rows[w].reason
        and "remote code" not in rows[w].reason
    ]
    assert not missed, missed


def test_alpamayo2_super_is_planned_on_0_33_only(tmp_path: Path) -> None:
    """Alpamayo 2 Super through its Qwen3-VL text model (``vlm_config.text_config``) on 0.33.0; the
    releases whose registry lacks it refuse it as vLLM does."""
    from click.testing import CliRunner

    from dryboot.cli import cli

    row = {r.architecture: r for r in architecture_table("0.33.0")}["Alpamayo2Super"]
    assert row.status == "verified", row.reason
    assert "Alpamayo2Super" not in {r.architecture for r in architecture_table("0.32.0")}
    path = str(TINY / "Alpamayo2Super.json")
    base = ["plan", "--model", path, "--kv-cache-memory-bytes", "2000000000", "--max-model-len", "4096"]
    ok = CliRunner().invoke(cli, [*base, "--vllm-version", "0.33.0"])
    # 3 layers, K and V, 2 KV heads of 128, bfloat16: 3,072 B a token
    assert ok.exit_code == 0 and "one 4,096-token request needs 12,582,912 B" in " ".join(ok.output.split()), ok.output
    for version in ("0.28.0", "0.32.0"):
        res = CliRunner().invoke(cli, [*base, "--vllm-version", version, "--trust-remote-code"])
        said = " ".join(res.output.split())
        # the release reads no alpamayo2_super config class: refused as vLLM refuses it (the
        # registry's lack of the class comes after)
        assert res.exit_code == 2 and "model type `alpamayo2_super` but Transformers does not recognize" in said, said


@pytest.mark.parametrize("version", ["0.28.0", "0.33.0"])
def test_every_refused_wrapper_of_a_planned_text_model_is_backed_by_a_record(version: str) -> None:
    """Issue 37's done-when: over the release's registry, every multimodal wrapper whose composed
    text model is planned is planned, or refused with vLLM's recorded engine start on a tiny config
    of it (``tests/fidelity/data/wrappers/vllm-<release>.json``) failing, or refused as remote code
    or as served by the Transformers modeling backend (what vLLM itself does without the
    checkpoint's Python files, or without a model class of its own), or as a wrapper of a text
    model planned on another release only."""
    rows = {r.architecture: r for r in architecture_table(version)}
    planned = {a for a, r in rows.items() if r.status == "verified"}
    over = {w for w, text in COMPOSES.items() if w in rows and text in planned} | _refused_over_planned(version)
    record = json.loads((TINY.parent / "wrappers" / f"vllm-{version}.json").read_text())["cases"]
    unbacked = []
    for w in sorted(over):
        if rows[w].status == "verified":
            continue
        reason = rows[w].reason
        if "Transformers modeling backend" in reason or ("remote code" in reason and w not in RECORDED):
            continue
        cases = RECORDED.get(w, ())
        if not cases or any(record[c]["vllm"].get("ok") for c in cases):
            unbacked.append(w)
    assert not unbacked, f"vLLM {version}: refused without a recorded vLLM failure: {unbacked}"


def _plan(tmp_path: Path, config: dict[str, Any], *flags: str) -> tuple[int, str]:
    from click.testing import CliRunner

    from dryboot.cli import cli

    path = tmp_path / "config.json"
    path.write_text(json.dumps(config))
    res = CliRunner().invoke(cli, ["plan", "--model", str(path), "--kv-cache-memory-bytes", "1G", *flags])
    return res.exit_code, res.output


@pytest.mark.parametrize(
    "architecture",
    [
        "DeepseekVLV2ForCausalLM",
        "OpenVLAForActionPrediction",
        "Gemma3nForConditionalGeneration",
        "FunASRForConditionalGeneration",
        "MiDashengLMModel",
    ],
)
def test_the_timm_and_torchaudio_wrappers_are_planned(architecture: str, tmp_path: Path) -> None:
    """Issue 37: recorded with timm (`boot-env --with-mm-extras`) or the engine start's torchaudio
    stand-in, now verified on every release's table."""
    for version in RELEASES:
        rows = {r.architecture: r for r in architecture_table(version)}
        if architecture in rows:
            assert rows[architecture].status == "verified", (version, rows[architecture].reason)
    code, out = _plan(tmp_path, json.loads((TINY / f"{architecture}.json").read_text()))
    assert code == 0, out


def test_kanana_v_is_refused_for_its_remote_config() -> None:
    row = {r.architecture: r for r in architecture_table("0.28.0")}["KananaVForConditionalGeneration"]
    assert row.status == "refused" and "remote code" in row.reason and "kanana-1.5-v" in row.reason


def test_funasr_refuses_pipeline_parallelism_and_other_text_models(tmp_path: Path) -> None:
    config = json.loads((TINY / "FunASRForConditionalGeneration.json").read_text())
    code, out = _plan(tmp_path, config, "-pp", "2")
    assert code == 2 and "SupportsPP" in out, out
    code, out = _plan(tmp_path, {**config, "model_type": "qwen2"})
    assert code == 2, out


def test_midashenglm_audio_heads_must_split(tmp_path: Path) -> None:
    # the tiny config's Dasheng encoder has 4 heads: TP 8 cannot split them (vLLM asserts building it)
    config = json.loads((TINY / "MiDashengLMModel.json").read_text())
    code, out = _plan(tmp_path, config, "-tp", "8")
    assert code == 2 and "audio_encoder_config.num_heads" in out, out

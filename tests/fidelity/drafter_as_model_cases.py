"""The cases of ``data/drafter-as-model/``: every speculative-decoding class of a release's registry
(``_SPECULATIVE_DECODING_MODELS``) given as the model of its own (``vllm serve DIR`` on a checkpoint whose
``architectures`` names the drafter class), shared by the recorder and the test (issue 37).

Each class runs on a stand-in config: the tiny config of the target it drafts for
(``data/architectures/<target>.json``) with ``architectures`` naming the drafter and one MTP layer where
the class reads ``num_nextn_predict_layers`` (said per class in :data:`STAND_INS`). No published drafter
checkpoint is read: the drafter's own layers do not decide how vLLM answers (see ``docs/speculative.md``).
"""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))

import e2e_harness as H

DATA = Path(__file__).resolve().parent / "data" / "drafter-as-model"
TINY = Path(__file__).resolve().parent / "data" / "architectures"
#: the flag set every case runs under (a short length: the EAGLE-3 stand-ins keep 2,048 positions)
ARGV = ["--kv-cache-memory-bytes", "2000000000", "--max-model-len", "1024"]

#: drafter class -> (the tiny config it is built from, the top-level keys set on it, the text-config keys set)
STAND_INS: dict[str, tuple[str, dict[str, Any], dict[str, Any]]] = {
    "ExtractHiddenStatesModel": ("LlamaForCausalLM", {}, {}),
    "MedusaModel": ("LlamaForCausalLM", {}, {}),
    "MiMoMTPModel": ("Qwen2ForCausalLM", {"num_nextn_predict_layers": 1}, {}),
    "MiMoV2MTPModel": ("MiMoV2FlashForCausalLM", {"num_nextn_predict_layers": 1}, {}),
    "MiMoV2OmniMTPModel": ("MiMoV2FlashForCausalLM", {"num_nextn_predict_layers": 1}, {}),
    "EagleCohereForCausalLM": ("CohereForCausalLM", {}, {}),
    "EagleLlamaForCausalLM": ("EagleLlamaForCausalLM", {}, {}),
    "EagleLlama4ForCausalLM": ("Llama4ForCausalLM", {}, {}),
    "EagleMiniCPMForCausalLM": ("LlamaForCausalLM", {}, {}),
    "EagleMistralForCausalLM": ("MistralForCausalLM", {}, {}),
    "EagleMistralLarge3ForCausalLM": ("MistralLarge3ForCausalLM", {}, {}),
    "PEagleDraftModel": ("LlamaForCausalLMEagle3", {}, {}),
    "PeagleLlamaForCausalLM": ("LlamaForCausalLMEagle3", {}, {}),
    "PeagleQwen3ForCausalLM": ("Eagle3Qwen3ForCausalLM", {}, {}),
    "LlamaForCausalLMEagle3": ("LlamaForCausalLMEagle3", {}, {}),
    "Eagle3LlamaForCausalLM": ("Eagle3LlamaForCausalLM", {}, {}),
    "Eagle3MiniMaxM2ForCausalLM": ("Eagle3MiniMaxM2ForCausalLM", {}, {}),
    "Eagle3Qwen2_5vlForCausalLM": ("Eagle3Qwen2_5vlForCausalLM", {}, {}),
    "Eagle3Qwen3vlForCausalLM": ("Eagle3Qwen3vlForCausalLM", {}, {}),
    "Eagle3Qwen3ForCausalLM": ("Eagle3Qwen3ForCausalLM", {}, {}),
    "Eagle3DeepseekV2ForCausalLM": ("Eagle3DeepseekV2ForCausalLM", {}, {}),
    "Eagle3DeepseekV3ForCausalLM": ("Eagle3DeepseekV3ForCausalLM", {}, {}),
    "EagleDeepSeekMTPModel": ("DeepseekV3ForCausalLM", {"num_nextn_predict_layers": 1}, {}),
    "DFlashDraftModel": ("DFlashDraftModel", {}, {}),
    "DFlash2DraftModel": ("DFlashDraftModel", {}, {}),
    "DFlash2BeamDraftModel": ("DFlashDraftModel", {}, {}),
    "LiLiCorrDraftModel": ("DFlashDraftModel", {}, {}),
    "MuseGlimmerAssistantModel": ("DFlashDraftModel", {}, {}),
    "DFlashMuseGlimmerAssistantModel": ("DFlashDraftModel", {}, {}),
    "Qwen3XPressModel": ("DFlashDraftModel", {}, {}),
    "DFlashQwen3XPressModel": ("DFlashDraftModel", {}, {}),
    "Qwen3DSparkModel": ("DFlashDraftModel", {}, {}),
    "Qwen3OmniDSparkModel": ("DFlashDraftModel", {}, {}),
    "DFlashLagunaForCausalLM": ("LagunaForCausalLM", {}, {}),
    "Gemma4DSparkModel": ("Gemma4ForCausalLM", {}, {}),
    "DSparkDraftModel": ("DeepseekV4ForCausalLM", {"num_nextn_predict_layers": 1}, {}),
    "DSparkV41DraftModel": ("DeepseekV4ForCausalLM", {"num_nextn_predict_layers": 1}, {}),
    "K3DSparkModel": ("KimiK3ForConditionalGeneration", {}, {"num_nextn_predict_layers": 1}),
    "DeepSeekMTPModel": ("DeepseekV3ForCausalLM", {"num_nextn_predict_layers": 1}, {}),
    "DeepseekV32MTPModel": ("DeepseekV32ForCausalLM", {"num_nextn_predict_layers": 1}, {}),
    "DeepSeekV4MTPModel": ("DeepseekV4ForCausalLM", {"num_nextn_predict_layers": 1}, {}),
    "MiniMaxM3MTP": ("MiniMaxM3SparseForCausalLM", {"num_nextn_predict_layers": 1}, {}),
    "InklingMTPModel": ("InklingForCausalLM", {"num_nextn_predict_layers": 1}, {}),
    "Gemma4MTPModel": ("Gemma4MTPModel", {}, {}),
    "ErnieMTPModel": ("Ernie4_5_MoeForCausalLM", {"num_nextn_predict_layers": 1}, {}),
    "ExaoneMoeMTP": ("ExaoneMoeForCausalLM", {"num_nextn_predict_layers": 1}, {}),
    "NemotronHMTPModel": ("NemotronHForCausalLM", {"num_nextn_predict_layers": 1}, {}),
    "LongCatFlashMTPModel": (
        "LongcatFlashForCausalLM",
        {"num_nextn_predict_layers": 1, "mla_scale_q_lora": True, "mla_scale_kv_lora": True},
        {},
    ),
    "Glm4MoeMTPModel": ("Glm4MoeForCausalLM", {"num_nextn_predict_layers": 1}, {}),
    "Glm4MoeLiteMTPModel": ("Glm4MoeLiteForCausalLM", {"num_nextn_predict_layers": 1}, {}),
    "GlmOcrMTPModel": ("GlmOcrForConditionalGeneration", {}, {"num_nextn_predict_layers": 1}),
    "OpenPanguMTPModel": ("DeepseekV3ForCausalLM", {"num_nextn_predict_layers": 1}, {}),
    "Qwen3NextMTP": ("Qwen3NextForCausalLM", {"num_nextn_predict_layers": 1}, {}),
    "Qwen3_5MTP": ("Qwen3_5ForCausalLM", {"mtp_num_hidden_layers": 1}, {}),
    "Qwen3_5MoeMTP": ("Qwen3_5MoeForCausalLM", {"mtp_num_hidden_layers": 1}, {}),
    "InternS2MobiusMTP": ("Qwen3_5ForCausalLM", {"mtp_num_hidden_layers": 1}, {}),
    "Qwen4ExpMTP": ("Qwen4ExpForCausalLM", {"mtp_num_hidden_layers": 1}, {}),
    "Step3p5MTP": ("Step3p5ForCausalLM", {"num_nextn_predict_layers": 1}, {}),
    "HYV4MTPModel": ("HYV4ForCausalLM", {"num_nextn_predict_layers": 1}, {}),
    "HYV3MTPModel": ("HYV3ForCausalLM", {"num_nextn_predict_layers": 1}, {}),
    "Step5MTP": (
        "Step5ForCausalLM",
        {
            "num_nextn_predict_layers": 1,
            "layer_types": [
                "sliding_attention",
                "full_attention",
                "sliding_attention",
                "full_attention",
                "full_attention",
            ],
        },
        {},
    ),
    "KimiK3MTPModel": ("KimiK3ForConditionalGeneration", {}, {"num_nextn_predict_layers": 1}),
    # the wrapper's config (exaone4_5_mtp.py reads text_config, and vocab_size beside it)
    "Exaone4_5_MTP": (
        "Exaone4_5_ForConditionalGeneration",
        {"vocab_size": 1024, "tie_word_embeddings": False},
        {"num_nextn_predict_layers": 1},
    ),
    # a standalone draft config (MuseSparkDSparkConfig: Muse Spark's text config, model_type muse_spark_dspark)
    "MuseSparkDSparkModel": ("MuseSparkForConditionalGeneration", {}, {}),
}
#: drafter class -> the model_type its config is read as, where the stand-in is its base's text_config alone
TEXT_AS_ROOT = {"MuseSparkDSparkModel": "muse_spark_dspark"}
#: drafter classes not recorded, and why (dryboot refuses them by name: ``refusals.py``)
NOT_RECORDED = {
    "Glm5NextMTPModel": "its MTP layer (an MLA layer with the kpool indexer's caches) is not modelled",
    "Dots3NoteMTPModel": "its target (Dots3NoteForCausalLM) is being taught elsewhere (issue 37)",
    "BailingMoeV3MTPModel": "its target's config class lacks keys its model class reads: no stand-in",
    "BailingMoeV25MTPModel": "its target (BailingMoeV2_5ForCausalLM) is refused (linear-attention state): no stand-in",
    "ParseAuxMTPModel": "its target (RadioMBartPrefixForCausalLM, config.decoder) is refused: no stand-in",
}


def drafter_classes(version: str) -> list[str]:
    """The speculative-decoding classes of vLLM ``version``'s registry (dryboot's shipped table)."""
    from dryboot.vllm import DATA as REGISTRY_DATA  # at call: after conftest's sys.path

    table = json.loads((REGISTRY_DATA / f"vllm-{version}-architectures.json").read_text())
    return sorted(a for a, row in table.items() if row["kind"] == "speculative-decoding")


def case(architecture: str) -> H.Case:
    """``architecture`` given as the model, on its stand-in config, under :data:`ARGV`."""
    base, top, text = STAND_INS[architecture]
    cfg = json.loads((TINY / f"{base}.json").read_text())
    if architecture in TEXT_AS_ROOT:
        cfg = {**cfg["text_config"], "model_type": TEXT_AS_ROOT[architecture], "torch_dtype": cfg.get("torch_dtype")}
    cfg["architectures"] = [architecture]
    cfg.update(top)
    if text:
        cfg["text_config"] = {**cfg["text_config"], **text}
    work = H.default_workdir() / "drafter-as-model" / architecture
    work.mkdir(parents=True, exist_ok=True)
    extra = TINY / "files" / base
    if extra.is_dir():
        for f in sorted(extra.iterdir()):
            (work / f.name).write_bytes(f.read_bytes())
    (work / "config.json").write_text(json.dumps(cfg, indent=1) + "\n")
    return H.Case(
        id=architecture, family="drafter-as-model", model=str(work), argv=list(ARGV), source=f"stand-in:{base}"
    )


#: configs naming a drafter class that vLLM's config class renames (``OWN_ARCHITECTURES``): served, as the class
#: the config class names. id -> (release, the tiny config, the drafter class it names)
RENAMED = {"muse-spark-naming-dspark": ("0.33.0", "MuseSparkForConditionalGeneration", "MuseSparkDSparkModel")}


def renamed_case(case_id: str) -> H.Case:
    """:data:`RENAMED`'s ``case_id``: the tiny config naming the drafter class, under :data:`ARGV`."""
    _, base, architecture = RENAMED[case_id]
    cfg = {**json.loads((TINY / f"{base}.json").read_text()), "architectures": [architecture]}
    work = H.default_workdir() / "drafter-as-model" / case_id
    work.mkdir(parents=True, exist_ok=True)
    (work / "config.json").write_text(json.dumps(cfg, indent=1) + "\n")
    return H.Case(id=case_id, family="drafter-as-model", model=str(work), argv=list(ARGV), source=f"stand-in:{base}")


def record_path(version: str) -> Path:
    return DATA / f"vllm-{version}.json"


def recorded(version: str) -> dict[str, Any]:
    """class -> vLLM ``version``'s answer (``ok``, ``stage``, ``error``), as recorded."""
    path = record_path(version)
    cases: dict[str, Any] = json.loads(path.read_text())["cases"] if path.exists() else {}
    return cases


def recorded_releases() -> list[str]:
    return sorted(p.stem.removeprefix("vllm-") for p in DATA.glob("vllm-*.json"))

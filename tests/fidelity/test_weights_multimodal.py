"""The multimodal wrappers of ``model_executor/models/`` (issue 33): their towers dropped by
``--limit-mm-per-prompt`` as vLLM drops them, and what they cannot size refused by name.

Every recorded case of these wrappers (``data/weights/recorded.json``: vLLM 0.28.0's model on the
meta device for each tiny config, TP 1/2/4/8, pipeline stages, expert parallelism,
``--language-model-only``) is checked byte for byte by ``test_weights.py``; here the limits that
are not a recorded flag set are checked against the recorded ``--language-model-only`` figures
(vLLM's ``get_limit_per_prompt`` answers 0 for every modality under ``--language-model-only``, so
a tower marked for a modality is dropped alike by either flag).
"""

from __future__ import annotations

import importlib
import json
from pathlib import Path
from typing import Any

import pytest

from dryboot.errors import InputError
from dryboot.vllm.model_executor.model_loader.weights import Parallel, families, rank_weights

#: the multimodal wrappers added for issue 33 (towers and projectors over the text families)
MULTIMODAL = tuple(
    importlib.import_module(f"dryboot.vllm.model_executor.models.{name}")
    for name in (
        "aria",
        "bagel",
        "blip2",
        "chameleon",
        "cheers",
        "deepseek_ocr",
        "funaudiochat",
        "glm4v",
        "glm_ocr",
        "glmasr",
        "granite_speech",
        "kimi_k25",
        "kimi_vl",
        "lfm2_vl",
        "minicpmv4_6",
        "moss_transcribe_diarize",
        "ovis",
        "paddleocr_vl",
        "qianfan_ocr",
        "qwen2_5_omni_thinker",
        "qwen3_asr",
        "qwen3_omni_moe_thinker",
        "ultravox",
    )
)
HERE = Path(__file__).resolve().parent
ARCHS = HERE / "data" / "architectures"
RECORDED = json.loads((HERE / "data" / "weights" / "recorded.json").read_text())["cases"]

#: the wrappers of ``models.MULTIMODAL`` and GLM-4.5V (in GLM-4.1V's module, as in vLLM)
WRAPPERS = sorted({*(arch for module in MULTIMODAL for arch in module.FAMILIES), "Glm4vMoeForConditionalGeneration"})
#: wrappers whose --language-model-only case vLLM serves (a model class without pipeline
#: parallelism is still served at TP 2)
LM_ONLY = [a for a in WRAPPERS if f"arch--{a} --tensor-parallel-size 2 --language-model-only" in RECORDED]


#: wrappers with a tower per set of modalities (Qwen-Omni: audio; image and video)
TOWER_PER_MODALITY = {
    "Qwen2_5OmniForConditionalGeneration",
    "Qwen2_5OmniModel",
    "Qwen3OmniMoeForConditionalGeneration",
}
PARTIAL = sorted(cid for cid, row in RECORDED.items() if "--limit-mm-per-prompt" in row["argv"])


def test_partial_limits_are_recorded() -> None:
    """vLLM's own figures for the limits that drop one tower of several (Qwen-Omni) or none (an
    image / video limit on Kimi-K2.5, whose tower is marked for ``vision_chunk``)."""
    assert len(PARTIAL) >= 8
    for cid in PARTIAL:
        row = RECORDED[cid]
        argv = row["argv"]
        arch = row["config"][len("arch--") :]
        limits = json.loads(argv[argv.index("--limit-mm-per-prompt") + 1])
        w = rank_weights(_config(arch), Parallel(tp=2), limit_mm_per_prompt=limits)
        assert (w.param_bytes, w.buffer_bytes, w.allocated_bytes) == (
            row["param_bytes"],
            row["buffer_bytes"],
            row["allocated_bytes"],
        )


def _config(arch: str) -> dict[str, Any]:
    return dict(json.loads((ARCHS / f"{arch}.json").read_text()))


def test_every_wrapper_is_recorded_with_and_without_its_tower() -> None:
    assert len(WRAPPERS) >= 29
    missing = [a for a in WRAPPERS if a not in LM_ONLY]
    assert missing == []


@pytest.mark.parametrize("arch", LM_ONLY)
def test_limit_mm_per_prompt_zero_drops_the_tower(arch: str) -> None:
    """Every modality of the wrapper limited to 0: vLLM's figure without the tower; one left: the
    whole model's."""
    config = _config(arch)
    modalities = families()[arch].modalities
    lm_only = RECORDED[f"arch--{arch} --tensor-parallel-size 2 --language-model-only"]
    whole = RECORDED[f"arch--{arch} --tensor-parallel-size 2"]
    assert lm_only["ok"] and whole["ok"]
    w = rank_weights(config, Parallel(tp=2), limit_mm_per_prompt=dict.fromkeys(modalities, 0))
    assert (w.param_bytes, w.buffer_bytes) == (lm_only["param_bytes"], lm_only["buffer_bytes"])
    if len(modalities) > 1 and arch not in TOWER_PER_MODALITY:
        # one tower for all: kept while a modality is left (vLLM's partial limits of the
        # wrappers with a tower per modality are recorded flag sets, checked by test_weights.py)
        w = rank_weights(config, Parallel(tp=2), limit_mm_per_prompt={modalities[0]: 0})
        assert (w.param_bytes, w.buffer_bytes) == (whole["param_bytes"], whole["buffer_bytes"])


def _set(config: dict[str, Any], path: str, value: Any) -> dict[str, Any]:
    node = config
    *parents, leaf = path.split(".")
    for key in parents:
        node = node[key]
    node[leaf] = value
    return config


@pytest.mark.parametrize(
    ("arch", "path", "value", "named"),
    [
        ("UltravoxModel", "audio_config.model_type", "hubert", "hubert encoder is not modelled"),
        ("UltravoxModel", "text_config.model_type", "phi3", "phi3 language model is not modelled"),
        ("Ovis", "visual_tokenizer_config.backbone_config.model_type", "siglip_vision_model", "backbone"),
        ("BagelForConditionalGeneration", "vit_config.vision_use_head", True, "pooling head"),
        ("QianfanOCRForConditionalGeneration", "vision_config.qk_normalization", True, "q/k norms"),
        ("GlmAsrForConditionalGeneration", "audio_config.num_key_value_heads", 2, "grouped KV heads"),
        ("DeepseekOCRForCausalLM", "projector_config.projector_type", "mlp_gelu", "mlp_gelu projector"),
        ("DeepseekOCR2ForCausalLM", "language_config.architectures", ["LlamaForCausalLM"], "LlamaForCausalLM"),
        ("Blip2ForConditionalGeneration", "text_config.model_type", "t5", "t5 language model"),
        ("GLM4VForCausalLM", "rmsnorm", False, "LayerNorms"),
        ("GLM4VForCausalLM", "post_layer_norm", False, "final norm"),
    ],
)
def test_unmodelled_module_refused_by_name(arch: str, path: str, value: Any, named: str) -> None:
    config = _set(_config(arch), path, value)
    with pytest.raises(InputError, match=named):
        rank_weights(config, Parallel())


@pytest.mark.parametrize("arch", ["QianfanOCRForConditionalGeneration", "KimiK25ForConditionalGeneration"])
def test_heads_tp_does_not_divide_replicate_the_tower(arch: str) -> None:
    """InternViT's attention and Kimi-K2.5's MoonViT blocks fall back to replication where TP does
    not divide their heads (TP 8 over 4 heads), as vLLM serves them; Kimi-VL's MoonViT fails."""
    row = RECORDED[f"arch--{arch} --tensor-parallel-size 8"]
    w = rank_weights(_config(arch), Parallel(tp=8))
    assert row["ok"] and (w.param_bytes, w.allocated_bytes) == (row["param_bytes"], row["allocated_bytes"])
    assert not RECORDED["arch--KimiVLForConditionalGeneration --tensor-parallel-size 8"]["ok"]
    with pytest.raises(InputError, match="num_attention_heads"):
        rank_weights(_config("KimiVLForConditionalGeneration"), Parallel(tp=8))


#: where each wrapper keeps its language model's config
TEXT_KEYS = {"Ovis": "llm_config", "BagelForConditionalGeneration": "llm_config"}
TEXT_KEYS.update(dict.fromkeys(("DeepseekOCRForCausalLM", "DeepseekOCR2ForCausalLM"), "language_config"))
TEXT_KEYS.update(
    dict.fromkeys(
        (
            "Qwen2_5OmniForConditionalGeneration",
            "Qwen2_5OmniModel",
            "Qwen3OmniMoeForConditionalGeneration",
            "Qwen3ASRForConditionalGeneration",
            "Qwen3ASRRealtimeGeneration",
        ),
        "thinker_config",
    )
)
#: wrappers whose text model is the config's own fields (no sub-config to lose), and GLM-4.5V,
#: composed as GLM-4.1V is (a flat config read as its text model)
FLAT = {"GLM4VForCausalLM", "ChameleonForConditionalGeneration", "Glm4vMoeForConditionalGeneration"}


@pytest.mark.parametrize("arch", [a for a in WRAPPERS if a not in FLAT])
def test_wrapper_without_its_text_config_refused(arch: str) -> None:
    """A published wrapper that names its language model by repository (Ultravox's
    ``text_model_id``) instead of carrying its config: vLLM would build another config than this
    file's; refused in one line, never sized from the wrapper's own top-level fields."""
    config = _config(arch)
    config.pop(TEXT_KEYS.get(arch, "text_config"))
    with pytest.raises(InputError):
        rank_weights(config, Parallel())


def test_published_kimi_k25_unquantized_matches_vllm() -> None:
    """The published Kimi-K2.5 config (its ``vt_*`` vision keys are not fields of vLLM's vision
    config: MoonViT's defaults apply, as in vLLM), without its quantization: vLLM's figures."""
    doc = json.loads((HERE / "data" / "weights" / "published-unquantized-kimi-k25.json").read_text())
    config = json.loads((HERE.parents[1] / doc["config"]).read_text())
    config.pop("quantization_config", None)
    config["text_config"].pop("quantization_config", None)
    for argv, want in doc["cases"].items():
        par = Parallel(tp=int(argv.split()[1]), expert_parallel="--enable-expert-parallel" in argv)
        w = rank_weights(config, par)
        assert (w.param_bytes, w.buffer_bytes, w.allocated_bytes) == (
            want["param_bytes"],
            want["buffer_bytes"],
            want["allocated_bytes"],
        )


EMPTIED = json.loads((HERE / "data" / "weights" / "empty-tower-configs.json").read_text())["cases"]


@pytest.mark.parametrize("case", sorted(EMPTIED))
def test_tower_config_defaults_match_vllm(case: str) -> None:
    """A tower config left empty takes its config class's defaults, as vLLM's does: the same
    figures (refused where vLLM fails)."""
    arch, key = case.split()
    config = _config(arch)
    config[key] = {k: v for k, v in config[key].items() if k == "model_type"}
    for flags, want in EMPTIED[case].items():
        kwargs = {"language_model_only": "--language-model-only" in flags}
        if "error" in want:
            with pytest.raises(InputError):
                rank_weights(config, Parallel(), **kwargs)
            continue
        w = rank_weights(config, Parallel(), **kwargs)
        assert (w.param_bytes, w.buffer_bytes, w.allocated_bytes) == (
            want["param_bytes"],
            want["buffer_bytes"],
            want["allocated_bytes"],
        )

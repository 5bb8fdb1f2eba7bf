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
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from test_weights import _attr_bytes

from dryboot.errors import InputError
from dryboot.vllm.model_executor.model_loader.weights import Parallel, families, rank_weights
from dryboot.vllm.model_executor.models import granite4_vision
from dryboot.vllm.versions import VersionRules

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
        "granite4_vision",
        "granite_speech",
        "hunyuan_vision",
        "kimi_k25",
        "kimi_vl",
        "lfm2_vl",
        "lightonocr",
        "llava_next_video",
        "llava_onevision",
        "minicpmv4_6",
        "mistral3",
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
        config = _config(arch)
        tokens = row.get("max_num_batched_tokens", 8192)
        w = rank_weights(config, Parallel(tp=2), limit_mm_per_prompt=limits, max_num_batched_tokens=tokens)
        assert (w.param_bytes, w.buffer_bytes - _attr_bytes(config, row), w.allocated_bytes) == (
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
    tokens = lm_only.get("max_num_batched_tokens", 8192)
    # Granite-4-Vision's deepstack feature buffers: a list attribute (in vLLM's allocated bytes only)
    listed = (
        granite4_vision.deepstack_buffer_bytes(config, "0.28.0", tokens, 2)
        if arch == "Granite4VisionForConditionalGeneration"
        else 0
    )
    w = rank_weights(
        config, Parallel(tp=2), limit_mm_per_prompt=dict.fromkeys(modalities, 0), max_num_batched_tokens=tokens
    )
    assert (w.param_bytes, w.buffer_bytes - listed) == (lm_only["param_bytes"], lm_only["buffer_bytes"])
    if len(modalities) > 1 and arch not in TOWER_PER_MODALITY:
        # one tower for all: kept while a modality is left (vLLM's partial limits of the
        # wrappers with a tower per modality are recorded flag sets, checked by test_weights.py)
        w = rank_weights(config, Parallel(tp=2), limit_mm_per_prompt={modalities[0]: 0}, max_num_batched_tokens=tokens)
        assert (w.param_bytes, w.buffer_bytes - listed) == (whole["param_bytes"], whole["buffer_bytes"])


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
        ("Mistral3ForConditionalGeneration", "vision_config.model_type", "siglip_vision_model", "siglip_vision_model"),
        ("Mistral3ForConditionalGeneration", "text_config.model_type", "gemma3_text", "gemma3_text"),
        (
            "Mistral3ForConditionalGeneration",
            "quantization_config",
            {"quant_method": "fp8", "weight_block_size": [128, 128]},
            "quantized",
        ),
        ("LlavaOnevisionForConditionalGeneration", "quantization_config", {"quant_method": "fp8"}, "quantized"),
        ("LlavaOnevisionForConditionalGeneration", "vision_config.model_type", "qwen2_vl", "qwen2_vl' tower"),
        ("LlavaNextVideoForConditionalGeneration", "spatial_pool_mode", "conv", "average or max"),
        ("Granite4VisionForConditionalGeneration", "downsample_rate", "4:8", "downsample_rate"),
        ("Granite4VisionForConditionalGeneration", "deepstack_layer_map", [], "deepstack_layer_map"),
        ("Granite4VisionForConditionalGeneration", "text_config.model_type", "llama", "llama' language model"),
        ("HunYuanVLForConditionalGeneration", "use_cla", True, "use_cla"),
        ("HunYuanVLForConditionalGeneration", "num_experts", 8, "MoE"),
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
TEXT_KEYS.update(
    dict.fromkeys(("DeepseekOCRForCausalLM", "DeepseekOCR2ForCausalLM", "UnlimitedOCRForCausalLM"), "language_config")
)
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
FLAT = {
    "GLM4VForCausalLM",
    "ChameleonForConditionalGeneration",
    "Glm4vMoeForConditionalGeneration",
    "HunYuanVLForConditionalGeneration",
}


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
    # Granite-4-Vision's deepstack feature buffers (a list attribute): recorded before the recorder
    # counted list-held tensors, so neither figure has them (8192 tokens, bf16)
    listed = granite4_vision.deepstack_buffer_bytes(config, "0.28.0", 8192, 2) if arch.startswith("Granite4") else 0
    for flags, want in EMPTIED[case].items():
        kwargs: dict[str, Any] = {
            "language_model_only": "--language-model-only" in flags,
            "max_num_batched_tokens": 8192,
        }
        if "error" in want:
            with pytest.raises(InputError):
                rank_weights(config, Parallel(), **kwargs)
            continue
        w = rank_weights(config, Parallel(), **kwargs)
        assert (w.param_bytes, w.buffer_bytes - listed, w.allocated_bytes - listed) == (
            want["param_bytes"],
            want["buffer_bytes"],
            want["allocated_bytes"],
        )


#: vLLM 0.27.1's and 0.30.0-0.33.0's own figures for the wrappers added with the Pixtral tower
#: (``RECORD_WEIGHTS_OUT=... record_weights.py --tiny ARCH...`` in each release's boot environment;
#: 0.27.1's in ``recorded-0.27.1.json`` beside that release's other cases)
PER_RELEASE_ARCHS = (
    "Mistral3ForConditionalGeneration",
    "LightOnOCRForConditionalGeneration",
    "LlavaOnevisionForConditionalGeneration",
    "LlavaNextVideoForConditionalGeneration",
    "Granite4VisionForConditionalGeneration",
    "HunYuanVLForConditionalGeneration",
)
PER_RELEASE = {
    version: json.loads((HERE / "data" / "weights" / name).read_text())
    for version, name in (
        ("0.27.1", "recorded-0.27.1.json"),
        ("0.30.0", "recorded-0.30.0-wrappers.json"),
        ("0.31.0", "recorded-0.31.0-wrappers.json"),
        ("0.32.0", "recorded-0.32.0-wrappers.json"),
        ("0.33.0", "recorded-0.33.0-wrappers.json"),
    )
}
#: published configs of these wrappers (``data/weights/configs/``) recorded per release
PER_RELEASE_PUBLISHED = ("mistralai--Devstral-Small-2-24B-Instruct-2512",)
PER_RELEASE_CASES = sorted(
    (version, cid)
    for version, doc in PER_RELEASE.items()
    for cid, row in doc["cases"].items()
    if row["config"][len("arch--") :] in PER_RELEASE_ARCHS or row["config"] in PER_RELEASE_PUBLISHED
)


def _config_of(row: dict[str, Any]) -> dict[str, Any]:
    if row["config"].startswith("arch--"):
        return _config(row["config"][len("arch--") :])
    return dict(json.loads((HERE / "data" / "weights" / "configs" / row["config"] / "config.json").read_text()))


def test_per_release_records_are_the_release() -> None:
    assert {v: doc["vllm"] for v, doc in PER_RELEASE.items()} == {v: v for v in PER_RELEASE}
    assert len(PER_RELEASE_CASES) >= 3 * 42 + 2 * 7


@pytest.mark.parametrize(("version", "cid"), PER_RELEASE_CASES)
def test_wrapper_matches_each_release(version: str, cid: str) -> None:
    """Every stage's parameter, buffer and allocated bytes as the release builds them (its Pixtral
    rotary buffers, 0.33's towers on the first pipeline stage only, Granite-4-Vision's spatial
    projectors on 0.33, Devstral-Small-2's fp8 tower), and the release's refusals (HunYuan-VL on
    0.27.1; through the Transformers backend on 0.30+ sized, test_weights_hunyuan_vl.py too)."""
    row = PER_RELEASE[version]["cases"][cid]
    argv = row["argv"]
    config = _config_of(row)
    tp = int(argv[argv.index("--tensor-parallel-size") + 1])
    pp = int(argv[argv.index("--pipeline-parallel-size") + 1]) if "--pipeline-parallel-size" in argv else 1
    lm_only = "--language-model-only" in argv
    tokens = row.get("max_num_batched_tokens", 8192)
    if not row["ok"]:
        with pytest.raises(InputError):
            for stage in range(pp):
                rank_weights(
                    config,
                    Parallel(tp=tp, pp=pp, pp_rank=stage, vllm_version=version),
                    language_model_only=lm_only,
                    max_num_batched_tokens=tokens,
                )
        return
    stages = row.get("stages") or [[row["param_bytes"], row["buffer_bytes"], row["allocated_bytes"]]]
    # Granite-4-Vision's deepstack feature buffers: a list attribute (in vLLM's allocated bytes only)
    listed = (
        granite4_vision.deepstack_buffer_bytes(config, version, tokens, 2)
        if config["architectures"][0] == "Granite4VisionForConditionalGeneration"
        else 0
    )
    got = []
    for stage in range(pp):
        w = rank_weights(
            config,
            Parallel(tp=tp, pp=pp, pp_rank=stage, vllm_version=version),
            language_model_only=lm_only,
            max_num_batched_tokens=tokens,
        )
        got.append([w.param_bytes, w.buffer_bytes - listed, w.allocated_bytes])
    assert got == stages


@pytest.mark.parametrize(
    ("version", "switch", "flipped", "arch"),
    [
        ("0.31.0", "pp_towers_first_stage", True, "Mistral3ForConditionalGeneration"),
        ("0.32.0", "pp_towers_first_stage", True, "Mistral3ForConditionalGeneration"),
        ("0.33.0", "pp_towers_first_stage", False, "Mistral3ForConditionalGeneration"),
    ],
)
def test_towers_per_stage_switch_is_needed(
    version: str, switch: str, flipped: bool, arch: str, flip_rules: Callable[..., VersionRules]
) -> None:
    """Flipped, the release's recorded pipeline stages of the wrapper no longer match."""
    cid = f"arch--{arch} --tensor-parallel-size 2 --pipeline-parallel-size 3"
    flip_rules(version, **{switch: flipped})
    with pytest.raises(AssertionError):
        test_wrapper_matches_each_release(version, cid)


def test_lighton_ocr_config_without_the_fields_vllm_reads_refused() -> None:
    """transformers' ``lighton_ocr`` config class defines neither field vLLM's class reads."""
    config = {**_config("LightOnOCRForConditionalGeneration"), "model_type": "lighton_ocr"}
    assert rank_weights(config, Parallel()).param_bytes > 0  # both given: read as Mistral3's
    config.pop("vision_feature_layer")
    with pytest.raises(InputError, match="vision_feature_layer"):
        rank_weights(config, Parallel())


VARIANTS = json.loads((HERE / "data" / "weights" / "llava-tower-variants.json").read_text())
VARIANT_CASES = sorted((v, cid) for v, cases in VARIANTS["releases"].items() for cid in cases)


def test_llava_variants_are_recorded() -> None:
    assert set(VARIANTS["releases"]) == {"0.28.0", "0.33.0"}
    assert len(VARIANT_CASES) == 2 * 4 * 7


@pytest.mark.parametrize(("version", "cid"), VARIANT_CASES)
def test_llava_with_pixtral_or_siglip_tower_matches_vllm(version: str, cid: str) -> None:
    """LLaVA / LLaVA-NeXT over a Pixtral (Pixtral-12B in the HF layout) or SigLIP tower, and a
    non-negative feature layer (that many layers built, as vLLM's ``get_layer_index``), per stage."""
    row = VARIANTS["releases"][version][cid]
    config = VARIANTS["configs"][cid.split()[0]]
    argv = row["argv"]
    tp = int(argv[argv.index("--tensor-parallel-size") + 1])
    pp = int(argv[argv.index("--pipeline-parallel-size") + 1]) if "--pipeline-parallel-size" in argv else 1
    lm_only = "--language-model-only" in argv
    stages = row.get("stages") or [[row["param_bytes"], row["buffer_bytes"], row["allocated_bytes"]]]
    got = []
    for stage in range(pp):
        par = Parallel(tp=tp, pp=pp, pp_rank=stage, vllm_version=version)
        w = rank_weights(config, par, language_model_only=lm_only)
        got.append([w.param_bytes, w.buffer_bytes, w.allocated_bytes])
    assert got == stages

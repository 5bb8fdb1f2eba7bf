"""The tiny configs that back vLLM 0.28.0's and 0.33.0's refusals of multimodal wrappers whose text model dryboot
plans (issue 37: NemotronH_Nano_VL_V2's class under its four names, MiMo-V2-Omni,
Step-3.7, MiniCPM-OCR, ERNIE-4.5-VL, Molmo2) and of the encoder-decoder classes still refused
(Cohere-Transcribe, Nemotron-Parse, Parse 3.5, FireRedLID), and the flags each is started with; and the tower cases
(:data:`TOWER_CASES`): tensor parallelism that does not divide a tower's heads, with and without
``--language-model-only`` / a zero ``--limit-mm-per-prompt``.

Each config (``data/wrappers/configs/<name>.json``) is the wrapper over the planned text model's
tiny config (``data/architectures/``), laid out as the published checkpoints are (their
``model_type``, where the text config sits). ``record_wrappers.py`` records what each release's
engine start does with them; ``test_wrappers_recorded.py`` checks that record against the refusals' words.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import remote_code_table as R

HERE = Path(__file__).resolve().parent
DATA = HERE / "data" / "wrappers"
CONFIGS = DATA / "configs"
VERSIONS = ("0.28.0", "0.33.0")


def record_path(version: str) -> Path:
    """Where release ``version``'s answers are recorded."""
    return DATA / f"vllm-{version}.json"


BASE = ["--kv-cache-memory-bytes", "4G", "--max-model-len", "8192"]

#: case id -> (config name, flags)
CASES: dict[str, tuple[str, list[str]]] = {
    name: (name, BASE)
    for name in (
        "nano-vl-v2-remote",
        "nano-vl-v2-omni",
        "nano-omni-v3",
        "super-omni-v3",
        "omni-v3",
        "mimo-v2-omni",
        "step3p7",
        "minicpm-ocr",
        "ernie45-vl-remote",
        "ernie45-vl-hf",
        "molmo2-remote",
        "molmo2-hf",
        "nemotron-parse-remote",
        "parse3-5-remote",
        "fireredlid",
    )
}

#: the wrappers planned through their text model on a config class of the checkpoint's own (issue 37):
#: case id -> (config name, flags); recorded served with --trust-remote-code (the checkpoint's Python
#: files beside config.json, :func:`files`) and refused without it
TRUST = ["--trust-remote-code"]
REMOTE_CASES: dict[str, tuple[str, list[str]]] = {
    # dots.ocr: a tiny config and one of the published sizes (rednote-hilab/dots.ocr's config.json
    # layout, its sizes as data/remote-code/dots.ocr/SOURCE says), each served on the checkpoint's
    # DotsOCRConfig and refused without --trust-remote-code
    # without --trust-remote-code first: the checkpoint's configuration_dots.py registers dots_ocr in
    # transformers' CONFIG_MAPPING once run, which would let a later case of the same oracle process
    # read the config without it
    "dots-ocr-tiny": ("dots-ocr-tiny", BASE),
    "dots-ocr-tiny-remote": ("dots-ocr-tiny", [*BASE, *TRUST]),
    "dots-ocr-sizes-remote": ("dots-ocr-sizes", [*BASE, *TRUST, "--tensor-parallel-size", "2"]),
}
CASES.update(REMOTE_CASES)


def files(name: str) -> Path | None:
    """The checkpoint's own config Python files that go beside config ``name`` (``None``: none): its
    architecture's directory in ``remote_code_table.DIRS`` (dots.ocr's for the ``dots-ocr-*`` configs)."""
    return R.directory((config(name).get("architectures") or [None])[0])


#: Cohere-Transcribe's decoder positions (transf_decoder.config_dict.max_sequence_length, 1024 in
#: the stand-in): vLLM derives max_model_len from its config class's max_position_embeddings (1024)
CASES["cohere-asr"] = ("cohere-asr", ["--kv-cache-memory-bytes", "4G", "--max-model-len", "1024"])

#: the tower-head cases (tensor parallelism not dividing a tower's attention heads, with and
#: without the flags that drop the tower): case id -> (config name, flags). Each config is a
#: planned wrapper's tiny config (``data/architectures/``) with its tower's heads set to 1
TOWER_TP = ["--tensor-parallel-size", "2"]
LMO = ["--language-model-only"]
TOWER_CASES: dict[str, tuple[str, list[str]]] = {
    "qwen4-exp-tower-1-head-tp2": ("qwen4-exp-tower-1-head", [*BASE, *TOWER_TP]),
    "qwen4-exp-tower-1-head-tp2-lmo": ("qwen4-exp-tower-1-head", [*BASE, *TOWER_TP, *LMO]),
    "qwen4-exp-tower-1-head-tp2-mm0": (
        "qwen4-exp-tower-1-head",
        [*BASE, *TOWER_TP, "--limit-mm-per-prompt", '{"image": 0, "video": 0}'],
    ),
    "aria-tower-1-head-tp2": ("aria-tower-1-head", [*BASE, *TOWER_TP]),
    "aria-tower-1-head-tp2-lmo": ("aria-tower-1-head", [*BASE, *TOWER_TP, *LMO]),
    "glmasr-tower-1-head-tp2": ("glmasr-tower-1-head", [*BASE, *TOWER_TP]),
    "glmasr-tower-1-head-tp2-lmo": ("glmasr-tower-1-head", [*BASE, *TOWER_TP, *LMO]),
    "glmasr-tower-1-head-tp2-mm0": ("glmasr-tower-1-head", [*BASE, *TOWER_TP, "--limit-mm-per-prompt", '{"audio": 0}']),
    # Bagel builds its SigLIP tower only under visual_und (a config key, not a flag)
    "bagel-tower-1-head-tp2": ("bagel-tower-1-head", [*BASE, *TOWER_TP]),
    "bagel-no-und-tower-1-head-tp2": ("bagel-no-und-tower-1-head", [*BASE, *TOWER_TP]),
}
CASES.update(TOWER_CASES)
#: (release, case id) of the tower cases vLLM serves: Qwen4-Exp's wrapper under
#: --language-model-only builds no vision tower (a StageMissingLayer in its place), nor Bagel's
#: class under visual_und false; every other tower is built on the meta device whatever the flags,
#: and asserts (0.28.0 has no Qwen4-Exp)
TOWER_SERVED = {
    ("0.33.0", "qwen4-exp-tower-1-head-tp2-lmo"),
    *((v, "bagel-no-und-tower-1-head-tp2") for v in VERSIONS),
}


def config(name: str) -> dict[str, Any]:
    """The tiny config ``name`` (``data/wrappers/configs/<name>.json``)."""
    data: dict[str, Any] = json.loads((CONFIGS / f"{name}.json").read_text())
    return data


def recorded(version: str) -> dict[str, dict[str, Any]]:
    """vLLM ``version``'s recorded answers, case id -> the recorded case (config, argv, vllm)."""
    doc: dict[str, Any] = json.loads(record_path(version).read_text())
    cases: dict[str, dict[str, Any]] = doc["cases"]
    return cases


#: case id -> (the wrapper, what vLLM's recorded error says, the words of dryboot's refusal that
#: name it); on every release of :data:`VERSIONS` whose registry has the wrapper
EXPECT: dict[str, tuple[str, str, str]] = {
    "nano-vl-v2-remote": ("NemotronH_Nano_VL_V2", "trust_remote_code=True", "a remote-code config class"),
    "nano-vl-v2-omni": ("NemotronH_Nano_VL_V2", "has no attribute 'patch_size'", "(patch_size, norm_mean"),
    "nano-omni-v3": ("NemotronH_Nano_Omni_Reasoning_V3", "has no attribute 'patch_size'", "(patch_size, norm_mean"),
    "super-omni-v3": ("NemotronH_Super_Omni_Reasoning_V3", "has no attribute 'patch_size'", "(patch_size, norm_mean"),
    "omni-v3": ("NemotronH_Omni_Reasoning_V3", "has no attribute 'patch_size'", "(patch_size, norm_mean"),
    "mimo-v2-omni": ("MiMoV2OmniForCausalLM", "trust_remote_code=True", "without --trust-remote-code"),
    "step3p7": (
        "Step3p7ForConditionalGeneration",
        "AmbiguousGlobalPerLayerAttributeError",
        "AmbiguousGlobalPerLayerAttributeError",
    ),
    # 0.33.0's transformers (<5.21) has no minicpm_ocr config class, nor has vLLM
    "minicpm-ocr": (
        "MiniCPMOcrForConditionalGeneration",
        "has model type `minicpm_ocr` but Transformers does not recognize",
        "model_type minicpm_ocr",
    ),
    # the published layout (model_type ernie4_5_moe_vl, an auto_map) and transformers' own
    # ernie4_5_vl_moe layout, whose vision config has no embed_dim
    "ernie45-vl-remote": (
        "Ernie4_5_VLMoeForConditionalGeneration",
        "trust_remote_code=True",
        "without --trust-remote-code",
    ),
    "ernie45-vl-hf": (
        "Ernie4_5_VLMoeForConditionalGeneration",
        "has no attribute 'embed_dim'",
        "vision_config.embed_dim",
    ),
    # the published layout (model_type molmo2, vit_config, an auto_map) and transformers' own layout
    # (vision_config): both releases' transformers ship a molmo2 config class, which files vit_config
    # under vision_config, and molmo2.py reads config.vit_config
    "molmo2-remote": (
        "Molmo2ForConditionalGeneration",
        "object has no attribute 'vit_config'",
        "config.vit_config",
    ),
    "molmo2-hf": (
        "Molmo2ForConditionalGeneration",
        "object has no attribute 'vit_config'",
        "config.vit_config",
    ),
    # the encoder-decoder classes still refused (issue 37). Cohere-Transcribe's NeMo-style layout
    # (encoder, transf_decoder.config_dict, head, preprocessor; a tiny stand-in, no published
    # config.json found): its ConformerEncoder's ConvSubsampling takes int() of a tensor it computes
    # while vLLM builds the model, which the meta device cannot answer
    "cohere-asr": (
        "CohereAsrForConditionalGeneration",
        "Tensor.item() cannot be called on meta tensors",
        "Tensor.item() on the meta device",
    ),
    # Nemotron-Parse (v1.x, nemotron_parse.py) and Parse 3.5 (nemotron_parse3_5.py): the published
    # layout (model_type nemotron_parse, an auto_map; tiny stand-ins) is a remote-code config class
    # neither transformers nor vLLM ships
    "nemotron-parse-remote": (
        "NemotronParseForConditionalGeneration",
        "trust_remote_code=True",
        "without --trust-remote-code",
    ),
    "parse3-5-remote": (
        "RadioMBartPrefixForCausalLM",
        "trust_remote_code=True",
        "without --trust-remote-code",
    ),
    # FireRedLID (fireredlid.py, 0.27.1 / 0.28.0; vLLM's own FireRedLIDConfig; a tiny stand-in): its
    # decoder's positional embedding takes .item() of a tensor while vLLM builds the model
    "fireredlid": (
        "FireRedLIDForConditionalGeneration",
        "Tensor.item() cannot be called on meta tensors",
        "Tensor.item() on the meta device",
    ),
}

"""``--mm-encoder-tp-mode`` (``MultiModalConfig.mm_encoder_tp_mode``: ``weights``, the default, or
``data``), as vLLM 0.27.1-0.33.0 read it.

``ModelConfig.__post_init__`` (``vllm/config/model.py``): for a multimodal model whose class lacks
``supports_encoder_tp_data`` (``SupportsMultiModal``'s default ``False``), ``data`` is replaced by
``weights`` with a ``warning_once``: "This model does not support `--mm-encoder-tp-mode data`.
Falling back to `--mm-encoder-tp-mode weights`." (whatever the TP size). For a class that has it,
every tower layer built under ``is_vit_use_data_parallel()`` (``models/vision.py``) is a
``disable_tp`` linear: the whole tower, including the patch merger, is built unsharded on every TP
rank (the images are split over the ranks instead; a projector the class builds without
``disable_tp`` stays split), so the tower's head, MLP and merger widths need not divide TP.

:data:`SUPPORTS_DATA` lists the multimodal architectures whose class has the flag, per release
(read from each release's ``_MULTIMODAL_MODELS`` and the classes' own definitions and bases);
the classes registered from ``vllm/models/<name>/`` packages are read as vLLM builds them on CUDA
(the ``nvidia/`` or ``common/`` class and its bases: Qwen4-Exp's and GLM-5.3-Flash's wrappers inherit
Qwen3.5's and GLM-4.1V's flag, Step5's Step-3's; DeepSeek-V4's vision wrapper has none).
:data:`SIZED_DATA_TOWERS` are the towers whose data-mode
layout dryboot sizes and checks (recorded: ``tests/fidelity/data/weights/recorded-*-mmtp*.json``);
a class may keep one part split (Isaac's and Llama-4's projectors, built without ``disable_tp``).
:data:`PROFILED_DATA_TOWERS` are the classes whose data-mode encoder profile the budget bounds.
"""

from __future__ import annotations

from typing import Literal

from dryboot.vllm.versions import rules_for

MODES = ("weights", "data")

#: every release 0.27.1-0.33.0
_ALWAYS = frozenset(
    {
        "Cosmos3EdgeForConditionalGeneration",
        "Cosmos3ForConditionalGeneration",
        "DotsOCRForCausalLM",
        "Eagle2_5_VLForConditionalGeneration",
        "Exaone4_5_ForConditionalGeneration",
        "Glm4vForConditionalGeneration",
        "Glm4vMoeForConditionalGeneration",
        "GlmOcrForConditionalGeneration",
        "H2OVLChatModel",
        "InternS1ProForConditionalGeneration",
        "InternS2PreviewForConditionalGeneration",
        "InternVLChatModel",
        "IsaacForConditionalGeneration",
        "KimiK25ForConditionalGeneration",
        "KimiVLForConditionalGeneration",
        "Llama4ForConditionalGeneration",
        "MiniCPMO",
        "MiniCPMV",
        "MiniCPMV4_6ForConditionalGeneration",
        "NVLM_D",
        "OpenCUAForConditionalGeneration",
        "QianfanOCRForConditionalGeneration",
        "Qwen2VLForConditionalGeneration",
        "Qwen2_5_VLForConditionalGeneration",
        "Qwen3VLForConditionalGeneration",
        "Qwen3VLMoeForConditionalGeneration",
        "Qwen3_5ForConditionalGeneration",
        "Qwen3_5MoeForConditionalGeneration",
        "Step3VLForConditionalGeneration",
        "Step3p7ForConditionalGeneration",
        "StepVLForConditionalGeneration",
    }
)
_COMPASS = frozenset({"CohereCompassForConditionalGeneration", "InternS2MobiusForConditionalGeneration"})
_V4_7 = frozenset({*_COMPASS, "MiniCPMV4_7ForConditionalGeneration"})
#: ``vllm/models/<name>/`` package classes with the flag, by the release that registers them
_PACKAGES_0_27 = frozenset({"KimiK3ForConditionalGeneration", "MiniMaxM3SparseForConditionalGeneration"})
_PACKAGES_0_28 = _PACKAGES_0_27 | {"Dots3NoteForCausalLM"}
_PACKAGES_0_29 = _PACKAGES_0_28 | {"Qwen4ExpForConditionalGeneration"}
_PACKAGES_0_30 = _PACKAGES_0_29 | {"DeepseekV41ForCausalLM", "Glm5NextForConditionalGeneration"}
_PACKAGES_0_33 = _PACKAGES_0_30 | {"MuseSparkForConditionalGeneration", "Step5ForConditionalGeneration"}

#: release -> the multimodal architectures whose class sets ``supports_encoder_tp_data = True``
#: (HunYuan-VL's own class until 0.28.0; 0.29+ serves it through the Transformers backend, without)
SUPPORTS_DATA: dict[str, frozenset[str]] = {
    "0.27.1": _ALWAYS | _PACKAGES_0_27 | {"HunYuanVLForConditionalGeneration"},
    "0.28.0": _ALWAYS
    | _PACKAGES_0_28
    | {"HunYuanVLForConditionalGeneration", "InternS2MobiusForConditionalGeneration"},
    "0.29.0": _ALWAYS | _PACKAGES_0_29 | {"InternS2MobiusForConditionalGeneration"},
    "0.30.0": _ALWAYS | _PACKAGES_0_30 | _COMPASS,
    "0.31.0": _ALWAYS | _PACKAGES_0_30 | _COMPASS,
    "0.32.0": _ALWAYS | _PACKAGES_0_30 | _V4_7,
    "0.33.0": _ALWAYS | _PACKAGES_0_33 | _V4_7 | {"Alpamayo2Super", "MiniCPMOcrForConditionalGeneration"},
}

#: the towers dryboot sizes (and checks) whole per rank in ``data`` mode: every dimension of them
#: that ``weights`` mode splits is a ``disable_tp`` layer then (attention, MLP, patch merger,
#: Qwen3-VL's deepstack mergers), except a projector the class builds without ``disable_tp``
#: (Isaac's, Llama-4's ``multi_modal_projector``), which stays split
SIZED_DATA_TOWERS = frozenset(
    {
        "Qwen2VLForConditionalGeneration",
        "Qwen2_5_VLForConditionalGeneration",
        "Qwen3VLForConditionalGeneration",
        "Qwen3VLMoeForConditionalGeneration",
        "Glm4vForConditionalGeneration",
        "KimiVLForConditionalGeneration",
        "Step3VLForConditionalGeneration",
        "Step5ForConditionalGeneration",
        "Qwen3_5ForConditionalGeneration",
        "Qwen3_5MoeForConditionalGeneration",
        "Glm4vMoeForConditionalGeneration",
        # the tower whole, the projector split (compose.vision_language's split_in_data)
        "IsaacForConditionalGeneration",
        "Llama4ForConditionalGeneration",
        # MoonViT-3D whole (its projector is replicated in either mode)
        "KimiK25ForConditionalGeneration",
        # Kimi-K3's MoonViT-3D whole likewise (0.28.0 / 0.33.0, recorded: recorded-<release>-mmtp-kimi-k3.json)
        "KimiK3ForConditionalGeneration",
        # its own class (0.27.1-0.28.0): the ViT's attention and MLP whole, the merger unsplit anyway
        "HunYuanVLForConditionalGeneration",
        # the towers these wrappers share with the ones above (Qwen3-VL's, Qwen2-VL's, GLM's,
        # MiniCPM-V 4.6's SigLIP, InternViT), whole in data mode as there
        "Alpamayo2Super",
        "CohereCompassForConditionalGeneration",
        "Cosmos3ForConditionalGeneration",
        "Cosmos3EdgeForConditionalGeneration",
        "Exaone4_5_ForConditionalGeneration",
        "GlmOcrForConditionalGeneration",
        "MiniCPMV4_6ForConditionalGeneration",
        "MiniCPMV4_7ForConditionalGeneration",
        "QianfanOCRForConditionalGeneration",
        # InternVL's own chat class (Qianfan-OCR's class: InternViT whole in data mode likewise)
        "InternVLChatModel",
        # Qwen4-Exp's wrapper: Qwen3-VL's tower (0.33.0, recorded: data/weights/qwen4-exp-vl/)
        "Qwen4ExpForConditionalGeneration",
    }
)

#: the towers whose every split layer vLLM builds ``disable_tp`` in ``data`` mode, for the geometry's
#: tensor-parallel checks (none of their dimensions need divide TP then): the sized ones, and
#: Step5's wrapper, whose weights dryboot refuses by name (``step_vl.py``'s perception encoder and
#: ``step3p7.py``'s projector; recorded: ``data/refused-0.33/``, the ``step5-vl-*-data`` cases)
UNSHARDED_DATA_TOWERS = SIZED_DATA_TOWERS | {"Step5ForConditionalGeneration"}

#: the classes whose data-mode encoder profile dryboot bounds: each runs its tower through
#: ``run_dp_sharded_mrope_vision_model`` (``models/vision.py``: the dummy items balanced over the TP
#: ranks, each rank's share copied out of the pixel values, run whole, padded and all-gathered)
#: and its tower is one :mod:`dryboot.vllm.worker.encoder_profile` bounds (the Qwen2-VL, Qwen2.5-VL,
#: Qwen3-VL / Qwen3.5 and GLM-4.1V / GLM-4.5V towers); any other supporting class's encoder term is
#: refused by name in ``data`` mode
PROFILED_DATA_TOWERS = frozenset(
    {
        "Qwen2VLForConditionalGeneration",
        "Qwen2_5_VLForConditionalGeneration",
        "Qwen3VLForConditionalGeneration",
        "Qwen3VLMoeForConditionalGeneration",
        "Qwen3_5ForConditionalGeneration",
        "Qwen3_5MoeForConditionalGeneration",
        "Glm4vForConditionalGeneration",
        "Glm4vMoeForConditionalGeneration",
    }
)

FALLBACK_WARNING = (
    "This model does not support `--mm-encoder-tp-mode data`. Falling back to `--mm-encoder-tp-mode weights`."
)


def parse_mode(text: str) -> str:
    """``--mm-encoder-tp-mode``'s value. :raises ValueError: not ``weights`` or ``data``."""
    if text not in MODES:
        raise ValueError(f"must be one of {', '.join(MODES)}, got {text!r}")
    return text


def support(architecture: str, version: str) -> Literal["data", "fallback"]:
    """What ``--mm-encoder-tp-mode data`` becomes for ``architecture`` on ``version``
    (``ModelConfig.__post_init__``): ``data`` (its class has ``supports_encoder_tp_data``),
    ``fallback`` (vLLM warns and uses ``weights``)."""
    release = rules_for(version).version
    return "data" if architecture in SUPPORTS_DATA.get(release, frozenset()) else "fallback"


def whole_tower(architecture: str, mode: str, version: str) -> bool:
    """Whether vLLM builds ``architecture``'s tower unsharded on every TP rank and dryboot sizes it
    so (``data`` mode, a supporting class of :data:`SIZED_DATA_TOWERS`)."""
    return mode == "data" and architecture in SIZED_DATA_TOWERS and support(architecture, version) == "data"


def unsharded_tower(architecture: str, mode: str, version: str) -> bool:
    """Whether vLLM builds every split layer of ``architecture``'s tower unsharded on each TP rank
    (``data`` mode, a supporting class of :data:`UNSHARDED_DATA_TOWERS`), so that no tower
    dimension need divide TP."""
    return mode == "data" and architecture in UNSHARDED_DATA_TOWERS and support(architecture, version) == "data"

"""The weights of families built beside :mod:`..model_loader.weights`' walk, one module per
family as vLLM's ``model_executor/models/<family>.py``: vision-language wrappers composed of a
text model the walk (or another family here) builds and a tower of their own, decoders the walk
builds under another architecture's layout (:func:`.compose.built_as`), and decoder-only families
of one shared layout (:class:`.compose.Layout`), each with its deviations in its own module.

:data:`FAMILIES` maps an architecture to its :class:`~.compose.Family`; the walk
(``weights._walk``) dispatches to it for every architecture its own table does not name.
"""

from __future__ import annotations

from types import ModuleType

from dryboot.vllm.model_executor.model_loader import weights as W
from dryboot.vllm.model_executor.models import (
    AXK1,
    afmoe,
    arcee,
    audioflamingo3,
    cohere2_moe,
    cohere2_vision,
    commandr,
    dbrx,
    ernie45,
    ernie45_moe,
    exaone,
    exaone4_5,
    exaone_moe,
    falcon,
    falcon_h1,
    gemma,
    gemma4,
    glm4,
    glm4_1v,
    gpt2,
    gpt_j,
    gpt_neox,
    gpt_oss,
    hunyuan_v1,
    hyperclovax,
    idefics3,
    interns1,
    jais2,
    jamba,
    lfm2,
    llama,
    llama4,
    llava,
    mamba,
    mamba2,
    mellum,
    minicpm3,
    minimax_m2,
    mistral_large_3,
    mllama4,
    nemotron,
    olmo3,
    olmoe,
    opt,
    paligemma,
    phi,
    phimoe,
    qwen2_audio,
    qwen2_vl,
    qwen3_vl,
    sarvam,
    stablelm,
    step3_text,
    transformers,
)
from dryboot.vllm.model_executor.models.compose import Family

#: the family modules, each with its ``FAMILIES`` (architecture -> how its weights are built)
MODULES: tuple[ModuleType, ...] = (
    AXK1,
    afmoe,
    arcee,
    audioflamingo3,
    cohere2_moe,
    cohere2_vision,
    commandr,
    dbrx,
    ernie45,
    ernie45_moe,
    exaone,
    exaone4_5,
    exaone_moe,
    falcon,
    falcon_h1,
    gemma,
    gemma4,
    glm4,
    glm4_1v,
    gpt2,
    gpt_j,
    gpt_neox,
    gpt_oss,
    hunyuan_v1,
    hyperclovax,
    idefics3,
    interns1,
    jais2,
    jamba,
    lfm2,
    llama,
    llama4,
    llava,
    mamba,
    mamba2,
    mellum,
    minicpm3,
    minimax_m2,
    mistral_large_3,
    mllama4,
    nemotron,
    olmo3,
    olmoe,
    opt,
    paligemma,
    phi,
    phimoe,
    qwen2_audio,
    qwen2_vl,
    qwen3_vl,
    sarvam,
    stablelm,
    step3_text,
    transformers,
)
FAMILIES: dict[str, Family] = {arch: family for module in MODULES for arch, family in module.FAMILIES.items()}
W.register_families(FAMILIES)

# the multimodal wrappers of issue 33 (towers and projectors over the text families above)
from dryboot.vllm.model_executor.models import (  # noqa: E402
    kimi_vl,
    lfm2_vl,
    ovis,
    ultravox,
    qwen3_asr,
    qwen3_omni_moe_thinker,
    funaudiochat,
    bagel,
    qianfan_ocr,
    moss_transcribe_diarize,
    glmasr,
    qwen2_5_omni_thinker,
    glm_ocr,
    paddleocr_vl,
    aria,
    granite_speech,
)

MULTIMODAL: tuple[ModuleType, ...] = (
    kimi_vl,
    lfm2_vl,
    ovis,
    ultravox,
    qwen3_asr,
    qwen3_omni_moe_thinker,
    funaudiochat,
    bagel,
    qianfan_ocr,
    moss_transcribe_diarize,
    glmasr,
    qwen2_5_omni_thinker,
    glm_ocr,
    paddleocr_vl,
    aria,
    granite_speech,
)
MODULES += MULTIMODAL
FAMILIES.update({arch: family for module in MULTIMODAL for arch, family in module.FAMILIES.items()})
W.register_families(FAMILIES)

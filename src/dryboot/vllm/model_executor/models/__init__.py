"""The weights of families built beside :mod:`..model_loader.weights`' walk, one module per
family as vLLM's ``model_executor/models/<family>.py``: vision-language wrappers composed of a
text model that walk builds and a tower of their own (:mod:`.qwen3_vl`, :mod:`.qwen2_vl`), and
dense families the walk builds under another architecture's layout (:mod:`.llama`).

:data:`FAMILIES` maps an architecture to its :class:`~.compose.Family`; the walk
(``weights._walk``) dispatches to it for every architecture its own table does not name.
"""

from __future__ import annotations

from dryboot.vllm.model_executor.model_loader import weights as W
from dryboot.vllm.model_executor.models.arcee import FAMILIES as ARCEE
from dryboot.vllm.model_executor.models.AXK1 import FAMILIES as AXK1
from dryboot.vllm.model_executor.models.cohere2_vision import FAMILIES as COHERE2_VISION
from dryboot.vllm.model_executor.models.commandr import FAMILIES as COMMANDR
from dryboot.vllm.model_executor.models.compose import Family
from dryboot.vllm.model_executor.models.dbrx import FAMILIES as DBRX
from dryboot.vllm.model_executor.models.ernie45 import FAMILIES as ERNIE45
from dryboot.vllm.model_executor.models.ernie45_moe import FAMILIES as ERNIE45_MOE
from dryboot.vllm.model_executor.models.exaone import FAMILIES as EXAONE
from dryboot.vllm.model_executor.models.exaone_moe import FAMILIES as EXAONE_MOE
from dryboot.vllm.model_executor.models.falcon import FAMILIES as FALCON
from dryboot.vllm.model_executor.models.falcon_h1 import FAMILIES as FALCON_H1
from dryboot.vllm.model_executor.models.gemma import FAMILIES as GEMMA
from dryboot.vllm.model_executor.models.gemma4 import FAMILIES as GEMMA4
from dryboot.vllm.model_executor.models.glm4 import FAMILIES as GLM4
from dryboot.vllm.model_executor.models.gpt_oss import FAMILIES as GPT_OSS
from dryboot.vllm.model_executor.models.hunyuan_v1 import FAMILIES as HUNYUAN_V1
from dryboot.vllm.model_executor.models.hyperclovax import FAMILIES as HYPERCLOVAX
from dryboot.vllm.model_executor.models.idefics3 import FAMILIES as IDEFICS3
from dryboot.vllm.model_executor.models.interns1 import FAMILIES as INTERNS1
from dryboot.vllm.model_executor.models.jais2 import FAMILIES as JAIS2
from dryboot.vllm.model_executor.models.jamba import FAMILIES as JAMBA
from dryboot.vllm.model_executor.models.llama import FAMILIES as LLAMA_LIKE
from dryboot.vllm.model_executor.models.llama4 import FAMILIES as LLAMA4
from dryboot.vllm.model_executor.models.llava import FAMILIES as LLAVA
from dryboot.vllm.model_executor.models.mamba import FAMILIES as MAMBA
from dryboot.vllm.model_executor.models.mamba2 import FAMILIES as MAMBA2
from dryboot.vllm.model_executor.models.minimax_m2 import FAMILIES as MINIMAX_M2
from dryboot.vllm.model_executor.models.mistral_large_3 import FAMILIES as MISTRAL_LARGE_3
from dryboot.vllm.model_executor.models.mllama4 import FAMILIES as MLLAMA4
from dryboot.vllm.model_executor.models.nemotron import FAMILIES as NEMOTRON
from dryboot.vllm.model_executor.models.olmo3 import FAMILIES as OLMO3
from dryboot.vllm.model_executor.models.olmoe import FAMILIES as OLMOE
from dryboot.vllm.model_executor.models.paligemma import FAMILIES as PALIGEMMA
from dryboot.vllm.model_executor.models.phimoe import FAMILIES as PHIMOE
from dryboot.vllm.model_executor.models.qwen2_vl import FAMILIES as QWEN2_VL
from dryboot.vllm.model_executor.models.qwen3_vl import FAMILIES as QWEN3_VL
from dryboot.vllm.model_executor.models.sarvam import FAMILIES as SARVAM
from dryboot.vllm.model_executor.models.stablelm import FAMILIES as STABLELM
from dryboot.vllm.model_executor.models.transformers import FAMILIES as TRANSFORMERS

#: architecture -> how its weights are built
FAMILIES: dict[str, Family] = {**QWEN3_VL, **QWEN2_VL, **LLAMA_LIKE, **GPT_OSS, **MINIMAX_M2, **GEMMA4}
#: decoder-only families of one shared layout (``compose.Layout``), each in its own module
FAMILIES.update(
    {
        k: v
        for m in (
            MLLAMA4,
            FALCON_H1,
            FALCON,
            IDEFICS3,
            COHERE2_VISION,
            INTERNS1,
            PALIGEMMA,
            LLAVA,
            LLAMA4,
            ERNIE45_MOE,
            EXAONE_MOE,
            HUNYUAN_V1,
            DBRX,
            JAMBA,
            SARVAM,
            MAMBA,
            MAMBA2,
            MISTRAL_LARGE_3,
            AXK1,
            ARCEE,
            COMMANDR,
            ERNIE45,
            EXAONE,
            GEMMA,
            GLM4,
            HYPERCLOVAX,
            JAIS2,
            NEMOTRON,
            OLMO3,
            OLMOE,
            PHIMOE,
            STABLELM,
            TRANSFORMERS,
        )
        for k, v in m.items()
    }
)
W.register_families(FAMILIES)

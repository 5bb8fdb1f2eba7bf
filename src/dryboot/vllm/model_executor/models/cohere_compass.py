"""Cohere Compass's weights (``CohereCompassForConditionalGeneration``, vLLM 0.30.0-0.33.0's
``cohere_compass.py``): refused by name.

Its KV cache is planned (:mod:`dryboot.vllm.models.wrappers`: Command-R 2's sliding and full layers of
``text_config``); its weights are not: the vision tower (``Cohere_VisionTransformer``: a learned
position table, axial RoPE, a patch merger and deepstack mergers) and the text model's
``LayerNorm`` layers are not sized.
"""

from __future__ import annotations

from dryboot.vllm.model_executor.models.compose import Family

#: no family of weights: the architecture is refused by name (:data:`UNSIZED`)
FAMILIES: dict[str, Family] = {}

UNSIZED: dict[str, str] = {
    "CohereCompassForConditionalGeneration": (
        "cohere_compass.py's vision tower (Cohere_VisionTransformer: its position table, patch merger and "
        "deepstack mergers) is not sized"
    ),
}

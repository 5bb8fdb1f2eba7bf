"""Muse Spark's weights (``MuseSparkForConditionalGeneration``, vLLM 0.33.0's ``vllm/models/muse_spark``):
refused by name.

Its KV cache is planned (:mod:`dryboot.vllm.models.muse_glimmer`); its weights are not: the text stack's
MoE block pools ``hidden_size`` down to ``moe_hidden_size`` around its routed experts and may run them
through DeepGEMM's mega-MoE runner (``muse_moe_runner.py``, ``mega_moe.py``), beside the NaViT vision
and waveform audio towers of ``common/omni.py``; none of these modules is sized.
"""

from __future__ import annotations

from dryboot.vllm.model_executor.models.compose import Family

#: no family of weights: the architecture is refused by name (:data:`UNSIZED`)
FAMILIES: dict[str, Family] = {}

UNSIZED: dict[str, str] = {
    "MuseSparkForConditionalGeneration": (
        "vLLM 0.33.0's vllm.models.muse_spark is not sized (its pooled MoE block, muse_moe_runner.py, and the "
        "NaViT vision and audio towers of common/omni.py)"
    ),
}

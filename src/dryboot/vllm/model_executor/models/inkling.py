"""Inkling's weights (``InklingForCausalLM`` / ``InklingForConditionalGeneration``, vLLM 0.33.0's
``vllm/models/inkling/nvidia/model.py``): refused by name.

Its KV cache is planned (:mod:`dryboot.vllm.models.inkling`: each layer's short-convolution
state beside its attention); its weights are not: the full-vocabulary embedding replicated on
every rank (``InklingReplicatedEmbedding``), the fused Q/K/V/relative projection (``qkvr``), the
depthwise conv weights, the sink experts and the Lamport all-reduce workspace are not sized.
"""

from __future__ import annotations

from dryboot.vllm.model_executor.models.compose import Family

#: no family of weights: the architectures are refused by name (:data:`UNSIZED`)
FAMILIES: dict[str, Family] = {}

_TEXT = (
    "vllm/models/inkling's layers (a replicated full-vocabulary embedding, the fused qkvr projection with its "
    "relative-position branch, depthwise short-conv weights, sink experts, the Lamport all-reduce workspace) are "
    "not sized"
)
UNSIZED: dict[str, str] = {
    "InklingForCausalLM": _TEXT,
    "InklingForConditionalGeneration": f"{_TEXT}; nor are its vision and audio towers (common/towers.py)",
}

"""GLM-5.3-Flash's weights (``Glm5NextForCausalLM`` and its wrapper ``Glm5NextForConditionalGeneration``,
vLLM 0.33.0's ``vllm/models/glm5next``): refused by name.

Its KV cache is planned (:mod:`dryboot.vllm.models.glm5next`); its weights are not: the decoder layers'
KDA projections (kept in bfloat16 even in an fp8 checkpoint, ``common/kda.py``), the NoPE MLA with the kpool
indexer's projections (``common/attention.py``), the mHC residual streams (``layers/mhc.py``), the dense and
routed MoE feed-forwards of ``mlp_layer_types``, and the wrapper's Glm4v-style tower (``common/multimodal.py``);
none of these modules is sized here.
"""

from __future__ import annotations

from dryboot.vllm.model_executor.models.compose import Family

#: no family of weights: the architectures are refused by name (:data:`UNSIZED`)
FAMILIES: dict[str, Family] = {}

_WHY = (
    "vLLM 0.33.0's vllm.models.glm5next is not sized (its KDA layers, NoPE MLA with the kpool indexer, mHC "
    "streams and MoE feed-forwards{}); its KV cache is planned"
)
UNSIZED: dict[str, str] = {
    "Glm5NextForCausalLM": _WHY.format(""),
    "Glm5NextForConditionalGeneration": _WHY.format(", and the wrapper's Glm4v-style vision tower"),
}

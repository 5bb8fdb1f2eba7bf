"""Step5's weights (``Step5ForCausalLM``, vLLM 0.33.0's ``vllm/models/step5/nvidia/model.py``):
refused by name.

Its KV cache is planned (:mod:`dryboot.vllm.models.step5`,
:mod:`dryboot.vllm.kv_cache_utils.repeat_packed`); its weights are not: the DSA layers' fused
QKV + sparse-indexer projection (``Step5FusedQKVIndexerLinear``: replicated or split by
``index_tp_size``), the head-wise attention gate and the MoE block (``mega_moe.py``) are not sized.
"""

from __future__ import annotations

from dryboot.vllm.model_executor.models.compose import Family

#: no family of weights: the architecture is refused by name (:data:`UNSIZED`)
FAMILIES: dict[str, Family] = {}

UNSIZED: dict[str, str] = {
    "Step5ForCausalLM": (
        "vllm/models/step5's DSA layers (Step5FusedQKVIndexerLinear: attention and sparse-indexer projections in "
        "one GEMM, split by index_tp_size), head-wise gates and MoE block are not sized"
    ),
    "Step5ForConditionalGeneration": (
        "Step5's text model (vllm/models/step5's DSA layers, head-wise gates and MoE block) and the wrapper's "
        "perception-encoder tower and projector (step5/nvidia/vl.py, Step3p7's frontend) are not sized"
    ),
}

"""HY V4's weights (``HYV4ForCausalLM``, vLLM 0.33.0's ``vllm/models/hy_v4/nvidia/model.py``):
refused by name.

Its KV cache is planned (:mod:`dryboot.vllm.models.hy_v4`); its weights are not: the iHC
hyper-connection layers (``hc.py``: ``hc_mult`` residual channels, a pre-layer and its gates per
sub-block, the ``hc_head`` merge), the gated MLA output (``linear_gate``), the fp32 learned sinks,
the shared-top-k layers' missing indexers and the clamped-SwiGLU MoE block (``moe.py``) are not sized.
"""

from __future__ import annotations

from dryboot.vllm.model_executor.models.compose import Family

#: no family of weights: the architecture is refused by name (:data:`UNSIZED`)
FAMILIES: dict[str, Family] = {}

UNSIZED: dict[str, str] = {
    "HYV4ForCausalLM": (
        "vllm/models/hy_v4's iHC hyper-connection layers (hc_mult residual channels, hc.py), gated MLA output, "
        "learned sinks, per-layer indexers (none in a shared top-k layer) and clamped-SwiGLU MoE block are not sized"
    ),
}

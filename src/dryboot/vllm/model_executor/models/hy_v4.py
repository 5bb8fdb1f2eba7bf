"""HY V4's weights (``HYV4ForCausalLM``, vLLM 0.33.0's ``vllm/models/hy_v4/nvidia/model.py``):
refused by name.

Its KV cache is planned (:mod:`dryboot.vllm.models.hy_v4`); its weights are not: the iHC
hyper-connection layers (``hc.py``: ``hc_mult`` residual channels, a pre-layer and its gates per
sub-block, the ``hc_head`` merge), the gated MLA output (``linear_gate``), the fp32 learned sinks,
the shared-top-k layers' missing indexers and the clamped-SwiGLU MoE block (``moe.py``) are not sized.

The oracle builds it once the worker's workspace manager exists (``record_weights.py`` with
``RECORD_WEIGHTS_WORKSPACE=1``, 0.33.0: the tiny config's 7 flag sets all served, e.g. TP 1
64,140,332 parameter bytes, 135,468,032 allocated with the shared ``[8192, 2048]`` int32 top-k
indices buffer); not yet recorded or modelled. Two choices depend on the GPU and the install, to be
modelled with it: the learnable sink's dtype (float32 where ``_resolve_sink_backend`` finds a
sink-capable MLA backend, else bfloat16) and the optional ``hpc`` package (its rope-norm module keeps
a float32 ``cos_sin_cache``; absent from the vLLM wheel).
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

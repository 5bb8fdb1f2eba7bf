"""Moondream3 (``moondream3.py``, ``Moondream3ForCausalLM`` and ``HfMoondream``, vLLM 0.27.1-0.33.0):
planned (its attention layers read as Llama's, ``wrappers._moondream3_text``), its weights refused by
name: the text model's MoE layers (``Moondream3TextMoE``: experts split ``num_experts // TP`` per
rank, a GeGLU of its own), the tau parameters of every attention layer (sharded by heads, full
``3 * dim`` width) and the crop-tiling vision encoder are a layout the walk does not build.
"""

from __future__ import annotations

from dryboot.vllm.model_executor.models.compose import Family

#: no family built here: the module only names its refusal
FAMILIES: dict[str, Family] = {}

_WHY = (
    "moondream3.py's own layout (Moondream3TextMoE's per-rank experts, each attention layer's tau "
    "parameters, the crop-tiling vision encoder and projector) is not sized"
)

#: architecture -> why its weights are refused by name
UNSIZED: dict[str, str] = {"Moondream3ForCausalLM": _WHY, "HfMoondream": _WHY}

"""Architectures dryboot plans on a later release only (``models.registry.LATER_ARCHITECTURES``:
names vLLM 0.28.0's registry lacks) whose weights no family here sizes: refused by name
(:data:`UNSIZED`), none built (no ``FAMILIES`` of its own).

* ``BeamForCausalLM``: ``vllm/models/beam``'s NVIDIA model class (merged QKV-and-gate projection,
  per-head gate bias, its own MoE runner) is not sized.
* ``ExaoneMoEForCausalLM``: ``exaone_moe.py``'s ``ExaoneMoeForCausalLM`` under a second name,
  whose weights (grouped sigmoid router, shared experts, q/k norms) are not sized either.
* ``GraniteSWAForCausalLM`` / ``GraniteMoeSWAForCausalLM``: Granite's and Granite-MoE-Shared's
  layouts plus a per-head attention sink on every layer (``granite.py`` ``sinks``:
  ``[num_heads / TP]``), which the borrowed layouts lack, and per-layer rotary tables
  (``layer_rope_theta``).
* ``Qwen4ExpForCausalLM``: ``vllm/models/qwen4_exp``'s plain layout keeps the hidden state as
  ``hc_count`` streams (hyper-connection mixing weights per layer, ``hc_lowrank``), which no sized
  layout has.
* ``Kolibri1ForCausalLM``: served by the Transformers modeling backend
  (``TransformersMoEForCausalLM``), whose layout of transformers' Kolibri-1 modules is not sized.
"""

from __future__ import annotations

from dryboot.vllm.model_executor.models.compose import Family

FAMILIES: dict[str, Family] = {}

UNSIZED: dict[str, str] = {
    "BeamForCausalLM": "vLLM 0.33.0's vllm/models/beam (gated attention, its own MoE runner) is not sized",
    "ExaoneMoEForCausalLM": "vLLM's exaone_moe.py (ExaoneMoeForCausalLM, under this name from 0.32.0) is not sized",
    "GraniteSWAForCausalLM": (
        "vLLM's granite.py (0.29.0+) builds a per-head attention sink on every layer and per-layer rotary tables "
        "(layer_rope_theta), which Granite's sized layout lacks"
    ),
    "GraniteMoeSWAForCausalLM": (
        "vLLM's granitemoeshared.py (0.29.0+) builds a per-head attention sink on every layer and per-layer rotary "
        "tables (layer_rope_theta), which Granite-MoE-Shared's sized layout lacks"
    ),
    "Qwen4ExpForCausalLM": (
        "vLLM's vllm/models/qwen4_exp (0.29.0+: hyper-connection streams, hc_count / hc_lowrank mixing weights per "
        "layer) is not sized"
    ),
    "Kolibri1ForCausalLM": (
        "vLLM 0.33.0 serves it through its Transformers modeling backend (TransformersMoEForCausalLM), whose "
        "Kolibri-1 layout is not sized"
    ),
}

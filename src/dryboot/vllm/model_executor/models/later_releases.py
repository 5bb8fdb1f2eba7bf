"""Architectures dryboot plans on a later release only (``models.registry.LATER_ARCHITECTURES``:
names vLLM 0.28.0's registry lacks) whose weights no family here sizes: refused by name
(:data:`UNSIZED`), none built (no ``FAMILIES`` of its own).

* ``Qwen4ExpForCausalLM``: ``vllm/models/qwen4_exp``'s plain layout keeps the hidden state as
  ``hc_count`` streams (hyper-connection mixing weights per layer, ``hc_lowrank``), which no sized
  layout has.
"""

from __future__ import annotations

from dryboot.vllm.model_executor.models.compose import Family

FAMILIES: dict[str, Family] = {}

UNSIZED: dict[str, str] = {
    "Qwen4ExpForCausalLM": (
        "vLLM's vllm/models/qwen4_exp (0.29.0+: hyper-connection streams, hc_count / hc_lowrank mixing weights per "
        "layer) is not sized"
    ),
}

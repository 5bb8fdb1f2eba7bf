"""OLMoE (``olmoe.py``, ``OlmoeForCausalLM``) and FlexOlmo (``flex_olmo.py``,
``FlexOlmoForCausalLM``): OLMo's whole-projection q/k norms and a ``FusedMoE`` block on every
layer (router ``[E, H]``, ``w13`` / ``w2`` of ``intermediate_size``), the head untied. OLMoE
norms before attention and MLP, FlexOlmo after them."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from dryboot.vllm.model_executor.models.compose import Family, Layout, decoder


def _every_layer(config: Mapping[str, Any], li: int) -> bool:
    return True


_OLMOE = Layout(qk_norm="whole", every_stage=True, moe=_every_layer, moe_inter_key="intermediate_size")

FAMILIES: dict[str, Family] = {"OlmoeForCausalLM": decoder(_OLMOE), "FlexOlmoForCausalLM": decoder(_OLMOE)}

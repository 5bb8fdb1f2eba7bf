"""A.X K1 (``AXK1.py``, ``AXK1ForCausalLM``): DeepSeek-V3's layout (the walk's) plus, per layer, a
third RMSNorm ``post_mlp_layernorm`` ``[H]``."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from dryboot.vllm.model_executor.model_loader import weights as W
from dryboot.vllm.model_executor.models.compose import Family, built_as


def _post_mlp_norms(config: Mapping[str, Any], par: W.Parallel, ab: int) -> W.RankWeights:
    w = W.RankWeights()
    h = W._int(config, "hidden_size")
    for _ in W.pp_layers(W._int(config, "num_hidden_layers"), par):
        w.add("norm", h * ab)
    return w


FAMILIES: dict[str, Family] = {"AXK1ForCausalLM": built_as("DeepseekV3ForCausalLM", extra=_post_mlp_norms)}

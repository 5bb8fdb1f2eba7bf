"""Mamba (Mamba1) and Falcon-Mamba: attention-free models of Mamba1 layers.

Mirrors ``vllm/model_executor/models/mamba.py`` fed by transformers' ``MambaConfig`` /
``FalconMambaConfig``: ``intermediate_size = expand * hidden_size`` (defaults: hidden 768,
expand 2, state 16, conv kernel 4); each layer keeps a conv state ``(conv_kernel - 1,
intermediate / TP)`` and an SSM state ``(intermediate / TP, state_size)``
(``MambaStateShapeCalculator.mamba1_state_shape``). The model is attention-free, so vLLM
turns prefix caching off by default (``ModelConfig.is_prefix_caching_supported``).
"""

from __future__ import annotations

from typing import Any

from dryboot.vllm.config.hf import ConfigFields, LayerKind, Mamba1, ModelGeometry
from dryboot.vllm.models.common import geometry, num_layers

_DEFAULTS = {"hidden_size": 768, "state_size": 16, "expand": 2, "conv_kernel": 4}


def defaults(f: ConfigFields) -> dict[str, Any]:
    return dict(_DEFAULTS)


def read(f: ConfigFields, architecture: str) -> ModelGeometry:
    n = num_layers(f)
    hidden = f.integer("hidden_size")
    mamba1 = Mamba1(
        d_inner=f.integer("expand") * hidden,
        d_state=f.integer("state_size"),
        d_conv=f.integer("conv_kernel"),
    )
    return geometry(
        f, architecture, "mamba", (LayerKind.MAMBA1,) * n, heads=(1, 1, 1), mamba1=mamba1, attention_free=True
    )

"""Jamba: Mamba1 layers with an attention layer every ``attn_layer_period`` layers.

Mirrors ``vllm/model_executor/models/jamba.py`` fed by transformers' ``JambaConfig``: layer
``i`` is attention when ``i % attn_layer_period == attn_layer_offset`` (defaults 8 and 4),
else Mamba1 with ``intermediate = mamba_expand * hidden_size``, state ``mamba_d_state``, conv
kernel ``mamba_d_conv`` (``JambaForCausalLM.get_mamba_state_shape_from_config``). A hybrid
model class: the attention block is aligned to the mamba page.
"""

from __future__ import annotations

from typing import Any

from dryboot.vllm.config.hf import ConfigFields, LayerKind, Mamba1, ModelGeometry
from dryboot.vllm.models.common import attention_heads, geometry, num_layers

_DEFAULTS = {
    "num_attention_heads": 32,
    "num_key_value_heads": 8,
    "hidden_size": 4096,
    "max_position_embeddings": 262144,
    "attn_layer_period": 8,
    "attn_layer_offset": 4,
    "mamba_d_state": 16,
    "mamba_d_conv": 4,
    "mamba_expand": 2,
}


def defaults(f: ConfigFields) -> dict[str, Any]:
    return dict(_DEFAULTS)


def read(f: ConfigFields, architecture: str) -> ModelGeometry:
    n = num_layers(f)
    period = f.integer("attn_layer_period")
    offset = f.integer("attn_layer_offset", minimum=0)
    kinds = tuple(LayerKind.FULL if i % period == offset else LayerKind.MAMBA1 for i in range(n))
    mamba1 = Mamba1(
        d_inner=f.integer("mamba_expand") * f.integer("hidden_size"),
        d_state=f.integer("mamba_d_state"),
        d_conv=f.integer("mamba_d_conv"),
    )
    return geometry(
        f, architecture, "jamba", kinds, heads=attention_heads(f), mamba1=mamba1, hybrid_class=True, hf_layer_types=True
    )

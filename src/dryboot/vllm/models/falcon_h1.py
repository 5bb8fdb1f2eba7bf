"""Falcon-H1: every decoder layer runs attention and a Mamba2 mixer side by side.

Mirrors ``vllm/model_executor/models/falcon_h1.py`` fed by transformers' ``FalconH1Config``:
layer ``i`` (``FalconH1ParallelHybrid``) holds an attention cache at ``model.layers.i.attn``
and a Mamba2 state at ``model.layers.<num_hidden_layers + i>.mixer`` (vLLM gives the SSM
branch its own layer index), so ``n`` layers keep ``n`` attention caches and ``n`` states.
Attention heads are ``head_dim`` wide, else ``hidden_size // num_attention_heads``. The mixer
spans ``mamba_d_ssm`` (``null``: ``mamba_expand * hidden_size``) with ``mamba_n_heads`` heads
of ``mamba_d_head`` (``"auto"``: the width over the heads), ``mamba_n_groups`` groups, state
``mamba_d_state``, conv kernel ``mamba_d_conv`` (``get_mamba_state_shape_from_config``, which
leaves out the speculative rows); both states take ``--mamba-cache-dtype`` /
``--mamba-ssm-cache-dtype`` (``mamba2_state_dtype``). A hybrid model class.
"""

from __future__ import annotations

from typing import Any

from dryboot.vllm.config.hf import ConfigFields, LayerKind, ModelGeometry
from dryboot.vllm.models.common import attention_heads, geometry, mamba2_mixer, num_layers
from dryboot.vllm.models.nemotron_h import verify_after_attention

# MambaMixer2's group split rule, after each layer's attention branch selected its backend

#: ``FalconH1Config`` class defaults.
_DEFAULTS = {
    "hidden_size": 4096,
    "num_hidden_layers": 32,
    "num_attention_heads": 32,
    "num_key_value_heads": 8,
    "max_position_embeddings": 8192,
    "mamba_d_ssm": 1024,
    "mamba_n_heads": 128,
    "mamba_d_head": "auto",
    "mamba_n_groups": 1,
    "mamba_d_state": 256,
    "mamba_d_conv": 4,
    "mamba_expand": 2,
    "mamba_chunk_size": 256,
}


def defaults(f: ConfigFields) -> dict[str, Any]:
    return dict(_DEFAULTS)


def read(f: ConfigFields, architecture: str) -> ModelGeometry:
    n = num_layers(f)
    if f.get("mamba_d_ssm") is None:
        inner = f.integer("mamba_expand") * f.integer("hidden_size")
    else:
        inner = f.integer("mamba_d_ssm")
    mamba2 = mamba2_mixer(f, inner)
    kinds = (LayerKind.FULL,) * n + (LayerKind.MAMBA2,) * n
    return geometry(
        f,
        architecture,
        "falcon_h1",
        kinds,
        heads=attention_heads(f),
        mamba2=mamba2,
        hybrid_class=True,
        align_state_without_spec=True,
        attention_suffix="attn",
        decoder_layers=tuple(range(n)) * 2,
    )


#: the family's ``verify_built`` hook: MambaMixer2's group split rule, after each layer's attention
#: branch selected its backend
verify_built = verify_after_attention

"""Mamba2: an attention-free model of Mamba2 layers.

Mirrors ``vllm/model_executor/models/mamba2.py`` fed by transformers' ``Mamba2Config``: each
layer's mixer (``model.layers.i.mixer``) has ``num_heads`` heads of ``head_dim``, ``n_groups``
groups, state ``state_size``, conv kernel ``conv_kernel``, and spans the file's
``intermediate_size`` when it sets one, else ``expand * hidden_size`` (``Mamba2DecoderLayer``);
the config class refuses ``expand * hidden_size != num_heads * head_dim``. The model is
attention-free: vLLM turns prefix caching off by default and there is no hybrid alignment.
"""

from __future__ import annotations

from typing import Any

from dryboot.errors import InputError
from dryboot.vllm.config.hf import ConfigFields, LayerKind, Mamba2, ModelGeometry
from dryboot.vllm.models.common import geometry, num_layers
from dryboot.vllm.models.nemotron_h import verify as verify  # MambaMixer2's group split rule

#: ``Mamba2Config`` class defaults.
_DEFAULTS = {
    "num_heads": 128,
    "head_dim": 64,
    "hidden_size": 4096,
    "state_size": 128,
    "num_hidden_layers": 64,
    "expand": 2,
    "conv_kernel": 4,
    "n_groups": 8,
    "chunk_size": 256,
}


def defaults(f: ConfigFields) -> dict[str, Any]:
    return dict(_DEFAULTS)


def read(f: ConfigFields, architecture: str) -> ModelGeometry:
    n = num_layers(f)
    width = f.integer("expand") * f.integer("hidden_size")
    heads, head = f.integer("num_heads"), f.integer("head_dim")
    if width != heads * head:
        raise InputError(
            f.source,
            f.where("num_heads"),
            f"Inconsistent configuration: hidden_size * expand ({width}) must equal num_heads * head_dim "
            f"({heads * head}) (Mamba2Config)",
        )
    mamba2 = Mamba2(
        num_heads=heads,
        head_dim=head,
        n_groups=f.integer("n_groups"),
        state_size=f.integer("state_size"),
        conv_kernel=f.integer("conv_kernel"),
        chunk_size=f.opt_int("chunk_size"),
        intermediate_size=f.integer("intermediate_size") if f.given("intermediate_size") else width,
    )
    return geometry(
        f, architecture, "mamba2", (LayerKind.MAMBA2,) * n, heads=(1, 1, 1), mamba2=mamba2, attention_free=True
    )

"""Gemma (``gemma.py``, ``GemmaForCausalLM``): Llama's layer (fused ``qkv_proj``, gated MLP, two
RMSNorms per layer) with the head tied to the embedding (``GemmaConfig``'s default), the
embedding scaled by a ``normalizer`` scalar buffer in the model dtype, and ``head_dim`` 256 unless
the config says otherwise."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from dryboot.vllm.model_executor.models.compose import Family, Layout, decoder

#: ``GemmaConfig``'s defaults for what a config leaves out (transformers 5.x)
DEFAULTS: dict[str, Any] = {"head_dim": 256, "tie_word_embeddings": True}


def _prepare(config: Mapping[str, Any]) -> Mapping[str, Any]:
    return {**DEFAULTS, **config}


FAMILIES: dict[str, Family] = {
    "GemmaForCausalLM": decoder(Layout(tied=True, scalars=1, every_stage=True), _prepare),
}

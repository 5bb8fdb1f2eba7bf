"""HRM-Text (``HrmTextForCausalLM``): two recurrent stacks, one KV cache per step and layer.

Mirrors ``vllm/model_executor/models/hrm_text.py`` with transformers' ``HrmTextConfig``:

* an L stack and an H stack of ``num_layers_per_stack`` layers each; over ``H_cycles`` outer
  cycles the L stack runs ``L_cycles`` steps and the H stack one, and every (step, layer) pair has
  its own ``PrefillPrefixLMAttention`` with its own KV cache:
  ``num_layers_per_stack * H_cycles * (L_cycles + 1)`` full-attention caches in all;
* a config without ``num_layers_per_stack`` is a legacy one: the class takes
  ``num_hidden_layers`` as the per-stack count (and rewrites it to the total);
* multi-head attention (one KV head per attention head), head size ``head_dim`` (default 128);
* these layers run prefill non-causally (their spec says ``non_causal``, and the engine turns
  off chunked prefill and prefix caching for them); the cache pages are those of full attention;
* the model refuses pipeline parallelism.
"""

from __future__ import annotations

from typing import Any

from dryboot.errors import InputError
from dryboot.vllm.config.hf import ConfigFields, LayerKind, ModelGeometry
from dryboot.vllm.models.common import MAX_LAYERS, geometry, window

_DEFAULTS: dict[str, Any] = {
    "num_hidden_layers": 16,
    "num_attention_heads": 12,
    "hidden_size": 1536,
    "head_dim": 128,
    "max_position_embeddings": 2048,
    "H_cycles": 2,
    "L_cycles": 3,
}


def defaults(f: ConfigFields) -> dict[str, Any]:
    return dict(_DEFAULTS)


def read(f: ConfigFields, architecture: str) -> ModelGeometry:
    per_stack = f.integer("num_layers_per_stack") if f.given("num_layers_per_stack") else f.integer("num_hidden_layers")
    h, lo = f.integer("H_cycles"), f.integer("L_cycles")
    n = per_stack * h * (lo + 1)
    if n > MAX_LAYERS:
        raise InputError(f.source, f.where("num_layers_per_stack"), f"{n} attention layers: more than {MAX_LAYERS}")
    heads = f.integer("num_attention_heads")
    head_dim = f.integer("head_dim") if f.has("head_dim") else f.integer("hidden_size") // heads
    sw = window(f)
    return geometry(
        f,
        architecture,
        "hrm_text",
        ((LayerKind.SLIDING if sw else LayerKind.FULL),) * n,
        heads=(heads, heads, head_dim),
        sliding_window=sw,
        pp_refusal="ValueError: HrmTextForCausalLM does not support pipeline parallelism.",
    )

"""Decoders whose vLLM model class allocates what the walk's Llama, Qwen2, Qwen3 or Mixtral layout
allocates for the same config (``llama.py`` and its subclasses, or a class of the same
parameters), each from the config only (their checkpoints may fuse ``qkv_proj`` /
``gate_up_proj``, as Phi-3's and Granite-MoE's do):

* Llama (``LlamaForCausalLM`` / ``MistralForCausalLM`` in vLLM's registry or a subclass):
  ``LLaMAForCausalLM``, ``CwmForCausalLM``, ``InternLM3ForCausalLM``, ``IQuestCoderForCausalLM``,
  ``Fairseq2LlamaForCausalLM``, ``Phi3ForCausalLM`` (a ``LlamaForCausalLM``; ``longrope`` tables are
  refused by the walk's rotary rule), ``Ministral3ForCausalLM``; ``GraniteForCausalLM``
  (``granite.py``: Llama's parameters, its multipliers are scalars).
* Qwen2's (QKV bias, none on ``o_proj``): ``SeedOssForCausalLM``; ``GlmForCausalLM`` (``glm.py``, a
  Llama subclass that forces ``partial_rotary_factor`` 0.5 and whose config defaults
  ``attention_bias`` to true).
* Qwen3's (q/k norms): ``Exaone4ForCausalLM``, ``HunYuanDenseV1ForCausalLM`` (``use_qk_norm``).
* Mixtral's (a router ``[E, H]`` and the experts on every layer; embedding, norm and head on every
  pipeline stage): ``GraniteMoeForCausalLM``; ``GraniteMoeSharedForCausalLM`` with, per layer, its
  shared MLP (``granitemoeshared.py``: ``input_linear`` ``[2 S / TP, H]``, ``output_linear`` ``[H,
  S / TP]``, ``S = shared_intermediate_size``).

A config field that would add parameters the borrowed layout lacks (``mlp_bias``, ...) is refused
by name rather than guessed.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from dryboot.vllm.model_executor.model_loader import weights as W
from dryboot.vllm.model_executor.models.compose import Family, Layout, built_as


def _glm(config: Mapping[str, Any]) -> Mapping[str, Any]:
    """``glm.py``: ``partial_rotary_factor`` forced to 0.5; ``GlmConfig``'s ``attention_bias``
    defaults to true."""
    return {"attention_bias": True, **config, "partial_rotary_factor": 0.5}


def _granite_shared_mlp(config: Mapping[str, Any], par: W.Parallel, ab: int) -> W.RankWeights:
    """Granite-MoE-Shared's shared MLP on each layer of the rank's stage (module docstring)."""
    h = W._int(config, "hidden_size")
    s_r = W._divide(W._int(config, "shared_intermediate_size"), par.tp, "shared_intermediate_size")
    w = W.RankWeights()
    for _ in W.pp_layers(W._int(config, "num_hidden_layers"), par):
        w.add("mlp", 2 * s_r * h * ab)
        w.add("mlp", h * s_r * ab)
    return w


#: fields whose truth adds parameters the borrowed layout does not build (refused by name)
_BIASES = ("mlp_bias",)

FAMILIES: dict[str, Family] = {
    **{
        a: built_as("LlamaForCausalLM", refused=_BIASES)
        for a in (
            "LLaMAForCausalLM",
            "InternLM3ForCausalLM",
            "IQuestCoderForCausalLM",
            "Fairseq2LlamaForCausalLM",
            "Phi3ForCausalLM",
            "Ministral3ForCausalLM",
            "GraniteForCausalLM",
        )
    },
    # backend: the transformers class the Transformers modeling backend builds (0.33.0's registry)
    "CwmForCausalLM": built_as("LlamaForCausalLM", refused=_BIASES, backend=Layout()),
    "SeedOssForCausalLM": built_as(
        "Qwen2ForCausalLM",
        refused=(*_BIASES, "attention_out_bias"),
        backend=Layout(qkv_bias=True, o_bias="attention_out_bias"),  # SeedOssConfig: attention_bias true
    ),
    "GlmForCausalLM": built_as(
        "Qwen2ForCausalLM", prepare=_glm, refused=_BIASES, backend=Layout(qkv_bias="attention_bias")
    ),
    "Exaone4ForCausalLM": built_as("Qwen3ForCausalLM", refused=(*_BIASES, "attention_bias")),
    "HunYuanDenseV1ForCausalLM": built_as(
        "Qwen3ForCausalLM",
        refused=(*_BIASES, "attention_bias"),
        required=("use_qk_norm",),
        # transformers' HunYuanDenseV1 gives its attention no TP plan (whole on 0.29.0's backend)
        backend=Layout(qk_norm="head", backend_attention_whole=True),
    ),
    "GraniteMoeForCausalLM": built_as("MixtralForCausalLM", refused=("attention_bias",)),
    "GraniteMoeSharedForCausalLM": built_as(
        "MixtralForCausalLM", refused=("attention_bias",), extra=_granite_shared_mlp
    ),
}

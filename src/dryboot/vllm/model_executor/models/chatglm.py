"""ChatGLM (``chatglm.py``: ``ChatGLMModel``, ``ChatGLMForConditionalGeneration``), also GLM-4V's
language model (:mod:`.glm4v`): :class:`.compose.Layout` over the config's own names
(``num_layers``, ``ffn_hidden_size``, ``kv_channels`` per head, ``padded_vocab_size``), a fused
``query_key_value`` (biased under ``add_qkv_bias``), ``dense`` and the gated MLP biased under
``add_bias_linear``, ``multi_query_group_num`` KV heads under ``multi_query_attention``, a rotary
table ``[seq_length, kv_channels / 2]`` (``partial_rotary_factor`` 0.5); embedding, final norm and
output layer on every pipeline stage, as ``ChatGLMModel`` builds them. The LayerNorm variant
(``rmsnorm`` false) and a config without the final norm (``post_layer_norm`` false) are refused
by name."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from dryboot.errors import InputError
from dryboot.vllm.model_executor.model_loader import weights as W
from dryboot.vllm.model_executor.models.compose import Family, Layout, decoder


def chatglm_config(config: Mapping[str, Any]) -> Mapping[str, Any]:
    """A ChatGLM config in the walk's names (module docstring).

    :raises InputError: the LayerNorm variant (``rmsnorm`` false)."""
    if not config.get("rmsnorm", True):
        raise InputError("config.json", "rmsnorm", "ChatGLM with LayerNorms is not modelled")
    if not config.get("post_layer_norm", True):
        raise InputError("config.json", "post_layer_norm", "ChatGLM without its final norm is not modelled")
    heads = W._int(config, "num_attention_heads")
    kv = W._int(config, "multi_query_group_num") if config.get("multi_query_attention") else heads
    return {
        **config,
        "num_hidden_layers": W._int(config, "num_layers"),
        "intermediate_size": W._int(config, "ffn_hidden_size"),
        "num_key_value_heads": kv,
        "head_dim": W._int(config, "kv_channels", W._int(config, "hidden_size") // heads),
        "vocab_size": W._int(config, "padded_vocab_size"),
        "max_position_embeddings": W._int(config, "seq_length", 8192),
        "partial_rotary_factor": 0.5,
        "rope_scaling": None,
        "rope_parameters": None,
    }


CHATGLM_TEXT = decoder(
    Layout(qkv_bias="add_qkv_bias", o_bias="add_bias_linear", mlp_bias="add_bias_linear", every_stage=True),
    prepare=chatglm_config,
)


FAMILIES: dict[str, Family] = {"ChatGLMModel": CHATGLM_TEXT, "ChatGLMForConditionalGeneration": CHATGLM_TEXT}

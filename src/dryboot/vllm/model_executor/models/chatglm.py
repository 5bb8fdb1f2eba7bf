"""ChatGLM (``chatglm.py``, ``ChatGLMForConditionalGeneration`` / ``ChatGLMModel``: ChatGLM2/3,
GLM-4-9B): Llama's layout under ChatGLM's names: ``padded_vocab_size``, ``num_layers``,
``ffn_hidden_size``, ``kv_channels`` (the head size), ``multi_query_group_num`` key/value heads
under ``multi_query_attention`` (else as many as the heads), the fused ``query_key_value`` with
a bias under ``add_qkv_bias``, ``dense`` and the MLP (``dense_h_to_4h`` gated, ``dense_4h_to_h``)
with biases under ``add_bias_linear``; RMSNorms; an untied ``output_layer``; one rotary table
``[seq_length, kv_channels / 2]``. The embedding, ``final_layernorm`` and ``output_layer`` on
every pipeline stage. LayerNorm models (``rmsnorm`` false) and no final norm
(``post_layer_norm`` false) are refused by name."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from dryboot.errors import InputError
from dryboot.vllm.model_executor.models.compose import Family, Layout, decoder

#: ``ChatGLMConfig``'s defaults (the checkpoints' own ``configuration_chatglm.py``)
DEFAULTS: dict[str, Any] = {
    "num_layers": 28,
    "padded_vocab_size": 65024,
    "hidden_size": 4096,
    "ffn_hidden_size": 13696,
    "kv_channels": 128,
    "num_attention_heads": 32,
    "seq_length": 2048,
    "add_bias_linear": False,
    "add_qkv_bias": False,
    "multi_query_attention": False,
    "multi_query_group_num": 1,
    "rmsnorm": True,
    "post_layer_norm": True,
    "tie_word_embeddings": False,
}


def _prepare(config: Mapping[str, Any]) -> Mapping[str, Any]:
    c = {**DEFAULTS, **config}
    for key in ("rmsnorm", "post_layer_norm"):
        if not c.get(key):
            raise InputError("config.json", key, f"ChatGLM with {key} false is not modelled")
    if "vision_config" in c:
        raise InputError("config.json", "vision_config", "ChatGLM's vision tower (GLM-4V) is not modelled")
    nq = c["num_attention_heads"]
    return {
        **c,
        "vocab_size": c["padded_vocab_size"],
        "num_hidden_layers": c["num_layers"],
        "intermediate_size": c["ffn_hidden_size"],
        "head_dim": c["kv_channels"],
        "num_key_value_heads": c["multi_query_group_num"] if c.get("multi_query_attention") else nq,
        "max_position_embeddings": c["seq_length"],
        "partial_rotary_factor": 0.5,
        "rope_parameters": None,
        "rope_scaling": None,
    }


_CHATGLM = decoder(
    Layout(qkv_bias="add_qkv_bias", o_bias="add_bias_linear", mlp_bias="add_bias_linear", every_stage=True),
    _prepare,
)

FAMILIES: dict[str, Family] = {"ChatGLMForConditionalGeneration": _CHATGLM, "ChatGLMModel": _CHATGLM}

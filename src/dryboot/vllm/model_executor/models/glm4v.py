"""GLM-4V (``glm4v.py``, ``GLM4VForCausalLM``, the ChatGLM layout with a vision tower): the ChatGLM
language model of the config's own fields (``chatglm.py``: :class:`.compose.Layout` with a fused
``query_key_value`` (biased under ``add_qkv_bias``), ``dense`` and the MLP biased under
``add_bias_linear``, ``multi_query_group_num`` KV heads under ``multi_query_attention``,
``kv_channels`` per head, a rotary table ``[seq_length, kv_channels / 2]``; embedding, final norm
and output layer on every pipeline stage, as ``ChatGLMModel`` builds them), then on every TP
rank and pipeline stage the EVA2-CLIP tower, in the model dtype:

* ``cls_embedding`` ``[1, D]``, the Conv2d patch embedding ``[D, C, P, P]`` + bias,
  ``position_embedding`` ``[num_positions, D]``;
* per layer (:func:`.towers.vit_block`, sharded) two LayerNorms, ``query_key_value`` ``[3 D / TP,
  D]`` + bias, ``dense`` + bias, ``fc1`` / ``fc2`` + biases;
* the Conv2d ``conv`` ``[H, D, 2, 2]`` + bias; the GLU projector: ``linear_proj`` ``[H, H]``
  (replicated, no bias), a LayerNorm ``[H]``, ``merged_proj`` ``[2 F / TP, H]``, ``dense_4h_to_h``
  ``[H, F / TP]`` (``F = ffn_hidden_size``); ``boi`` / ``eoi`` ``[1, 1, H]``.

``--language-model-only`` or ``--limit-mm-per-prompt`` image 0 drops them. ChatGLM's LayerNorm
variant (``rmsnorm`` false) and a config without the final norm (``post_layer_norm`` false) are
refused by name."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from dryboot.errors import InputError
from dryboot.vllm.model_executor.model_loader import weights as W
from dryboot.vllm.model_executor.models.compose import Family, Layout, decoder, vision_language
from dryboot.vllm.model_executor.models.towers import linear, tensors, vit_block


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


def _tower(v: Mapping[str, Any], text: Mapping[str, Any], tp: int, ab: int) -> W.RankWeights:
    d, p = W._int(v, "hidden_size"), W._int(v, "patch_size")
    W._divide(W._int(v, "num_heads"), tp, "the vision tower's num_heads")
    h, f = W._int(text, "hidden_size"), W._int(text, "ffn_hidden_size")
    f_r = W._divide(f, tp, "ffn_hidden_size")
    counts = [d, *linear(d, W._int(v, "in_channels", 3) * p * p), W._int(v, "num_positions") * d]
    counts += vit_block(d, W._int(v, "intermediate_size"), tp) * W._int(v, "num_hidden_layers")
    counts += [*linear(h, d * 4), h * h, h, h, 2 * f_r * h, h * f_r, h, h]
    return tensors("vision", counts, ab)


FAMILIES: dict[str, Family] = {
    "GLM4VForCausalLM": vision_language(CHATGLM_TEXT, _tower, ("image",)),
}

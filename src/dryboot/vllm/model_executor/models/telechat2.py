"""TeleChat2 (``TeleChat2ForCausalLM``): vLLM's ``telechat2.py`` (0.27.1-0.33.0), ``llama.py``'s
``LlamaForCausalLM`` over ``TeleChat2Model`` on the checkpoint's own ``Telechat2Config`` (remote
code, ``auto_map``; its defaults, :data:`DEFAULTS`).

``TeleChat2Model`` rewrites the config's ``attribute_map`` (``num_hidden_layers`` / ``num_attention_heads``
/ ``intermediate_size`` read as ``n_layer`` / ``n_head`` / ``ffn_hidden_size``), builds every
``LlamaDecoderLayer`` with ``bias`` and ``mlp_bias`` on, then drops the biases of ``qkv_proj`` and
``gate_up_proj``: what stays is Llama's layout (:func:`.compose.built_as` ``LlamaForCausalLM``) plus,
per layer, the ``RowParallelLinear`` biases of ``o_proj`` and ``down_proj`` (``[H]`` each, whole on
every TP rank). ``Telechat2Config`` has no ``max_position_embeddings``: ``LlamaDecoderLayer``'s
default 8192 sizes the rotary table. Embedding on the first stage, final norm and LM head on the
last (a tied head on a later stage holds its own embedding copy).

Refused by name: quantized checkpoints (unquantized layouts only: the published TeleChat2
checkpoints are bfloat16).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from dryboot.errors import InputError
from dryboot.vllm.model_executor.model_loader import weights as W
from dryboot.vllm.model_executor.models.compose import Family, WalkArgs, built_as

ARCH = "TeleChat2ForCausalLM"
#: ``Telechat2Config``'s defaults the walk reads (``tests/fidelity/data/remote-code/telechat2``),
#: and ``LlamaDecoderLayer``'s ``max_position_embeddings`` default (the class sets none)
DEFAULTS: dict[str, Any] = {
    "vocab_size": 160256,
    "hidden_size": 4096,
    "n_layer": 30,
    "n_head": 32,
    "ffn_hidden_size": 12288,
    "max_position_embeddings": 8192,
}


def _prepare(config: Mapping[str, Any]) -> dict[str, Any]:
    """The config as ``TeleChat2Model``'s ``attribute_map`` reads it (module docstring).

    :raises InputError: a field under its other name (``num_hidden_layers``, ``num_attention_heads``,
        ``intermediate_size``, ``n_embed``: which one the classes keep is not modelled), no
        ``num_key_value_heads`` (vLLM's ModelConfig refuses None) or no ``tie_word_embeddings``
        (vLLM's llama.py raises AttributeError)."""
    for key in ("num_hidden_layers", "num_attention_heads", "intermediate_size", "n_embed"):
        if key in config:
            raise InputError("config.json", key, f"Telechat2Config's other name for a field ({key}) is not modelled")
    if config.get("num_key_value_heads") is None:
        raise InputError("config.json", "num_key_value_heads", f"{ARCH} needs it (vLLM's ModelConfig refuses None)")
    if "tie_word_embeddings" not in config:
        raise InputError("config.json", "tie_word_embeddings", f"{ARCH} needs it (vLLM's llama.py reads it)")
    c = {**DEFAULTS, **config}
    c.update(
        num_hidden_layers=c["n_layer"],
        num_attention_heads=c["n_head"],
        intermediate_size=c["ffn_hidden_size"],
        attention_bias=False,
        mlp_bias=False,
    )
    return c


def _row_biases(config: Mapping[str, Any], par: W.Parallel, ab: int) -> W.RankWeights:
    """``o_proj``'s and ``down_proj``'s biases (``[H]`` each) on every layer of the stage."""
    w = W._Walk(None, par.vllm_version)
    h = W._int(config, "hidden_size")
    for _ in W.pp_layers(W._int(config, "num_hidden_layers"), par):
        w.own("bias", h * ab)
        w.own("bias", h * ab)
    return w.result()


_LLAMA = built_as("LlamaForCausalLM", prepare=_prepare, extra=_row_biases)


def _walk(config: Mapping[str, Any], par: W.Parallel, args: WalkArgs) -> W.RankWeights:
    if W.quant_from_config(config, args.hf_quant).method is not None:
        raise InputError("quantization_config", "quant_method", f"quantized {ARCH} layouts are not modelled")
    return _LLAMA.walk(config, par, args)


FAMILIES: dict[str, Family] = {ARCH: Family(_walk)}

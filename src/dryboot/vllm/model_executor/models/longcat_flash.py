"""LongCat-Flash (``longcat_flash.py``, ``LongcatFlashForCausalLM``): ``num_layers`` layers, each
with two multi-head latent attentions (DeepSeek-V2's, :func:`weights._mla_attention`, one rotary
table ``[positions, qk_rope_head_dim]`` for all of them), four RMSNorms, two gated MLPs of
``ffn_hidden_size``, and one MoE block: the router ``classifier`` ``[E + Z, H]`` (float32 when
``router_dtype`` is ``float32``, its default; a bias under ``router_bias``), an
``e_score_correction_bias`` ``[E + Z]`` of the same dtype, and ``n_routed_experts`` experts of
``expert_ffn_hidden_size`` (``Z = zero_expert_num``: identity experts, no weights). The embedding
on the first stage, the final norm and the untied head on the last.

From 0.32 the release reads the config with transformers' ``LongcatFlashConfig`` (vLLM's
``FlashConfig`` is gone; switch ``hf_config_class_architectures``): its defaults
(:data:`HF_DEFAULTS`), its aliases (``intermediate_size`` / ``moe_intermediate_size`` name
``ffn_hidden_size`` / ``expert_ffn_hidden_size``), no default for the fields the model class reads
(:data:`~dryboot.vllm.models.deepseek.LONGCAT_HF_REQUIRED`: refused by name, as vLLM fails
building the model), and the router always float32 without a bias (``router_dtype`` /
``router_bias`` no longer read). Recorded on the meta device on 0.32.0 and 0.33.0
(``tests/fidelity/data/weights/recorded-<release>-fields.json``).

On 0.27.1 and 0.31.0 (switch ``longcat_hidden_layers_field``) ``FlashConfig`` takes transformers' own
``num_hidden_layers`` field (config.json's, else 56) as its layer count: a config where that is not
``num_layers`` is refused as the KV geometry refuses it
(:func:`dryboot.vllm.models.deepseek.check_longcat_layers`); the 0.31.0 sweep's 56-layer record of
the 2-layer tiny config is what vLLM builds without weights."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from dryboot.errors import InputError
from dryboot.vllm.model_executor.model_loader import weights as W
from dryboot.vllm.model_executor.models.compose import Family, WalkArgs, unquantized
from dryboot.vllm.models.common import config_class_lacks
from dryboot.vllm.models.deepseek import LONGCAT_HF_REQUIRED, LongcatLayers, check_longcat_layers
from dryboot.vllm.versions import rules_for

#: ``FlashConfig``'s defaults (``longcat_flash.py``) the walk reads
DEFAULTS: dict[str, Any] = {
    "max_position_embeddings": 8192,
    "q_lora_rank": 1536,
    "qk_rope_head_dim": 64,
    "v_head_dim": 128,
    "qk_nope_head_dim": 128,
    "tie_word_embeddings": False,
    "router_dtype": "float32",
    "router_bias": False,
    "zero_expert_num": 0,
}


#: transformers' ``LongcatFlashConfig`` defaults (0.32+) the walk reads
HF_DEFAULTS: dict[str, Any] = {
    "vocab_size": 131072,
    "hidden_size": 6144,
    "num_layers": 28,
    "num_attention_heads": 64,
    "max_position_embeddings": 131072,
    "tie_word_embeddings": False,
    "ffn_hidden_size": 12288,
    "q_lora_rank": 1536,
    "kv_lora_rank": 512,
    "qk_nope_head_dim": 128,
    "qk_rope_head_dim": 64,
    "v_head_dim": 128,
    "n_routed_experts": 512,
    "zero_expert_num": 256,
    "expert_ffn_hidden_size": 2048,
}
#: transformers' ``LongcatFlashConfig.attribute_map``: a key of config.json stored as its target
_HF_ALIASES = {"intermediate_size": "ffn_hidden_size", "moe_intermediate_size": "expert_ffn_hidden_size"}


def _hf_class(config: Mapping[str, Any]) -> dict[str, Any]:
    """The config as transformers' ``LongcatFlashConfig`` holds it (0.32+), in this walk's names.

    :raises InputError: a field the model class reads without a default, or ``num_hidden_layers``
        (the class derives ``num_layers`` from it: not modelled)."""
    for key in LONGCAT_HF_REQUIRED:
        if config.get(key) is None:
            raise InputError("config.json", key, config_class_lacks("LongCat-Flash", "LongcatFlashConfig", key))
    if "num_hidden_layers" in config:
        raise InputError(
            "config.json",
            "num_hidden_layers",
            "transformers' LongcatFlashConfig sets num_layers to half of it: not modelled",
        )
    c = {**HF_DEFAULTS, **{_HF_ALIASES.get(k, k): v for k, v in config.items()}}
    c["num_hidden_layers"] = c["num_layers"]
    c["intermediate_size"] = c["ffn_hidden_size"]
    c["moe_intermediate_size"] = c["expert_ffn_hidden_size"]
    c["router_dtype"], c["router_bias"] = "float32", False
    return c


def _names(config: Mapping[str, Any]) -> dict[str, Any]:
    c = dict(config)
    c.setdefault("num_hidden_layers", c.get("num_layers"))
    c["intermediate_size"] = c.get("ffn_hidden_size", c.get("intermediate_size"))
    if "moe_intermediate_size" not in c:
        c["moe_intermediate_size"] = c.get("expert_ffn_hidden_size", c["intermediate_size"])
    c["rope_parameters"] = c.get("rope_scaling") or c.get("rope_parameters") or {"rope_type": "default"}
    return c


def walk(config: Mapping[str, Any], par: W.Parallel, args: WalkArgs) -> W.RankWeights:
    """One rank of one stage (module docstring).

    :raises InputError: a quantization method, checkpoint headers, a tied head, sizes TP does
        not divide, a layer count the release reads otherwise (0.27.1, 0.31.0)."""
    rules = rules_for(par.vllm_version)
    if rules.longcat_hidden_layers_field:
        hidden = config.get("num_hidden_layers")
        n = W._int({"num_layers": HF_DEFAULTS["num_layers"], **config}, "num_layers")
        check_longcat_layers("config.json", LongcatLayers(n, hidden if isinstance(hidden, int) else None), rules)
    if "LongcatFlashForCausalLM" in rules.hf_config_class_architectures:
        hf, ab = unquantized(config, args)
        c = _hf_class(hf)
    else:
        merged, ab = unquantized(config, args, DEFAULTS)
        c = _names(merged)
    if c.get("tie_word_embeddings"):
        raise InputError("config.json", "tie_word_embeddings", "a tied LongCat-Flash head is not modelled")
    if isinstance(c.get("num_experts"), list) and "n_routed_experts" not in c:
        raise InputError("config.json", "num_experts", "experts per layer are not modelled")
    tp = par.tp
    h = W._int(c, "hidden_size")
    e, z = W._int(c, "n_routed_experts"), W._int(c, "zero_expert_num")
    router = 4 if c.get("router_dtype") == "float32" else ab
    vocab_r = W.padded_vocab_per_rank(W._int(c, "vocab_size"), tp)
    w = W._Walk(None, par.vllm_version)
    if par.pp_rank == 0:
        w.own("embedding", vocab_r * h * ab)
    if par.pp_rank == par.pp - 1:
        w.own("norm", h * ab)
        w.own("lm_head", vocab_r * h * ab)
    layers = W.pp_layers(W._int(c, "num_hidden_layers"), par)
    i_r = W._divide(W._int(c, "intermediate_size"), tp, "ffn_hidden_size")
    moe_i = W._int(c, "moe_intermediate_size")
    for li in layers:
        for j in range(2):
            W._mla_attention(w, c, W.Quant(), tp, f"model.layers.{li}.self_attn.{j}", h, ab)
        for _ in range(4):
            w.own("norm", h * ab)
        for _ in range(2):
            w.own("mlp", 2 * i_r * h * ab)
            w.own("mlp", h * i_r * ab)
        w.own("router", (e + z) * h * router)
        if c.get("router_bias"):
            w.own("router", (e + z) * router)
        w.own("router", (e + z) * router)
        e_r, m_r = W.experts_per_rank(e, moe_i, tp, par, "expert_ffn_hidden_size")
        for kind, nbytes in W.experts_bytes(W.Quant(), e_r, h, m_r, ab):
            w.own(kind, nbytes)
        if par.expert_parallel:
            w.own("expert map", 4 * e, buffer=True)
    if layers:
        w.own("rotary", W._rotary_bytes(c, W._int(c, "qk_rope_head_dim"), ab), buffer=True)
    return w.result()


FAMILIES: dict[str, Family] = {"LongcatFlashForCausalLM": Family(walk)}

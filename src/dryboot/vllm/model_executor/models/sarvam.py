"""Sarvam (``sarvam.py``): Sarvam-M MLA and Sarvam MoE.

Sarvam-M MLA (``SarvamMLAForCausalLM``): GLM-4.7-Flash's parameters (the walk's ``glm4_moe_lite``
layout: DeepSeek's MLA, dense layers below ``first_k_dense_replace``, MoE with shared experts, its
float32 ``e_score_correction_bias`` always built, the gate an ``nn.Linear`` in float32 up to 0.30
and a ``GateLinear`` in the model dtype from 0.31 on: ``VersionRules.moe_gate_model_dtype``); a
pipeline stage without MoE layers is refused as vLLM refuses it ("No SarvamMLAMoE layer found").

Sarvam MoE (``SarvamMoEForCausalLM``): ``bailing_moe.py``'s ``BailingMoeForCausalLM`` on
transformers' ``SarvamMoEConfig`` (its defaults, :data:`MOE_DEFAULTS`; ``num_experts`` /
``num_shared_experts`` / ``use_qkv_bias`` are its ``n_routed_experts`` / ``n_shared_experts`` /
``attention_bias``). Per layer: a fused ``query_key_value`` (biased under ``use_bias`` or
``use_qkv_bias``), ``dense`` ``[H, heads x head_dim / TP]``, two RMSNorms, under ``use_qk_norm``
per-head QK-norms ``[head_dim]`` (RMSNorms under ``use_rmsnorm``, else ``nn.LayerNorm`` with its
bias); below ``first_k_dense_replace`` a gated MLP of ``intermediate_size``, above it the router
``[E, H]`` (float32 under ``router_dtype`` ``fp32``, else the model dtype), under
``moe_router_enable_expert_bias`` a float32 ``expert_bias`` ``[E]``, a gated shared MLP
``(moe_shared_expert_intermediate_size or moe_intermediate_size) x num_shared_experts`` wide and the
``FusedMoE`` experts; one rotary table over ``rotary_dim`` (else ``head_dim``: a
``partial_rotary_factor`` is not read, recorded on 0.28.0-0.30.0, refused by name on the others).
``use_bias`` (biases on the dense and shared MLPs too) and a ``router_dtype`` other than ``fp32`` (a
bfloat16 router) are refused by name; so is a config without ``use_bias`` or ``embedding_dropout``,
which the model class reads (vLLM raises ``AttributeError``). vLLM serves it where the release's
transformers knows ``sarvam_moe`` (0.28.0-0.30.0; the registry guard refuses the others)."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import replace
from typing import Any

from dryboot.errors import InputError
from dryboot.vllm.model_executor.model_loader import weights as W
from dryboot.vllm.model_executor.models.compose import Family, Layout, WalkArgs, built_as, decoder

#: transformers' ``SarvamMoEConfig`` defaults the walk reads (``n_routed_experts`` / ``n_shared_experts``
#: under vLLM's names, through the class's ``attribute_map``)
MOE_DEFAULTS: dict[str, Any] = {
    "vocab_size": 262144,
    "hidden_size": 4096,
    "intermediate_size": 8192,
    "num_hidden_layers": 19,
    "num_attention_heads": 64,
    "num_key_value_heads": 4,
    "max_position_embeddings": 131072,
    "tie_word_embeddings": False,
    "moe_intermediate_size": 1024,
    "num_shared_experts": 1,
    "num_experts": 128,
    "first_k_dense_replace": 1,
    "use_qk_norm": True,
    "head_dim": 64,
}
#: releases whose full rotary table under a ``partial_rotary_factor`` is recorded (every release whose
#: transformers knows ``sarvam_moe``)
PARTIAL_ROTARY_IGNORED = ("0.28.0", "0.29.0", "0.30.0")
#: the config class's names of vLLM's fields (``attribute_map``)
_ALIASES = {"n_routed_experts": "num_experts", "n_shared_experts": "num_shared_experts"}


def _partial_rotary(config: Mapping[str, Any]) -> bool:
    rope = config.get("rope_parameters") or config.get("rope_scaling")
    return "partial_rotary_factor" in config or (isinstance(rope, Mapping) and "partial_rotary_factor" in rope)


def _moe_config(config: Mapping[str, Any], version: str) -> dict[str, Any]:
    """The config as ``BailingMoeForCausalLM`` reads it (module docstring).

    :raises InputError: ``use_bias`` or ``embedding_dropout`` absent, ``use_bias`` true, a
        ``router_dtype`` other than ``fp32``, a ``partial_rotary_factor`` off 0.28.0-0.30.0."""
    arch = "SarvamMoEForCausalLM"
    for key in ("use_bias", "embedding_dropout"):
        if key not in config:
            raise InputError("config.json", key, f"{arch} reads {key}, which SarvamMoEConfig lacks (vLLM raises)")
    if config.get("use_bias"):
        raise InputError("config.json", "use_bias", f"{arch} with use_bias (biased MLPs) is not modelled")
    if config.get("router_dtype") not in (None, "fp32"):
        raise InputError("config.json", "router_dtype", f"{arch}'s bfloat16 router is not modelled")
    c = {**MOE_DEFAULTS, **{_ALIASES.get(k, k): v for k, v in config.items()}}
    c["attention_bias"] = bool(config.get("use_qkv_bias") or config.get("attention_bias"))
    if _partial_rotary(config) and version not in PARTIAL_ROTARY_IGNORED:
        raise InputError(
            "config.json",
            "partial_rotary_factor",
            f"{arch}'s partial_rotary_factor is checked on vLLM {', '.join(PARTIAL_ROTARY_IGNORED)} only",
        )
    # rotary_dim, else head_dim: the class reads partial_rotary_factor as a config attribute, which
    # transformers keeps inside rope_parameters, and writes the factor it finds (1) back over it
    rotary = c.get("rotary_dim")
    c["partial_rotary_factor"] = 1.0 if rotary is None else W._int(c, "rotary_dim") / W._int(c, "head_dim")
    return c


def _moe_layer(config: Mapping[str, Any], li: int) -> bool:
    return li >= W._int(config, "first_k_dense_replace")


def _shared(config: Mapping[str, Any]) -> int:
    inter = config.get("moe_shared_expert_intermediate_size") or W._int(config, "moe_intermediate_size")
    if type(inter) is not int:
        raise InputError("config.json", "moe_shared_expert_intermediate_size", "not an integer")
    return inter * W._int(config, "num_shared_experts")


_MOE = Layout(qkv_bias="attention_bias", moe=_moe_layer, shared=_shared)


def _sarvam_moe(config: Mapping[str, Any], par: W.Parallel, args: WalkArgs) -> W.RankWeights:
    c = _moe_config(config, par.vllm_version)
    layout = replace(
        _MOE,
        qk_norm="head" if c.get("use_qk_norm") else None,
        qk_norm_bias=not c.get("use_rmsnorm"),
        router_fp32=c.get("router_dtype") == "fp32",
        score_bias=bool(c.get("moe_router_enable_expert_bias")),
    )
    return decoder(layout).walk(c, par, args)


FAMILIES: dict[str, Family] = {
    "SarvamMLAForCausalLM": built_as("Glm4MoeLiteForCausalLM"),
    "SarvamMoEForCausalLM": Family(_sarvam_moe),
}

"""Param2 MoE (``Param2MoEForCausalLM``): vLLM's ``param2moe.py`` (0.27.1-0.33.0) on the
checkpoint's own ``Param2MoEConfig`` (remote code, ``auto_map``: BharatGen's converter writes it
beside ``config.json``; its defaults are ``BailingMoeV2Config``'s,
:data:`.bailing_moe.V2_DEFAULTS`).

Per layer (``Param2MoEDecoderLayer``): two RMSNorms, ``Param2MoEAttention``'s ``qkv_proj``
(``QKVParallelLinear``, biased under ``use_qkv_bias``) and ``o_proj`` (biased under ``use_bias``),
under ``use_qk_norm`` RMSNorm QK-norms ``[head_dim]``; below ``first_k_dense_replace`` a gated
``Param2MoEMLP`` of ``intermediate_size`` (never biased), above it ``Param2MoEMoEBlock``: the router
``gate`` ``[E, H]`` (an ``nn.Linear`` in the model dtype up to 0.30, a float32 ``GateLinear`` from
0.31 on: :data:`FLOAT32_ROUTER`), under ``moe_router_enable_expert_bias`` (default on) a float32
``e_score_correction_bias`` ``[E]``, a gated shared MLP ``moe_shared_expert_intermediate_size``
wide (the total: not multiplied; absent or null: ``moe_intermediate_size`` x ``num_shared_experts``)
and the ``FusedMoE`` experts. The rotary table: ``get_rope`` over ``head_dim`` x the config's
``partial_rotary_factor`` attribute (1 where the release's transformers keeps the factor in
``rope_parameters`` only: :data:`.bailing_moe.PARTIAL_ROTARY_ATTRIBUTE`), narrowed again by the
``rope_parameters``' own factor, which the class builds its rope from (on 0.27.1, 0.31.0 and 0.32.0
a file's factor applies twice: recorded). Embedding on the
first stage, final norm and LM head on the last.

Refused by name as vLLM refuses them: a TP size that does not divide the KV heads (asserted, no
replication), a pipeline stage without MoE layers ("No Param2MoEMoEBlock found"); and quantized
checkpoints (unquantized layouts only: the published Param2 checkpoints are bfloat16).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from dryboot.errors import InputError
from dryboot.vllm.model_executor.model_loader import weights as W
from dryboot.vllm.model_executor.models.bailing_moe import V2_DEFAULTS, partial_rotary_attribute
from dryboot.vllm.model_executor.models.compose import Family, Layout, WalkArgs, decoder, merged, no_sinks

ARCH = "Param2MoEForCausalLM"
#: releases whose ``Param2MoEMoEBlock`` builds its router as a float32 ``GateLinear`` (0.31.0's
#: ``param2moe.py`` on; before, an ``nn.Linear`` in the model dtype): recorded on 0.27.1-0.33.0
FLOAT32_ROUTER = ("0.31.0", "0.32.0", "0.33.0")


def _moe_layer(config: Mapping[str, Any], li: int) -> bool:
    return li >= W._int(config, "first_k_dense_replace")


def _shared(config: Mapping[str, Any]) -> int:
    """``Param2MoEMoEBlock``'s shared MLP width (module docstring; 0 shared experts: none)."""
    n = W._int(config, "num_shared_experts")
    if n <= 0:
        return 0
    if config.get("moe_shared_expert_intermediate_size") is not None:
        return W._int(config, "moe_shared_expert_intermediate_size")
    return W._int(config, "moe_intermediate_size") * n


def _walk(config: Mapping[str, Any], par: W.Parallel, args: WalkArgs) -> W.RankWeights:
    c = {**V2_DEFAULTS, **config}
    c["head_dim"] = c.get("head_dim") or W._int(c, "hidden_size") // W._int(c, "num_attention_heads")
    if c.get("num_experts") is None:  # param2moe.py then builds no MoE block: not recorded
        raise InputError(
            "config.json", "num_experts", f"{ARCH} without routed experts (num_experts null) is not modelled"
        )
    nkv = W._int(c, "num_key_value_heads")
    if nkv % par.tp:
        raise InputError(
            "config.json",
            "num_key_value_heads",
            f"num_key_value_heads ({nkv}) must be divisible by tensor-parallel world size ({par.tp}). "
            f"(vLLM's {ARCH} attention, AssertionError while building the model)",
        )
    if not any(_moe_layer(c, li) for li in W.pp_layers(W._int(c, "num_hidden_layers"), par)):
        raise InputError(
            "--pipeline-parallel-size",
            None,
            "a stage without MoE layers: No Param2MoEMoEBlock found in model.layers (vLLM's "
            f"{ARCH} refuses it: first_k_dense_replace {W._int(c, 'first_k_dense_replace')})",
        )
    layout = Layout(
        qkv_bias="use_qkv_bias",
        o_bias="use_bias",
        qk_norm="head" if c.get("use_qk_norm") else None,
        moe=_moe_layer,
        shared=_shared,
        router_fp32=par.vllm_version in FLOAT32_ROUTER,
        score_bias=bool(c.get("moe_router_enable_expert_bias")),
        rope=None,
        sinks=no_sinks,
    )
    return merged(decoder(layout).walk(c, par, args), _rotary(c, par, args))


def _rotary(config: Mapping[str, Any], par: W.Parallel, args: WalkArgs) -> W.RankWeights:
    """The one rotary table (``get_rope``'s cache): ``get_rope(int(head_dim x the partial_rotary_factor
    attribute), rope_parameters)``, whose own ``partial_rotary_factor`` narrows it again."""
    hd = W._int(config, "head_dim")
    rope_dim = int(hd * float(partial_rotary_attribute(config, par.vllm_version)))
    w = W._Walk(None, par.vllm_version)
    w.own("rotary", W._rotary_bytes(config, rope_dim, W.model_dtype_bytes(config, args.dtype)), buffer=True)
    return w.result()


FAMILIES: dict[str, Family] = {ARCH: Family(_walk)}

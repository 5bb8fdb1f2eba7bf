"""Bailing (``BailingMoeForCausalLM``: Ling v1) and Bailing-V2 (``BailingMoeV2ForCausalLM``): vLLM's
``bailing_moe.py`` ``BailingMoeForCausalLM`` (0.27.1-0.33.0; ``BailingMoeV2ForCausalLM`` is its
subclass, the same layers) on the checkpoint's own config class (remote code, ``auto_map``):
``BailingMoeConfig`` for Ling-lite / Ling-plus / Ling-Coder-lite (its defaults, :data:`V1_DEFAULTS`),
``BailingMoeV2Config`` for Ling-mini-2.0 / Ling-flash-2.0 / Ling-1T (:data:`V2_DEFAULTS`).

Per layer (``BailingMoeBlock``): two RMSNorms, ``BailingAttention``'s fused ``query_key_value``
(``QKVParallelLinear``, biased under ``use_bias`` or ``use_qkv_bias``) and ``dense`` ``[H, heads x
head_dim / TP]`` (biased under ``use_bias``), under ``use_qk_norm`` per-head QK-norms ``[head_dim]``
(``nn.LayerNorm`` with its bias: the class sets no ``use_rmsnorm``; RMSNorms under it); below
``first_k_dense_replace`` a gated ``BailingMLP`` of ``intermediate_size``, above it ``BailingMoE``:
the router ``gate`` ``[E, H]`` (an ``nn.Linear`` up to 0.30, a ``GateLinear`` from 0.31 on, both in
``router_dtype``: float32 under ``fp32``, else the model dtype), under
``moe_router_enable_expert_bias`` a float32 ``expert_bias`` ``[E]``, a gated shared ``BailingMLP``
``moe_shared_expert_intermediate_size`` (else ``moe_intermediate_size``) x ``num_shared_experts``
wide and the ``FusedMoE`` experts (no bias). ``BailingMLP``'s ``gate_up_proj`` / ``down_proj`` (the
dense layers' and the shared experts') are biased under ``use_bias``, which ``BailingMoeConfig``
defaults to true (Bailing-V2's class to false). One rotary table over ``rotary_dim``, else
``head_dim`` x the config's ``partial_rotary_factor`` attribute, which the transformers of
0.28.0-0.30.0 and 0.33.0 keep inside ``rope_parameters`` only: there the class finds no attribute of
that name and uses the whole head (:data:`PARTIAL_ROTARY_ATTRIBUTE`; both config classes take it
as an extra keyword; recorded on 0.27.1-0.33.0). Embedding on the first stage, final norm and LM head
on the last (a tied head on a later stage: its own embedding copy). ``norm_head`` changes only how
the head's weight is loaded, not its size.

Refused by name: Bailing-V2's ``use_bias`` (not recorded), a ``router_dtype`` other than ``fp32``
(vLLM's bfloat16 router), a shared width given as null (vLLM multiplies it), no KV heads (``0``,
``BailingMoeConfig``'s default: vLLM's ``QKVParallelLinear`` divides by it), quantized checkpoints
(unquantized layouts only: the published Ling checkpoints are bfloat16).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from dryboot.errors import InputError
from dryboot.vllm.model_executor.model_loader import weights as W
from dryboot.vllm.model_executor.models.compose import Family, Layout, WalkArgs, decoder, no_sinks

ARCH = "BailingMoeV2ForCausalLM"
V1_ARCH = "BailingMoeForCausalLM"
#: releases whose transformers (5.10.4, 5.17.0, 5.19.0) keeps a remote-code config's
#: ``partial_rotary_factor`` as an attribute, which ``bailing_moe.py`` / ``param2moe.py`` read with
#: ``getattr``; 0.28.0-0.30.0 (5.24.0) and 0.33.0 (5.20.2) keep it in ``rope_parameters`` only
#: (recorded on every release: ``recorded-<release>-remote-families.json``)
PARTIAL_ROTARY_ATTRIBUTE = ("0.27.1", "0.31.0", "0.32.0")
#: the checkpoints' ``BailingMoeV2Config`` defaults the walk reads
#: (``tests/fidelity/data/remote-code/bailing_moe_v2/configuration_bailing_moe_v2.py``)
V2_DEFAULTS: dict[str, Any] = {
    "vocab_size": 157184,
    "hidden_size": 2048,
    "intermediate_size": 5120,
    "num_hidden_layers": 20,
    "num_attention_heads": 16,
    "num_key_value_heads": 4,
    "use_qkv_bias": False,
    "use_bias": False,
    "tie_word_embeddings": False,
    "max_position_embeddings": 32768,
    "num_experts": 256,
    "num_shared_experts": 1,
    "moe_intermediate_size": 512,
    "first_k_dense_replace": 1,
    "head_dim": 128,
    "use_qk_norm": True,
    "moe_router_enable_expert_bias": True,
}


#: the checkpoints' ``BailingMoeConfig`` defaults the walk reads (Ling v1:
#: ``tests/fidelity/data/remote-code/bailing_moe/configuration_bailing_moe.py``); ``intermediate_size``
#: and ``moe_intermediate_size`` default to None (a layer that reads them is refused)
V1_DEFAULTS: dict[str, Any] = {
    "vocab_size": 30592,
    "hidden_size": 1024,
    "num_hidden_layers": 24,
    "num_attention_heads": 16,
    "num_key_value_heads": 0,
    "use_qkv_bias": False,
    "use_bias": True,
    "tie_word_embeddings": False,
    "max_position_embeddings": 16384,
    "num_experts": 16,
    "num_shared_experts": 0,
    "first_k_dense_replace": 0,
}


#: vLLM's ``BailingMoE`` builds its shared experts as a ``BailingMLP`` with ``reduce_results=False``,
#: whose ``RowParallelLinear`` refuses a bias (``use_bias``, ``BailingMoeConfig``'s default) at any TP
#: (recorded on 0.27.1-0.33.0: ``recorded-<release>-bailing-v1-shared-bias.json``)
SHARED_BIAS_REFUSED = (
    "ValueError: When not reduce the results, adding bias to the results can lead to incorrect results "
    f"(vLLM's RowParallelLinear: {V1_ARCH}'s shared experts under use_bias, BailingMoeConfig's default true)"
)


def _v1_config(config: Mapping[str, Any], version: str) -> dict[str, Any]:
    """The config as ``BailingMoeForCausalLM`` reads it from ``BailingMoeConfig`` (module docstring).

    :raises InputError: no KV heads, biased shared experts (:data:`SHARED_BIAS_REFUSED`), a
        ``router_dtype`` other than ``fp32``, a null shared width."""
    c = {**V1_DEFAULTS, **config}
    if c.get("num_key_value_heads") == 0:
        raise InputError(
            "config.json",
            "num_key_value_heads",
            f"0 (BailingMoeConfig's default): vLLM's QKVParallelLinear for {V1_ARCH} divides by it",
        )
    moe_layers = W._int(c, "first_k_dense_replace") < W._int(c, "num_hidden_layers")
    if c.get("use_bias") and moe_layers and W._int(c, "num_shared_experts") > 0:
        raise InputError("config.json", "use_bias", SHARED_BIAS_REFUSED)
    return _bailing_config(c, config, version, V1_ARCH)


def _v2_config(config: Mapping[str, Any], version: str) -> dict[str, Any]:
    """The config as ``BailingMoeForCausalLM`` reads it from ``BailingMoeV2Config`` (module docstring).

    :raises InputError: ``use_bias`` true, a ``router_dtype`` other than ``fp32``, a null shared width."""
    c = {**V2_DEFAULTS, **config}
    if c.get("use_bias"):
        raise InputError("config.json", "use_bias", f"{ARCH} with use_bias (biased MLPs) is not modelled")
    return _bailing_config(c, config, version, ARCH)


def _bailing_config(c: dict[str, Any], config: Mapping[str, Any], version: str, arch: str) -> dict[str, Any]:
    """``c`` (the config over its class's defaults) with what ``BailingMoeForCausalLM`` derives:
    ``head_dim``, the attention bias (``use_bias`` or ``use_qkv_bias``) and the rotary factor.

    :raises InputError: a ``router_dtype`` other than ``fp32``, a null shared width."""
    if c.get("router_dtype") not in (None, "fp32"):
        raise InputError("config.json", "router_dtype", f"{arch}'s bfloat16 router is not modelled")
    if "moe_shared_expert_intermediate_size" in c and c["moe_shared_expert_intermediate_size"] is None:
        raise InputError(
            "config.json", "moe_shared_expert_intermediate_size", "null (vLLM's BailingMoE multiplies it): not modelled"
        )
    c["head_dim"] = c.get("head_dim") or W._int(c, "hidden_size") // W._int(c, "num_attention_heads")
    c["attention_bias"] = bool(c.get("use_bias") or c.get("use_qkv_bias"))
    # rotary_dim, else head_dim x the partial_rotary_factor attribute (a release's transformers that
    # keeps none: 1), written back as the factor get_rope reads
    hd = W._int(c, "head_dim")
    rotary = c.get("rotary_dim")
    if rotary is None:
        rotary = int(hd * float(partial_rotary_attribute(config, version)))
    c["partial_rotary_factor"] = W._int({"rotary_dim": rotary}, "rotary_dim") / hd
    return c


def partial_rotary_attribute(config: Mapping[str, Any], version: str) -> Any:
    """What ``getattr(config, "partial_rotary_factor", 1.0)`` reads on a remote-code config class
    (``BailingMoeV2Config``, ``Param2MoEConfig``) under release ``version``'s transformers: the file's
    ``partial_rotary_factor`` where that transformers keeps it as an attribute
    (:data:`PARTIAL_ROTARY_ATTRIBUTE`), else 1.0 (it lives in ``rope_parameters`` only).

    :raises InputError: a factor that is not a number."""
    factor = config.get("partial_rotary_factor", 1.0) if version in PARTIAL_ROTARY_ATTRIBUTE else 1.0
    if type(factor) not in (int, float) or not 0 < factor <= 1:
        raise InputError("config.json", "partial_rotary_factor", "must be a number in (0, 1]")
    return factor


def _moe_layer(config: Mapping[str, Any], li: int) -> bool:
    return li >= W._int(config, "first_k_dense_replace")


def _shared(config: Mapping[str, Any]) -> int:
    """``BailingMoE``'s shared MLP width: ``moe_shared_expert_intermediate_size`` where the config
    has it (else ``moe_intermediate_size``) times ``num_shared_experts`` (0: none)."""
    key = "moe_shared_expert_intermediate_size" if "moe_shared_expert_intermediate_size" in config else None
    inter = W._int(config, key or "moe_intermediate_size")
    return inter * W._int(config, "num_shared_experts")


def _walk(c: Mapping[str, Any], par: W.Parallel, args: WalkArgs) -> W.RankWeights:
    """One rank of one stage of ``BailingMoeForCausalLM`` on the config ``c`` as read (module docstring)."""
    layout = Layout(
        qkv_bias="attention_bias",
        o_bias="use_bias",
        mlp_bias="use_bias",
        shared_bias="use_bias",
        qk_norm="head" if c.get("use_qk_norm") else None,
        qk_norm_bias=not c.get("use_rmsnorm"),
        moe=_moe_layer,
        shared=_shared,
        router_fp32=c.get("router_dtype") == "fp32",
        score_bias=bool(c.get("moe_router_enable_expert_bias")),
        sinks=no_sinks,
    )
    return decoder(layout).walk(c, par, args)


def _v1_walk(config: Mapping[str, Any], par: W.Parallel, args: WalkArgs) -> W.RankWeights:
    return _walk(_v1_config(config, par.vllm_version), par, args)


def _v2_walk(config: Mapping[str, Any], par: W.Parallel, args: WalkArgs) -> W.RankWeights:
    return _walk(_v2_config(config, par.vllm_version), par, args)


FAMILIES: dict[str, Family] = {V1_ARCH: Family(_v1_walk), ARCH: Family(_v2_walk)}

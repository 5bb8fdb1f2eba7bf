"""Hunyuan V3 (``hy_v3.py``, ``HYV3ForCausalLM``): Llama's attention with per-head q/k norms
(under ``qk_norm``, true by default), a gated MLP of ``intermediate_size`` on the layers below
``first_k_dense_replace``, a MoE block on the others: the float32 router ``[E, H]``, the float32
``expert_bias`` ``[E]``, a gated shared MLP ``expert_hidden_dim x num_shared_experts`` wide and
``num_experts`` experts of ``expert_hidden_dim`` (the config's ``moe_intermediate_size`` is not
read); one rotary table in the model dtype; an untied head unless the config ties it. vLLM
refuses TP above the number of experts and a pipeline stage without MoE layers. (vLLM's HPC
attention backend, ``--attention-backend HPC_ATTN``, keeps the rotary table in float32: not
modelled, the default backends' table is.)"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from dryboot.errors import InputError
from dryboot.vllm.model_executor.model_loader import weights as W
from dryboot.vllm.model_executor.models.compose import Family, Layout, decoder

#: ``HYV3Config``'s defaults (``transformers_utils/configs/hy_v3.py``) the walk reads
DEFAULTS: dict[str, Any] = {
    "qk_norm": True,
    "tie_word_embeddings": False,
    "num_experts": 192,
    "num_shared_experts": 1,
    "expert_hidden_dim": 1536,
    "moe_router_enable_expert_bias": True,
    "first_k_dense_replace": 1,
    "max_position_embeddings": 131072,
}


def _prepare(config: Mapping[str, Any]) -> Mapping[str, Any]:
    c = {**DEFAULTS, **config}
    if not c.get("qk_norm"):
        raise InputError("config.json", "qk_norm", "HYV3ForCausalLM without qk_norm is not modelled")
    return c


def _moe(config: Mapping[str, Any], li: int) -> bool:
    return li >= W._int(config, "first_k_dense_replace")


def _shared(config: Mapping[str, Any]) -> int:
    return W._int(config, "expert_hidden_dim") * W._int(config, "num_shared_experts")


FAMILIES: dict[str, Family] = {
    "HYV3ForCausalLM": decoder(
        Layout(
            qk_norm="head",
            moe=_moe,
            shared=_shared,
            router_fp32=True,
            score_bias=True,
            moe_inter_key="expert_hidden_dim",
            tp_over_experts_refused=True,
            stage_needs_moe=True,
        ),
        _prepare,
    ),
}

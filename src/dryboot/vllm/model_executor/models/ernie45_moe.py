"""ERNIE 4.5 MoE (``ernie45_moe.py``, ``Ernie4_5_MoeForCausalLM``): Llama's attention, dense gated MLPs
outside ``[moe_layer_start_index, moe_layer_end_index]`` (every ``moe_layer_interval``), else a MoE
block: the router in float32 with its float32 ``e_score_correction_bias`` ``[E]``,
``moe_num_shared_experts`` shared experts (one gated MLP ``moe_intermediate_size x
moe_num_shared_experts`` wide) and ``moe_num_experts`` experts; the head tied unless the config
unties it. TP above the experts is refused, as vLLM refuses it. vLLM 0.28.0 fails it under pipeline
parallelism (``PPMissingLayer`` has no ``tie_weights``): refused by name."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from dryboot.vllm.model_executor.model_loader import weights as W
from dryboot.vllm.model_executor.models.compose import Family, Layout, decoder, without_pp

#: ``Ernie4_5_MoeConfig``'s defaults (transformers 5.x) for what a config leaves out
DEFAULTS: dict[str, Any] = {
    "tie_word_embeddings": True,
    "moe_num_shared_experts": 2,
    "moe_layer_start_index": 1,
    "moe_layer_interval": 1,
    "moe_layer_end_index": -1,
}


def _prepare(config: Mapping[str, Any]) -> Mapping[str, Any]:
    return {**DEFAULTS, **config}


def _moe_layer(config: Mapping[str, Any], li: int) -> bool:
    start, step = W._int(config, "moe_layer_start_index"), W._int(config, "moe_layer_interval")
    end = config.get("moe_layer_end_index")
    end = W._int(config, "num_hidden_layers") - 1 if end in (None, -1) else int(end)
    return bool(config.get("moe_num_experts")) and start <= li <= end and (li + 1) % step == 0


def _shared(config: Mapping[str, Any]) -> int:
    return W._int(config, "moe_intermediate_size") * W._int(config, "moe_num_shared_experts")


FAMILIES: dict[str, Family] = {
    "Ernie4_5_MoeForCausalLM": without_pp(
        decoder(
            Layout(
                tied=True,
                moe=_moe_layer,
                shared=_shared,
                router_fp32=True,
                score_bias=True,
                experts_key="moe_num_experts",
                tp_over_experts_refused=True,
            ),
            _prepare,
            refused=("use_bias",),
        )
    ),
}

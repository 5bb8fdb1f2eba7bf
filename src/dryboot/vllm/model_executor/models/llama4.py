"""Llama 4 text model (``llama4.py``, ``Llama4ForCausalLM``): Llama's attention (its q/k L2 norm, on
the layers with rope, keeps a float32 ``[head_dim]`` of ones as a plain attribute; the layers with
rope share one ``llama3`` table, which a pipeline stage of only layers without rope does not hold),
a MoE block every ``interleave_moe_layer_step`` layers (router ``[E, H]``, a gated shared expert and
``num_local_experts`` experts, both of ``intermediate_size``), a dense gated MLP of
``intermediate_size_mlp`` elsewhere; the head untied unless the config ties it."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from dryboot.vllm.model_executor.model_loader import weights as W
from dryboot.vllm.model_executor.models.compose import Family, Layout, decoder


def _moe_layer(config: Mapping[str, Any], li: int) -> bool:
    step = W._int(config, "interleave_moe_layer_step", 1)
    return step > 0 and (li + 1) % step == 0


def _rope(config: Mapping[str, Any], li: int) -> bool:
    """``no_rope_layers``: 1 for a layer with rope."""
    flags = config.get("no_rope_layers") or []
    return bool(flags[li]) if li < len(flags) else True


def _qk_norm(config: Mapping[str, Any], li: int, hd: int) -> tuple[int, ...]:
    """The q/k L2 norm of a layer with rope keeps a float32 ``weight`` ``[head_dim]`` of ones as a
    plain attribute."""
    return (4 * hd,) if _rope(config, li) and config.get("use_qk_norm", True) else ()


def _shared(config: Mapping[str, Any]) -> int:
    return W._int(config, "intermediate_size")


LLAMA4_TEXT = Layout(
    moe=_moe_layer,
    shared=_shared,
    experts_key="num_local_experts",
    moe_inter_key="intermediate_size",
    dense_inter_key="intermediate_size_mlp",
    attributes=_qk_norm,
    uses_rope=_rope,
)

FAMILIES: dict[str, Family] = {
    "Llama4ForCausalLM": decoder(LLAMA4_TEXT, refused=("attention_bias",)),
}

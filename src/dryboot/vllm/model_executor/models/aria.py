"""Aria (``aria.py``, ``AriaForConditionalGeneration``): its MoE language model (``AriaTextModel``:
Llama's layers with every MLP a ``FusedMoE`` block of ``moe_num_experts`` experts of
``intermediate_size``, the router ``[E, H]`` in the model dtype and a gated shared MLP of
``intermediate_size x moe_num_shared_experts``; :class:`.compose.Layout`), then on every TP rank
and pipeline stage the Idefics3-style SigLIP tower (:mod:`.siglip` over ``Idefics3VisionConfig``'s
defaults: no ``position_ids`` buffer, no post LayerNorm) and the projector, in the model dtype:

* ``query`` ``[max(projector_patch_to_query_dict), D]``;
* the cross attention (replicated): ``q_proj`` / ``k_proj`` / ``v_proj`` ``[D, D]`` (no biases),
  ``nn.MultiheadAttention`` (``in_proj`` ``[3 D, D]`` + bias, ``out_proj`` ``[D, D]`` + bias),
  ``linear`` ``[D, D]`` + bias, LayerNorms ``layer_norm`` / ``layer_norm_kv``;
* a LayerNorm ``[D]``; the FFN ``linear_in`` ColumnParallel ``[H / TP, D]``, ``linear_out``
  RowParallel ``[H, H / TP]`` (no biases).

``--language-model-only`` or ``--limit-mm-per-prompt`` image 0 drops them. No pipeline
parallelism (vLLM refuses it)."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from dryboot.vllm.model_executor.model_loader import weights as W
from dryboot.vllm.model_executor.models import idefics3, siglip
from dryboot.vllm.model_executor.models.compose import Family, Layout, decoder, text_config, vision_language, without_pp
from dryboot.vllm.model_executor.models.towers import linear, tensors

TEXT = decoder(
    Layout(
        moe=lambda c, li: True,
        experts_key="moe_num_experts",
        moe_inter_key="intermediate_size",
        shared=lambda c: W._int(c, "intermediate_size") * W._int(c, "moe_num_shared_experts", 2),
    ),
    prepare=lambda c: {"max_position_embeddings": 2048, "rope_theta": 10000.0, **c},
)


def _tower(config: Mapping[str, Any], text: Mapping[str, Any], tp: int, ab: int) -> W.RankWeights:
    v = {**idefics3.VISION_DEFAULTS, **(config.get("vision_config") or {})}
    w = siglip.vision_tower(v, tp, ab, position_ids=False, post_norm=False)
    d = W._int(v, "hidden_size")
    h = W._int(text, "hidden_size")
    h_r = W._divide(h, tp, "the projector's width")
    queries = config.get("projector_patch_to_query_dict") or {"1225": 128, "4900": 256}
    n_query = max(int(x) for x in queries.values())
    counts = [n_query * d, d * d, d * d, d * d, *linear(3 * d, d), *linear(d, d), *linear(d, d), d, d, d, d]
    counts += [d, d, h_r * d, h * h_r]
    return tensors("vision", counts, ab, into=w)


FAMILIES: dict[str, Family] = {
    "AriaForConditionalGeneration": without_pp(
        vision_language(TEXT, _tower, ("image",), tower_of=lambda c: c, text_of=text_config)
    ),
}

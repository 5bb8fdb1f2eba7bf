"""GLM-4V (``glm4v.py``, ``GLM4VForCausalLM``, the ChatGLM layout with a vision tower): the ChatGLM
language model of the config's own fields (:mod:`.chatglm`), then on every TP
rank and pipeline stage the EVA2-CLIP tower, in the model dtype:

* ``cls_embedding`` ``[1, D]``, the Conv2d patch embedding ``[D, C, P, P]`` + bias,
  ``position_embedding`` ``[num_positions, D]``;
* per layer (:func:`.towers.vit_block`, sharded) two LayerNorms, ``query_key_value`` ``[3 D / TP,
  D]`` + bias, ``dense`` + bias, ``fc1`` / ``fc2`` + biases;
* the Conv2d ``conv`` ``[H, D, 2, 2]`` + bias; the GLU projector: ``linear_proj`` ``[H, H]``
  (replicated, no bias), a LayerNorm ``[H]``, ``merged_proj`` ``[2 F / TP, H]``, ``dense_4h_to_h``
  ``[H, F / TP]`` (``F = ffn_hidden_size``); ``boi`` / ``eoi`` ``[1, 1, H]``.

``--language-model-only`` or ``--limit-mm-per-prompt`` image 0 drops them."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from dryboot.vllm.model_executor.model_loader import weights as W
from dryboot.vllm.model_executor.models.chatglm import CHATGLM_TEXT
from dryboot.vllm.model_executor.models.compose import Family, vision_language
from dryboot.vllm.model_executor.models.towers import linear, tensors, vit_block


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

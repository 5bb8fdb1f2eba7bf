"""Llama 4 with its vision tower (``mllama4.py``, ``Llama4ForConditionalGeneration``): the Llama 4
text model of ``text_config`` (:mod:`.llama4`), then on every TP rank and pipeline stage, in the
model dtype:

* the vision model: ``class_embedding`` ``[D]``, ``positional_embedding_vlm`` ``[N + 1, D]``
  (``N = (image_size / patch_size)^2``), the unfold patch embedding ``linear`` (ColumnParallel
  ``[D / TP, C x P x P]``, no bias), ``layernorm_pre`` / ``layernorm_post`` (weight, bias); per
  layer ``qkv_proj`` ``[3 D / TP, D]`` + bias, ``o_proj`` ``[D, D / TP]`` + bias, ``fc1`` ``[I /
  TP, D]`` + bias, ``fc2`` ``[D, I / TP]`` + bias, two LayerNorms (weight, bias); its 2-D rotary
  table, one complex64 ``[N + 1, 1, head_dim / 2]`` buffer;
* the pixel-shuffle adapter (``fc1`` ``[projector_input_dim / TP, intermediate_size]``, ``fc2``
  ``[projector_output_dim, projector_input_dim / TP]``, biases under
  ``multi_modal_projector_bias``) and the projector ``linear_1`` ``[H_text / TP,
  vision_output_dim]`` (no bias).

Under ``--mm-encoder-tp-mode data`` (``Llama4ForConditionalGeneration`` has
``supports_encoder_tp_data``) the vision model and the adapter are built whole on every rank
(``disable_tp`` linears, the attention's ``ReplicatedLinear``), the projector stays split.
``--language-model-only`` or ``--limit-mm-per-prompt`` image 0 drops them. A quantized checkpoint
keeps them so (vLLM builds them with ``quant_config=None``); its language model is
:func:`.llama4.quantized_walk`'s. A config without ``vision_config`` gets ``Llama4VisionConfig``'s
defaults (:func:`vision_config`).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from dryboot.vllm.model_executor.model_loader import weights as W
from dryboot.vllm.model_executor.models import llama4
from dryboot.vllm.model_executor.models.compose import Family, WalkArgs, vision_language

#: ``Llama4VisionConfig``'s defaults (transformers 5.x) for what a ``vision_config`` leaves out
DEFAULTS: dict[str, Any] = {
    "hidden_size": 768,
    "num_hidden_layers": 34,
    "num_attention_heads": 16,
    "num_channels": 3,
    "intermediate_size": 5632,
    "vision_output_dim": 7680,
    "image_size": 448,
    "patch_size": 14,
    "projector_input_dim": 4096,
    "projector_output_dim": 4096,
    "multi_modal_projector_bias": False,
}


def vision_config(config: Mapping[str, Any]) -> Any:
    """The vision config ``Llama4Config`` gives the tower: ``vision_config`` as written, or an
    empty one (so :data:`DEFAULTS` throughout) where config.json has none or ``null``
    (``Llama4Config`` then builds ``Llama4VisionConfig()``; the published Llama-4 Scout and
    Maverick copies of aiconfigurator have no ``vision_config``, and vLLM builds the default tower).
    Anything else is returned as is (refused by the tower's reader)."""
    vision = config.get("vision_config")
    return {} if vision is None else vision


def _tower(v: Mapping[str, Any], text: Mapping[str, Any], tp: int, ab: int) -> W.RankWeights:
    v = {**DEFAULTS, **v}
    d, inter, heads = W._int(v, "hidden_size"), W._int(v, "intermediate_size"), W._int(v, "num_attention_heads")
    W._divide(heads, tp, "the vision tower's num_attention_heads")
    d_r, i_r = W._divide(d, tp, "the vision hidden size"), W._divide(inter, tp, "the vision intermediate_size")
    p, c = W._int(v, "patch_size"), W._int(v, "num_channels")
    positions = (W._int(v, "image_size") // p) ** 2 + 1
    pin, pout = W._int(v, "projector_input_dim"), W._int(v, "projector_output_dim")
    pin_r = W._divide(pin, tp, "projector_input_dim")
    bias = bool(v.get("multi_modal_projector_bias"))
    sizes = [d, positions * d, d_r * c * p * p, d, d, d, d]
    block = [3 * d_r * d, 3 * d_r, d * d_r, d, i_r * d, i_r, d * i_r, d, d, d, d, d]
    sizes += block * W._int(v, "num_hidden_layers")
    sizes += [pin_r * inter, *([pin_r] if bias else []), pout * pin_r, *([pout] if bias else [])]
    w = W.RankWeights()
    for n in sizes:
        w.add("vision", n * ab)
    w.add("rotary", positions * (d // heads // 2) * 8, buffer=True)  # complex64
    return w


def _projector(v: Mapping[str, Any], text: Mapping[str, Any], tp: int, ab: int) -> W.RankWeights:
    """``Llama4MultiModalProjector.linear_1`` on one rank, ``[H_text / TP, vision_output_dim]``:
    a ``ColumnParallelLinear`` without ``disable_tp``, split in either ``--mm-encoder-tp-mode``."""
    v = {**DEFAULTS, **v}
    h_r = W._divide(W._int(text, "hidden_size"), tp, "the projector's width")
    w = W.RankWeights()
    w.add("vision", h_r * W._int(v, "vision_output_dim") * ab)
    return w


_UNQUANTIZED = vision_language(
    "Llama4ForCausalLM", _tower, modalities=("image",), tower_of=vision_config, split_in_data=_projector
)
#: a quantized checkpoint: the tower and projectors are built with ``quant_config=None`` (0.28.0,
#: 0.30.0, 0.33.0 read), so in the model dtype as above; the language model quantized as
#: :func:`.llama4.quantized_walk` says, under its ``language_model.`` names
_QUANTIZED = vision_language(
    Family(llama4.walk),
    _tower,
    modalities=("image",),
    tower_of=vision_config,
    quantized=lambda q: True,
    split_in_data=_projector,
)


def walk(config: Mapping[str, Any], par: W.Parallel, args: WalkArgs) -> W.RankWeights:
    """One rank of one stage: the unquantized wrapper, or a quantized one (its language model
    after loading, :func:`.llama4.quantized_walk`)."""
    if W.quant_from_config(config, args.hf_quant).method is None:
        return _UNQUANTIZED.walk(config, par, args)
    return _QUANTIZED.walk(config, par, args)


FAMILIES: dict[str, Family] = {"Llama4ForConditionalGeneration": Family(walk, ("image",))}

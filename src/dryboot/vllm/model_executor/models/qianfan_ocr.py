"""Qianfan-OCR (``qianfan_ocr.py``, ``QianfanOCRForConditionalGeneration``, InternVL's chat layout):
the Qwen3 language model of ``text_config``, then on every TP rank and pipeline stage InternViT
(``intern_vit.py``, all ``num_hidden_layers``, sharded) and the pixel-shuffle projector ``mlp1``
(replicated), in the model dtype:

* embeddings: ``class_embedding`` ``[1, 1, D]``, ``position_embedding`` ``[1, N + 1, D]`` (``N =
  (image / patch)^2``), the Conv2d patch embedding ``[D, 3, P, P]`` + bias;
* per layer (:func:`.towers.vit_block`; the attention replicated where TP does not divide the
  heads): LayerNorms ``norm1`` / ``norm2``, ``attn.qkv`` ``[3 D / TP, D]`` + bias (under
  ``qkv_bias``), ``attn.proj`` + bias, ``mlp.fc1`` / ``fc2`` + biases, and the layer scales
  ``ls1`` / ``ls2`` ``[D]``;
* ``mlp1``: a LayerNorm over ``M = D / downsample_ratio^2``, ``[H, M]`` + bias, ``[H, H]`` + bias.

Vision fields left out take ``QianfanOCRVisionConfig``'s defaults; ``norm_type`` ``rms_norm``
gives RMSNorms (no biases). ``--language-model-only`` or ``--limit-mm-per-prompt`` image 0 and
video 0 drop them (InternVL's chat model marks its tower for both). ``qk_normalization`` (RMS q/k
norms) is refused by name."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from dryboot.errors import InputError
from dryboot.vllm.model_executor.model_loader import weights as W
from dryboot.vllm.model_executor.models.compose import Family, Tower, text_config, vision_language
from dryboot.vllm.model_executor.models.towers import linear, tensors, vit_block

#: ``QianfanOCRVisionConfig``'s defaults (vLLM's ``transformers_utils/configs/qianfan_ocr.py``)
VISION_DEFAULTS: dict[str, Any] = {
    "hidden_size": 1024,
    "intermediate_size": 4096,
    "num_hidden_layers": 24,
    "num_attention_heads": 16,
    "num_channels": 3,
    "image_size": 448,
    "patch_size": 14,
    "qkv_bias": True,
    "norm_type": "layer_norm",
}


def intern_vit_tower(defaults: Mapping[str, Any]) -> Tower:
    """The tower of InternVL's chat model class (``internvl.py`` ``InternVLChatModel``: InternViT and
    ``mlp1``, module docstring) over ``vision_config``, its fields left out taking ``defaults`` (the
    vision config class's)."""

    def tower(config: Mapping[str, Any], text: Mapping[str, Any], tp: int, ab: int) -> W.RankWeights:
        return _tower({**defaults, **(config.get("vision_config") or {})}, config, text, tp, ab)

    return tower


def _tower(v: Mapping[str, Any], config: Mapping[str, Any], text: Mapping[str, Any], tp: int, ab: int) -> W.RankWeights:
    if v["norm_type"] not in ("layer_norm", "rms_norm"):
        raise InputError("config.json", "vision_config.norm_type", f"{v['norm_type']!r} is not modelled")
    if v.get("qk_normalization"):
        raise InputError("config.json", "vision_config.qk_normalization", "InternViT's q/k norms are not modelled")
    d, p = W._int(v, "hidden_size"), W._int(v, "patch_size")
    # heads TP does not divide: the attention is replicated (``InternParallelAttention``), the MLP not
    split = W._int(v, "num_attention_heads") % tp == 0
    counts = [d, ((W._int(v, "image_size") // p) ** 2 + 1) * d, *linear(d, W._int(v, "num_channels") * p * p)]
    inter = W._int(v, "intermediate_size")
    block = vit_block(
        d,
        inter,
        tp,
        shard=split,
        shard_mlp=True,
        qkv_bias=bool(v["qkv_bias"]),
        norm_bias=v["norm_type"] == "layer_norm",
        layer_scale=True,
    )
    counts += block * W._int(v, "num_hidden_layers")
    m = int(d / float(config.get("downsample_ratio", 0.5)) ** 2)
    h = W._int(text, "hidden_size")
    counts += [m, m, *linear(h, m), *linear(h, h)]
    return tensors("vision", counts, ab)


FAMILIES: dict[str, Family] = {
    "QianfanOCRForConditionalGeneration": vision_language(
        "Qwen3ForCausalLM",
        intern_vit_tower(VISION_DEFAULTS),
        ("image", "video"),
        tower_of=lambda c: c,
        text_of=text_config,
    ),
}

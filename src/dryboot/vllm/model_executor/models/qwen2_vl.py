"""Qwen2-VL and Qwen2.5-VL (``qwen2_vl.py``, ``qwen2_5_vl.py``): the Qwen2 text model (multimodal
RoPE: its table spans four times ``max_position_embeddings``) and their vision transformers,
sharded by TP (``mm_encoder_tp_mode`` ``weights``), in the model dtype.

Qwen2-VL (``Qwen2VisionTransformer``): Conv3d patch embedding ``[D, C, T, P, P]`` (no bias), per
block two LayerNorms (weight, bias), ``attn.qkv`` ``[3 D / TP, D]`` + bias, ``attn.proj`` ``[D, D
/ TP]`` + bias, ``mlp.fc1`` ``[R / TP, D]`` + bias, ``mlp.fc2`` ``[D, R / TP]`` + bias (``D =
embed_dim``, ``R = D x mlp_ratio``); the merger: LayerNorm ``ln_q`` ``[D]``, ``mlp.0`` ``[M / TP,
M]`` + bias, ``mlp.2`` ``[out, M / TP]`` + bias (``M = D x spatial_merge_size^2``, ``out`` the
vision config's ``hidden_size``).

Qwen2.5-VL (``Qwen2_5_VisionTransformer``): the same with RMSNorms (weight only) and a gated MLP,
``mlp.gate_up_proj`` ``[2 I / TP, D]`` + bias, ``mlp.down_proj`` ``[D, I / TP]`` + bias (``D =
hidden_size``, ``I = intermediate_size``), the merger's ``ln_q`` an RMSNorm and ``out =
out_hidden_size``.

Both: the rotary table ``[8192, head_dim / 2]`` (``get_rope`` with ``partial_rotary_factor``
0.5) and the device-side input normalization's two float32 ``[3]`` buffers. A vision config
leaves out what its transformers class defaults (:data:`QWEN2_VL_VISION`,
:data:`QWEN2_5_VL_VISION`).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from dryboot.vllm.model_executor.model_loader import weights as W
from dryboot.vllm.model_executor.models.compose import Family, add_input_norm, vision_language

#: ``Qwen2VLVisionConfig``'s defaults (transformers 5.x)
QWEN2_VL_VISION: dict[str, Any] = {
    "depth": 32,
    "embed_dim": 1280,
    "hidden_size": 3584,
    "mlp_ratio": 4,
    "num_heads": 16,
    "in_channels": 3,
    "patch_size": 14,
    "spatial_merge_size": 2,
    "temporal_patch_size": 2,
}
#: ``Qwen2_5_VLVisionConfig``'s defaults (transformers 5.x)
QWEN2_5_VL_VISION: dict[str, Any] = {
    "depth": 32,
    "hidden_size": 3584,
    "intermediate_size": 3420,
    "num_heads": 16,
    "in_channels": 3,
    "patch_size": 14,
    "spatial_merge_size": 2,
    "temporal_patch_size": 2,
    "out_hidden_size": 3584,
}
#: the vision transformers' rotary tables span 8192 positions
VISION_ROPE_POSITIONS = 8192


def _tower(
    v: Mapping[str, Any], tp: int, ab: int, *, d: int, gated: bool, r: int, out: int, input_norm: bool = True
) -> W.RankWeights:
    """One rank of a Qwen2-VL-style tower of width ``d``, MLP width ``r``, merger output ``out``
    (``gated``: Qwen2.5-VL's RMSNorms and gated MLP; ``input_norm``: the device-side input
    normalization's buffers)."""
    heads = W._int(v, "num_heads")
    W._divide(heads, tp, "the vision tower's num_heads")
    d_r = W._divide(d, tp, "the vision tower's width")
    r_r = W._divide(r, tp, "the vision tower's MLP width")
    p, t, c = W._int(v, "patch_size"), W._int(v, "temporal_patch_size"), W._int(v, "in_channels")
    m = d * W._int(v, "spatial_merge_size") ** 2
    m_r = W._divide(m, tp, "the vision merger's width")
    norm = [d] if gated else [d, d]  # RMSNorm: weight; LayerNorm: weight and bias
    mlp = [2 * r_r * d, 2 * r_r, d * r_r, d] if gated else [r_r * d, r_r, d * r_r, d]
    block = [*norm, *norm, 3 * d_r * d, 3 * d_r, d * d_r, d, *mlp]
    counts = [d * c * t * p * p, *block * W._int(v, "depth"), *norm, m_r * m, m_r, out * m_r, out]
    w = W.RankWeights()
    for n in counts:
        w.add("vision", n * ab)
    w.add("rotary", VISION_ROPE_POSITIONS * (d // heads // 2) * ab, buffer=True)
    if input_norm:
        add_input_norm(w)
    return w


def qwen2_vl_tower(vision: Mapping[str, Any], text: Mapping[str, Any], tp: int, ab: int) -> W.RankWeights:
    """``Qwen2VisionTransformer`` on one rank (module docstring)."""
    v = {**QWEN2_VL_VISION, **vision}
    d = W._int(v, "embed_dim")
    r = int(d * float(v["mlp_ratio"]))
    return _tower(v, tp, ab, d=d, gated=False, r=r, out=W._int(v, "hidden_size"))


def qwen2_5_vl_tower(
    vision: Mapping[str, Any], text: Mapping[str, Any], tp: int, ab: int, *, input_norm: bool = True
) -> W.RankWeights:
    """``Qwen2_5_VisionTransformer`` on one rank (module docstring); ``input_norm``: with the
    device-side input normalization (EXAONE 4.5's tower has none)."""
    v = {**QWEN2_5_VL_VISION, **vision}
    d, r = W._int(v, "hidden_size"), W._int(v, "intermediate_size")
    return _tower(v, tp, ab, d=d, gated=True, r=r, out=W._int(v, "out_hidden_size"), input_norm=input_norm)


def mrope_text(text: Mapping[str, Any]) -> dict[str, Any]:
    """A Qwen2-VL text config as transformers standardizes it: the multimodal RoPE's ``type``
    ``mrope`` is the ``default`` rope with its sections (``rope_type`` ``default``)."""
    out = dict(text)
    for key in ("rope_scaling", "rope_parameters"):
        rope = out.get(key)
        if isinstance(rope, Mapping) and str(rope.get("rope_type", rope.get("type"))) == "mrope":
            out[key] = {**{k: v for k, v in rope.items() if k != "type"}, "rope_type": "default"}
    return out


FAMILIES: dict[str, Family] = {
    "Qwen2VLForConditionalGeneration": vision_language("Qwen2ForCausalLM", qwen2_vl_tower, prepare=mrope_text),
    "Qwen2_5_VLForConditionalGeneration": vision_language("Qwen2ForCausalLM", qwen2_5_vl_tower, prepare=mrope_text),
}

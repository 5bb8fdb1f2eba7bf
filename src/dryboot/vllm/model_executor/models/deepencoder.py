"""The DeepEncoder towers of DeepSeek-OCR (``deepencoder.py``, ``deepencoder2.py``): fixed sizes in
vLLM's code, not read from the checkpoint's config, so the tower's bytes are constants of the
release (0.28.0), in the model dtype:

* SAM ViT-B (``build_sam_vit_b``: width 768, 12 blocks, 12 heads, global attention at blocks 2, 5,
  8, 11, window 14, 1024-pixel images in 16-pixel patches; replicated): the Conv2d patch
  embedding ``[768, 3, 16, 16]`` + bias, ``pos_embed`` ``[1, 64, 64, 768]``; per block two
  LayerNorms, ``qkv`` ``[2304, 768]`` + bias, ``proj`` + bias, relative positions ``rel_pos_h`` /
  ``rel_pos_w`` ``[2 S - 1, 64]`` (``S``: 64 for global blocks, 14 for windowed ones), the MLP
  ``[3072, 768]`` / ``[768, 3072]`` with biases; the neck (``[256, 768, 1, 1]``, a LayerNorm2d,
  ``[256, 256, 3, 3]``, a LayerNorm2d; no conv biases), ``net_2`` ``[512, 256, 3, 3]``, ``net_3``
  ``[C, 512, 3, 3]`` (``C``: 1024, or 896 for DeepSeek-OCR 2's encoder);
* DeepSeek-OCR's CLIP-L (``DeepCLIPVisionTransformer``: 1024 wide, 24 layers, 16 heads, 4096 MLP,
  224-pixel images in 14-pixel patches): :func:`.clip.vision_tower` (sharded, no post LayerNorm);
* DeepSeek-OCR 2's Qwen2 decoder used as an encoder (``build_qwen2_decoder_as_encoder``:
  transformers' ``Qwen2Model`` of 24 layers, 896 wide, 14 heads, 2 KV heads, 4864 MLP, not sharded,
  no embedding; its rotary ``inv_freq`` and ``original_inv_freq`` float32 ``[32]`` buffers) and its
  learned queries ``query_768`` ``[144, 896]``, ``query_1024`` ``[256, 896]``.
"""

from __future__ import annotations

from dryboot.vllm.model_executor.model_loader import weights as W
from dryboot.vllm.model_executor.models import clip
from dryboot.vllm.model_executor.models.towers import linear, tensors

SAM_WIDTH, SAM_BLOCKS, SAM_GLOBAL, SAM_WINDOW, SAM_GRID, SAM_HEAD = 768, 12, (2, 5, 8, 11), 14, 64, 64
CLIP_L = {
    "hidden_size": 1024,
    "intermediate_size": 4096,
    "num_attention_heads": 16,
    "num_hidden_layers": 24,
    "image_size": 224,
    "patch_size": 14,
}
QWEN2_ENCODER = {"layers": 24, "hidden": 896, "heads": 14, "kv_heads": 2, "intermediate": 4864}


def sam_vit_b(out_channels: int, ab: int) -> W.RankWeights:
    """SAM ViT-B and its neck on one rank (replicated; module docstring)."""
    d = SAM_WIDTH
    counts = [*linear(d, 3 * 16 * 16), SAM_GRID * SAM_GRID * d]
    for block in range(SAM_BLOCKS):
        span = 2 * (SAM_GRID if block in SAM_GLOBAL else SAM_WINDOW) - 1
        counts += [d, d, *linear(3 * d, d), *linear(d, d), span * SAM_HEAD, span * SAM_HEAD, d, d]
        counts += [*linear(4 * d, d), *linear(d, 4 * d)]
    counts += [256 * d, 256, 256, 256 * 256 * 9, 256, 256, 512 * 256 * 9, out_channels * 512 * 9]
    return tensors("vision", counts, ab)


def clip_l(tp: int, ab: int) -> W.RankWeights:
    """DeepSeek-OCR's CLIP-L on one rank (module docstring)."""
    return clip.vision_tower(CLIP_L, tp, ab, layers=CLIP_L["num_hidden_layers"])


def qwen2_encoder(ab: int) -> W.RankWeights:
    """DeepSeek-OCR 2's Qwen2 encoder and queries (replicated; module docstring)."""
    q = QWEN2_ENCODER
    h, i, hd = q["hidden"], q["intermediate"], q["hidden"] // q["heads"]
    kv = q["kv_heads"] * hd
    layer = [h, *linear(h, h), *linear(kv, h), *linear(kv, h), h * h, h, i * h, i * h, h * i]
    counts = [*layer * q["layers"], h, 144 * h, 256 * h]
    return tensors("vision", counts, ab, buffers=[4 * hd // 2, 4 * hd // 2])

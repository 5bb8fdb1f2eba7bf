"""The multimodal encoder's share of vLLM's profile run, as an interval (route b: read from
vLLM's code, not measured).

``GPUModelRunner.profile_run`` (V1 ``v1/worker/gpu_model_runner.py``; V2
``v1/worker/gpu/model_runner.py`` with ``mm/encoder_runner.py``'s ``profile_encoder_cache``),
0.27.1-0.33.0, before the decoder's dummy run:

1. ``MultiModalBudget`` (``multimodal/encoder_budget.py``): the largest item of each modality the
   limits leave on (``get_mm_max_tokens_per_item``), the encoder budget
   ``max(encoder_cache_size, max tokens per item)`` with ``encoder_cache_size =
   max_num_batched_tokens`` (``SchedulerConfig``), the modality with the most tokens per item
   (ties to the later name), and ``max(1, min(budget // tokens, max_num_seqs x
   max(1, min(limit, max_model_len // tokens))))`` items of it (``_get_max_items``, chunked
   prefill on);
2. one batched forward of the vision tower over those items (``embed_multimodal``);
3. the outputs kept in the encoder cache (``tmp_i``) through the decoder's dummy run and the
   sampler, freed after (``encoder_cache.clear()``, inside ``memory_profiling``). V1 also keeps
   the batched dummy inputs (the pixel values, ``batched_dummy_mm_inputs``) alive until
   ``profile_run`` returns.

So the transient peak is ``max(tower peak, outputs (+ V1's pixels) + decoder peak)``, which lies
between ``decoder peak + outputs`` and ``decoder peak + max(tower peak, outputs + pixels)``: the
term :func:`encoder_term` gives is that difference, over the decoder's own terms.

Towers bounded: the Qwen3-VL vision transformer (``Qwen3_VisionTransformer``:
``model_type`` ``qwen3_vl``, ``qwen3_vl_moe``, and the tower Qwen3.5 / Qwen3.6 share,
``qwen3_5``, ``qwen3_5_moe``), Qwen2.5-VL's (``Qwen2_5_VisionTransformer``, ``qwen2_5_vl``) and
Qwen2-VL's (``Qwen2VisionTransformer``, ``qwen2_vl``), and the fixed-size CLIP and SigLIP towers
of LLaVA (1.5: ``model_type`` ``llava``; LLaVA-NeXT's any-resolution tiles: ``llava_next``) and
PaliGemma (``paligemma``), Mistral3's Pixtral
(``mistral3``: one ``longest_edge`` square image, 2D rotary), Idefics3's and SmolVLM's tiles
(``idefics3``, ``smolvlm``), InternVL's InternViT-300M-class tower (``internvl_chat``: dynamic
tiles, pixel shuffle, and a video of one crop per frame for Qwen / gpt-oss text models), and
Gemma-3's SigLIP
(``gemma3``: one 896 crop per image, or the image and its pan-and-scan crops where
``--mm-processor-kwargs`` turns ``do_pan_and_scan`` on), and Gemma-4's variable-resolution
tower (``gemma4`` over ``gemma4_vision``: the dummy video of 32 padded frames, or with videos off
the padded dummy image; :func:`gemma4_tower`; with an ``audio_config``, the dummy audio of
512 samples where the audio counts the most tokens, :func:`gemma4_audio_term`), Llama-4's tiles
(``llama4``: :func:`llama4_tower`, the processor's tiles at the tower's side,
:func:`llama4_tile_refusal`), LLaVA-OneVision's SigLIP (``llava_onevision``: the fixed
1153 x 944 dummy or the pooled-frame video, :func:`_llava_onevision_tower`) and Kimi-VL's MoonViT
(``kimi_vl``: the 1024 px dummy under ``in_token_limit``, :func:`kimi_vl_tower`) and GLM-4.1V's /
GLM-4.5V's (``glm4v``, ``glm4v_moe``, with a ``Glm4vProcessor``: the largest image and the
dummy video of up to 600 frames at the processors' pixel areas, :func:`glm4v_sized`) and
Kimi-K2.5's MoonViT-3D (``kimi_k25``: the 3000 px image or video chunk under its
``media_proc_cfg``, :func:`kimi_k25_sized`) and MiniCPM-V 4.6 / 4.7's (``minicpmv4_6``,
``minicpmv4_7``: the sliced dummy image or video, every crop padded to the longest,
:func:`minicpmv4_6_sized`, :func:`minicpmv4_6_widest`). Any other tower (GLM-4.6V's processor,
MiniCPM-V's before 4.6 included) is refused by name. Where a config leaves the vision config (or
its keys) to its config class, the family's ``forward_config`` hook gives the one vLLM reads
(Qwen3-VL's default deepstack levels, Llama-4's default tower).
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from dataclasses import dataclass, replace
from typing import Any

from dryboot.errors import InputError
from dryboot.vllm.model_executor.models import clip, gemma4, idefics3, mllama4, siglip
from dryboot.vllm.model_executor.models.qwen2_vl import QWEN2_5_VL_VISION, QWEN2_VL_VISION
from dryboot.vllm.worker.interval import MIB, Term

#: ``vision_config.model_type`` of the towers bounded here (the Qwen3-VL vision transformer).
QWEN3_VISION_TYPES = ("qwen3_vl", "qwen3_vl_moe", "qwen3_5", "qwen3_5_moe", "qwen3_5_vision", "qwen3_5_moe_vision")
#: Qwen2-VL's and Qwen2.5-VL's towers.
QWEN2_VISION_TYPES = ("qwen2_vl", "qwen2_5_vl")
#: ``max_pixels`` of the published Qwen2-VL and Qwen2.5-VL ``preprocessor_config.json`` (the
#: image processor's size vLLM reads; 16,384 tokens at patch 14 and merge 2). Their videos use the
#: image processor's size too (``Qwen2VLProcessingInfo.get_num_video_tokens``).
QWEN2_IMAGE_MAX_PIXELS = 12_845_056
#: ``_MAX_FRAMES_PER_VIDEO`` (``qwen2_vl.py``, 0.27.1-0.33.0): the dummy video's frame cap.
QWEN2_MAX_FRAMES_PER_VIDEO = 14
#: the largest item dryboot sizes, merged tokens (a processor size past it is refused: no checkpoint
#: comes near it, and the factor search would not end in time).
MAX_ITEM_TOKENS = 1 << 24
#: wrappers whose image is one fixed-size crop through a CLIP or SigLIP tower (top-level
#: ``model_type``), with the towers they may hold (``vision_config.model_type``).
FIXED_SIZE_WRAPPERS = {
    "llava": ("clip_vision_model", "siglip_vision_model"),
    "paligemma": ("siglip_vision_model",),
    "gemma3": ("siglip_vision_model",),
    "llava_next": ("clip_vision_model", "siglip_vision_model"),
    "llava_onevision": ("siglip_vision_model",),
}
#: ``LlavaNextConfig.image_grid_pinpoints``' default (height, width pixels).
LLAVA_NEXT_PINPOINTS = ((336, 672), (672, 336), (672, 672), (1008, 336), (336, 1008))
#: LLaVA-OneVision (``llava_onevision.py``, 0.27.1-0.33.0): the dummy image
#: (``get_image_size_with_most_features``, fixed: width, height), the tiles' features
#: downscaled past ``anyres_max_9`` (the merge and the count both use 9, whatever the config's
#: ``vision_aspect_ratio``), the dummy video's frame cap (``_MAX_FRAMES_PER_VIDEO``) and the
#: frames' pooling stride (``apply_pooling``).
ONEVISION_DUMMY_IMAGE, ONEVISION_ANYRES_MAX, ONEVISION_MAX_FRAMES, ONEVISION_POOL_STRIDE = (1153, 944), 9, 16, 2
#: ``LlavaOnevisionConfig.image_grid_pinpoints``' default (height, width): every 1-6 by 1-6 grid
#: of 384 px tiles.
ONEVISION_PINPOINTS = tuple((384 * h, 384 * w) for h in range(1, 7) for w in range(1, 7))
#: ``Gemma3ProcessorKwargs._defaults["images_kwargs"]`` (transformers 5.x, the boot environments
#: of 0.27.1-0.33.0): vLLM's ``Gemma3ProcessingInfo`` reads the merged processor kwargs, in which
#: these defaults are always present, so the checkpoint's ``preprocessor_config.json`` does not
#: turn pan-and-scan on; only ``--mm-processor-kwargs`` does.
GEMMA3_PAN_AND_SCAN: dict[str, Any] = {
    "do_pan_and_scan": False,
    "pan_and_scan_min_crop_size": 256,
    "pan_and_scan_max_num_crops": 4,
    "pan_and_scan_min_ratio_to_activate": 1.2,
}
#: ``Gemma3Config.mm_tokens_per_image``'s default (the processor's ``image_seq_length``).
GEMMA3_TOKENS_PER_CROP = 256
#: ``PixtralVisionConfig``'s defaults (transformers 5.x) for what a Mistral3 ``vision_config``
#: leaves out.
PIXTRAL_DEFAULTS: dict[str, Any] = {
    "hidden_size": 1024,
    "intermediate_size": 4096,
    "num_attention_heads": 16,
    "num_channels": 3,
    "image_size": 1024,
    "patch_size": 16,
}
#: Idefics3 / SmolVLM: the top-level ``model_type`` and its tower's ``vision_config.model_type``.
IDEFICS3_WRAPPERS = {"idefics3": "idefics3_vision", "smolvlm": "smolvlm_vision"}
#: ``MAX_IMAGE_SIZE`` of transformers' Idefics3 image processor: no image side beyond it.
IDEFICS3_MAX_IMAGE_SIZE = 4096
#: ``Idefics3ImageProcessor``'s / ``SmolVLMImageProcessor``'s default ``size.longest_edge``, in
#: tiles (``4 x max_image_size``).
IDEFICS3_DEFAULT_TILES_PER_EDGE = 4
#: InternVL (``internvl_chat``): the text ``model_type``s whose tokenizer gives it a video token
#: (``InternVLProcessingInfo.ctx_video_token``'s map; Qwen's and gpt-oss's published tokenizers
#: hold the token, so their checkpoints profile a video).
INTERNVL_VIDEO_TEXT_TYPES = ("qwen2", "qwen3", "qwen3_moe", "gpt_oss")
#: Gemma-4 (``gemma4_mm.py``, 0.27.1-0.33.0): the ``max_soft_tokens`` the image processor accepts
#: (``--mm-processor-kwargs`` ``max_soft_tokens`` or ``images_kwargs.max_soft_tokens``; any
#: other value leaves ``vision_config.default_output_length``).
GEMMA4_SOFT_TOKENS = (70, 140, 280, 560, 1120)
#: a video frame's soft tokens, the dummy video's frames, and the tokens the budget adds per
#: frame beside its soft tokens (``_VIDEO_MAX_SOFT_TOKENS``, ``_VIDEO_MAX_FRAMES``, ``+ 2 + 6``).
GEMMA4_VIDEO_SOFT_TOKENS, GEMMA4_VIDEO_FRAMES, GEMMA4_FRAME_EXTRA = 70, 32, 8
#: the dummy image's and frames' side: ``Gemma4ImageProcessor`` keeps ``size`` None, so the
#: dummy builder falls back to 224 x 224.
GEMMA4_DUMMY_SIDE = 224
#: the largest card's memory whose tenth caps Gemma-4's encoder chunk (``_encoder_chunk``:
#: ``min(free / 2, total / 10)`` over ``patches x 4 x position_embedding_size x 8`` bytes an
#: item): 192 GiB, a B200's; the chunk a smaller card runs is smaller.
GEMMA4_CHUNK_CARD_BYTES = 192 << 30
#: Llama-4 (``mllama4.py``, 0.27.1-0.33.0): the ``vision_config.model_type`` of its tower, and
#: ``Llama4ImageProcessor``'s default ``max_patches`` (the tiles of the largest image; the
#: published checkpoints' ``preprocessor_config.json`` keep it).
LLAMA4_VISION_TYPE, LLAMA4_MAX_PATCHES = "llama4_vision_model", 16
#: ``Llama4VisionConfig.pixel_shuffle_ratio``'s default.
LLAMA4_PIXEL_SHUFFLE_RATIO = 0.5
#: ``Llama4ImageProcessor``'s default ``size`` (height and width of a tile, px; the published
#: checkpoints' ``preprocessor_config.json`` keep it): vLLM's tower adds its
#: ``(image_size / patch_size)^2 + 1`` position embeddings to each tile's patches, so a tile of any
#: other side than ``vision_config.image_size`` does not run (:func:`llama4_tile_refusal`).
LLAMA4_TILE_SIDE = 336
#: Gemma-4's audio (``gemma4_mm.py``, 0.27.1-0.33.0): ``Gemma4Processor``'s default
#: ``audio_seq_length`` (the tokens an audio item counts in ``get_mm_max_tokens_per_item``), and
#: the dummy audio: ``Gemma4AudioFeatureExtractor.fft_length`` samples (512 at its default 16 kHz
#: and 20 ms frames), 3 mel frames, one embedding after the two stride-2 convolutions
#: (``_compute_audio_num_tokens``).
GEMMA4_AUDIO_SEQ_LENGTH, GEMMA4_DUMMY_AUDIO_SAMPLES, GEMMA4_DUMMY_AUDIO_EMBEDS = 750, 512, 1
#: a bound on what the audio tower holds for one dummy audio item, in float32 elements per
#: ``audio_config.hidden_size``: at most 32 positions (the 3 mel frames' one subsampled position
#: in a chunk of ``attention_chunk_size`` 12 with ``attention_context_left`` 13) of at most 8
#: hidden widths each (the conformer's macaron MLPs' 4x, the attention's q, k, v and blocked
#: context); the convolution maps (128 channels over 3 x 128 mel bins) are added.
GEMMA4_AUDIO_ITEM_WIDTHS = 32 * 8
GEMMA4_AUDIO_CONV_ELEMENTS = 128 * 3 * 128
#: Kimi-VL (``kimi_vl.py``, 0.27.1-0.33.0, over a ``moonvit`` tower): the dummy image's side
#: (``MaxImageTokenMeta``: 1024 x 1024) and the image processor's ``in_token_limit`` of the
#: published Kimi-VL-A3B processors (a checkpoint's ``preprocessor_config.json`` replaces it).
KIMI_VL_DUMMY_SIDE, KIMI_VL_IN_TOKEN_LIMIT = 1024, 4096
#: GLM-4.1V / GLM-4.5V (``glm4_1v.py``, 0.27.1-0.33.0): the top-level ``model_type`` and its
#: tower's ``vision_config.model_type``; the processor class whose checkpoints vLLM counts by
#: processing the dummy items (``get_mm_max_tokens_per_item`` returns None for it: the count is
#: the embeddings of ``{image: 1, video: 1}`` dummies); the dummy video's frame cap
#: (``_MAX_FRAMES_PER_VIDEO``); the side of the dummy image asked of the resize rule; and the
#: ``min_pixels`` vLLM's ``_get_vision_info`` passes (smart_resize's default).
GLM4V_WRAPPERS = {"glm4v": "glm4v_vision", "glm4v_moe": "glm4v_moe_vision"}
GLM4V_PROCESSOR, GLM4V_MAX_FRAMES, GLM4V_DUMMY_SIDE, GLM4V_MIN_PIXELS = "Glm4vProcessor", 600, 9_999_999, 112 * 112
#: Kimi-K2.5 (``kimi_k25.py``, 0.27.1-0.33.0): the dummy image's side (``MaxImageTokenMeta``:
#: 3000 x 3000, a video chunk of ``temporal_merge_kernel_size`` such frames beside it), and its
#: tower's widths as transformers' ``Kimi_K25VisionConfig`` defaults them (the published config
#: names them ``vt_*``, its remote code's names: dryboot bounds only where both readings agree).
KIMI_K25_DUMMY_SIDE = 3000
KIMI_K25_WIDTHS = {"hidden_size": 1152, "intermediate_size": 4304, "num_attention_heads": 16}
#: ``vision_config`` keys whose other values change the tower's forward (its default first).
KIMI_K25_VARIANTS = {
    "mlp_type": "mlp2",
    "norm_type": "layernorm",
    "merge_type": "sd2_tpool",
    "mm_projector_type": "patchmerger",
    "video_attn_type": "spatial_temporal",
}
#: ``Mistral3Config.spatial_merge_size``'s default.
MISTRAL3_SPATIAL_MERGE = 2
#: the last release whose Pixtral tower (``PixtralHFTransformer``, without xformers, which vLLM
#: does not install) attends through one dense block-diagonal mask over every patch of the batch
#: (``generate_block_attention_mask``: ``N x N`` in the model dtype, ``N`` the batch's patches);
#: 0.29 moved it to ``MMEncoderAttention`` over packed sequences.
PIXTRAL_DENSE_MASK_UNTIL = (0, 28)
#: the Qwen3-VL image processor's default ``size["longest_edge"]`` in pixels (the published
#: ``preprocessor_config.json`` of Qwen3-VL keeps it): the largest image, 16,384 merged tokens at
#: patch 16 and merge 2 (``Qwen2VLProcessingInfo.get_image_size_with_most_features``).
QWEN3_IMAGE_MAX_PIXELS = 16_777_216
#: the Qwen3-VL video processor's default ``size["longest_edge"]`` (pixels over the temporal
#: patch): ``Qwen3VLProcessingInfo.get_max_video_tokens`` profiles 2 frames at
#: ``longest_edge // temporal_patch_size`` pixels: 12,288 tokens, below the image's.
QWEN3_VIDEO_MAX_PIXELS = 25_165_824
#: the tower's transient over its widest block's live tensors (low, high), percent: eager
#: PyTorch kernels' temporaries and the attention's workspace (FlashAttention varlen, linear in
#: the patches). One posted boot pins it: Qwen2.5-VL-7B-Instruct on vLLM 0.23.0 (A100-SXM4-80GB,
#: util 0.22, max len 128000: one video of 114,688 tokens, 458,752 patches) logs "Available KV
#: cache memory: -14.28 GiB" beside 15.67 GiB of weights and a 0.53 GiB graph estimate, so the
#: activation and non-torch memory are 15.51 GiB (activation 14.81-15.36 with 0.15-0.70 of
#: non-torch); the tower's certain widest point (13.14 GiB) with its pixel values (1.00-2.01)
#: is 14.15-15.15 GiB: the transient is at most 109 % of the certain point (docs/budget.md).
TOWER_SLACK = (100, 125)
#: bytes per pixel-value element on the device (low, high): the processor's float32 tensors,
#: cast to the model dtype inside the tower (``x.to(dtype=self.dtype)``) or before.
PIXEL_BYTES = (2, 4)


@dataclass(frozen=True)
class VisionTower:
    """The widths of a vision tower that :func:`encoder_term` bounds.

    :param model_type: ``vision_config.model_type``.
    :param hidden_size: the ViT's width; ``intermediate_size``: its MLP's; ``num_heads``.
    :param patch_size: pixels per patch side; ``temporal_patch_size``: frames per patch;
        ``spatial_merge_size``: patches merged per side into one output token.
    :param in_channels: colour channels.
    :param out_hidden_size: the merger's output width (the language model's hidden size).
    :param deepstack: how many deepstack mergers add their output beside the main one.
    :param gated: the MLP is gated (``gate_up_proj`` ``2 x intermediate`` kept beside its
        activation until ``down_proj``: Qwen2.5-VL); else ``linear_fc1`` and its activation.
    :param pos_embeds: learned position embeddings added to the patches and kept in the encoder
        metadata through the blocks (Qwen3-VL).
    :param image_tokens: a fixed-size tower's tokens per image (0: the Qwen towers, sized by the
        processor); ``class_token``: it runs a class token beside the patches (CLIP);
        ``image_patches``: the positions it runs per image (patches and class token);
        ``projector_widths``: output-wide tensors alive at its projector's widest (LLaVA's two
        linears: 2; PaliGemma's and Gemma-3's one: 1).
    :param pool: Gemma-3's projector: the side of its average-pooling window (0: none); it
        transposes the tower's output into a contiguous copy before pooling.
    :param crops: the crops one image runs (Gemma-3: the image and its pan-and-scan crops).
    :param tile_size: pixels a side of one crop where the processor tiles the image (Idefics3 /
        SmolVLM: ``image_size``; 0: not tiled by the processor's size).
    :param frame_tokens: InternVL's video: embeddings per frame, one crop each (0: no video item).
    :param frame_patches: patches one video frame runs (0: one crop's); ``frame_embeds`` /
        ``image_embeds``: the embeddings a frame / an image yields where fewer than the tokens
        counted (0: as counted); ``video_item_tokens``: the tokens the budget counts per video
        item, fixed by the processing info (Gemma-4: frames x (soft tokens + 8); 0: no such rule).
    :param pooled_frames: Kimi-K2.5's video chunk: frames an item runs, averaged before the merge.
    :param frame_crops: MiniCPM-V 4.6's video: the slices one video item runs (its frames' sources
        and slices); ``minicpmv``: its processors' sizes (:class:`MiniCPMVProcessing`), None for
        other towers.
    :param merger_intermediate: GLM-4.1V's merger: the gated MLP's width over each merged token
        (``vision_config.intermediate_size``; the blocks' MLP is ``out_hidden_size`` wide); 0: none.
    :param projector_copies: patch-by-hidden-wide tensors the projector makes beside the
        tower's output before it narrows to tokens (Gemma-3: the transposed copy; Mistral3: the
        concatenated output, its norm, the unfolded grids and their concatenation).
    """

    model_type: str
    hidden_size: int
    intermediate_size: int
    num_heads: int
    patch_size: int
    temporal_patch_size: int
    spatial_merge_size: int
    in_channels: int
    out_hidden_size: int
    deepstack: int
    gated: bool = False
    pos_embeds: bool = True
    image_tokens: int = 0
    class_token: bool = False
    image_patches: int = 0
    projector_widths: int = 0
    pool: int = 0
    crops: int = 1
    projector_copies: int = 0
    tile_size: int = 0
    frame_tokens: int = 0
    frame_patches: int = 0
    frame_embeds: int = 0
    image_embeds: int = 0
    video_item_tokens: int = 0
    position_embedding_size: int = 0
    max_frames: int = 0
    project_patches: bool = False
    audio_item_tokens: int = 0
    audio_hidden_size: int = 0
    merger_intermediate: int = 0
    pooled_frames: int = 1
    frame_crops: int = 0
    minicpmv: MiniCPMVProcessing | None = None

    @property
    def patches_per_token(self) -> int:
        return self.spatial_merge_size**2

    def _frames(self, modality: str, tokens: int) -> int:
        """Video frames of ``tokens`` tokens, one crop each (InternVL); 0 for other items."""
        return tokens // self.frame_tokens if modality == "video" and self.frame_tokens else 0

    def patches(self, items: int, tokens: int, modality: str = "image") -> int:
        """The positions the tower runs for ``items`` items of ``tokens`` merged tokens in all."""
        if frames := self._frames(modality, tokens):
            return frames * (self.frame_patches or self.image_patches // self.crops)
        return items * self.image_patches if self.image_tokens else tokens * self.patches_per_token

    def pixels(self, items: int, tokens: int, modality: str = "image") -> int:
        """Pixel-value elements of the dummy batch (a class token, one per crop, has none)."""
        crops = self._frames(modality, tokens) or items * self.crops
        patches = self.patches(items, tokens, modality) - (crops if self.class_token else 0)
        return patches * self.pixel_elements_per_patch

    def embeddings(self, items: int, tokens: int, modality: str = "image") -> int:
        """Embeddings the encoder outputs for ``items`` items of ``tokens`` counted tokens in all."""
        if (frames := self._frames(modality, tokens)) and self.frame_embeds:
            return frames * self.frame_embeds
        if modality == "image" and self.image_embeds:
            return items * self.image_embeds
        return tokens

    @property
    def pixel_elements_per_patch(self) -> int:
        return self.in_channels * self.temporal_patch_size * self.patch_size**2


def _vit(model_type: str, vision: Mapping[str, Any], patch: int, merge: int = 1, **fields: Any) -> VisionTower:
    """A ViT tower whose widths are ``vision``'s own (``hidden_size``, ``intermediate_size``,
    ``num_attention_heads``, ``num_channels`` or 3), one frame a patch, ``merge`` patches a side
    merged, its output width set by the caller (the text model's), no deepstack and no learned
    position embeddings kept: the CLIP / SigLIP / Pixtral / InternViT / Llama-4 shape."""
    return VisionTower(
        model_type=model_type,
        hidden_size=_pos(vision, "hidden_size"),
        intermediate_size=_pos(vision, "intermediate_size"),
        num_heads=_pos(vision, "num_attention_heads"),
        patch_size=patch,
        temporal_patch_size=1,
        spatial_merge_size=merge,
        in_channels=int(vision.get("num_channels") or 3),
        out_hidden_size=0,
        deepstack=0,
        pos_embeds=False,
        **fields,
    )


def _pos(cfg: Mapping[str, Any], key: str) -> int:
    v = cfg.get(key)
    if not isinstance(v, int) or isinstance(v, bool) or v <= 0:
        raise InputError("config.json", f"vision_config.{key}", "must be a positive integer to bound the encoder")
    return v


def vision_tower(
    vision: Mapping[str, Any],
    model_type: str = "",
    strategy: str = "default",
    *,
    config: Mapping[str, Any] | None = None,
    mm_processor_kwargs: Mapping[str, Any] | None = None,
) -> VisionTower | None:
    """The :class:`VisionTower` of a ``vision_config``, or ``None`` for a tower this module does
    not bound (the caller refuses it by name). ``model_type``: the top-level config's, which
    decides the tower where the ``vision_config`` names none (the config class's default then
    applies, as transformers reads it), and a LLaVA's or PaliGemma's fixed-size tower;
    ``strategy``: LLaVA's ``vision_feature_select_strategy``; ``config``: the top-level config
    (Gemma-3's ``mm_tokens_per_image``); ``mm_processor_kwargs``: ``--mm-processor-kwargs``
    (Gemma-3's pan-and-scan).

    :raises InputError: a bounded tower's width missing or not a positive integer (named).
    """
    if model_type in FIXED_SIZE_WRAPPERS:
        tower = _fixed_size_tower(vision, model_type, strategy)
        if tower is not None and model_type == "gemma3":
            return _gemma3_tower(tower, config or {}, mm_processor_kwargs or {})
        if tower is not None and model_type == "llava_next":
            return _llava_next_tower(tower, config or {})
        if tower is not None and model_type == "llava_onevision":
            return _llava_onevision_tower(tower, config or {}, strategy, {**siglip.DEFAULTS, **vision})
        return tower
    if model_type == "gemma4":
        if str(vision.get("model_type") or "gemma4_vision") != "gemma4_vision":
            return None
        return gemma4_tower(vision, config or {}, mm_processor_kwargs or {})
    if model_type == "internvl_chat":
        if str(vision.get("model_type") or "intern_vit_6b") != "intern_vit_6b":
            return None
        return internvl_chat_tower(vision, config or {})
    if model_type in IDEFICS3_WRAPPERS:
        if str(vision.get("model_type") or IDEFICS3_WRAPPERS[model_type]) != IDEFICS3_WRAPPERS[model_type]:
            return None
        return idefics3_tower(vision, config or {}, IDEFICS3_WRAPPERS[model_type])
    if model_type in GLM4V_WRAPPERS:
        if str(vision.get("model_type") or GLM4V_WRAPPERS[model_type]) != GLM4V_WRAPPERS[model_type]:
            return None
        return glm4v_tower(vision, GLM4V_WRAPPERS[model_type])
    if model_type == "kimi_k25":
        return kimi_k25_tower(vision)
    if model_type in MINICPMV4_6_WRAPPERS:
        if str(vision.get("model_type") or MINICPMV4_6_WRAPPERS[model_type]) != MINICPMV4_6_WRAPPERS[model_type]:
            return None
        return minicpmv4_6_tower(vision, config or {}, MINICPMV4_6_WRAPPERS[model_type])
    if model_type == "kimi_vl":
        if str(vision.get("model_type") or "moonvit") != "moonvit":
            return None
        return kimi_vl_tower(vision)
    if model_type == "llama4":
        if str(vision.get("model_type") or LLAMA4_VISION_TYPE) != LLAMA4_VISION_TYPE:
            return None
        return llama4_tower(vision)
    if model_type == "mistral3":
        if str(vision.get("model_type") or "pixtral") != "pixtral":
            return None
        layer = (config or {}).get("vision_feature_layer", -1)
        if not isinstance(layer, int) or isinstance(layer, bool):
            return None  # several layers' hidden states held at once: not bounded
        return mistral3_tower(vision, config or {})
    model_type = str(vision.get("model_type") or model_type)
    if model_type == "qwen2_vl":
        v = {**QWEN2_VL_VISION, **vision}
        embed = _pos(v, "embed_dim")
        ratio = v.get("mlp_ratio")
        if not isinstance(ratio, int | float) or isinstance(ratio, bool) or not 0 < ratio < 1024:
            raise InputError("config.json", "vision_config.mlp_ratio", "must be a positive number to bound the encoder")
        return VisionTower(
            model_type=model_type,
            hidden_size=embed,
            intermediate_size=int(embed * float(ratio)),
            num_heads=_pos(v, "num_heads"),
            patch_size=_pos(v, "patch_size"),
            temporal_patch_size=_pos(v, "temporal_patch_size"),
            spatial_merge_size=_pos(v, "spatial_merge_size"),
            in_channels=int(v.get("in_channels") or v.get("in_chans") or 3),
            out_hidden_size=_pos(v, "hidden_size"),
            deepstack=0,
            pos_embeds=False,
        )
    if model_type == "qwen2_5_vl":
        v = {**QWEN2_5_VL_VISION, **vision}
        return VisionTower(
            model_type=model_type,
            hidden_size=_pos(v, "hidden_size"),
            intermediate_size=_pos(v, "intermediate_size"),
            num_heads=_pos(v, "num_heads"),
            patch_size=_pos(v, "patch_size"),
            temporal_patch_size=_pos(v, "temporal_patch_size"),
            spatial_merge_size=_pos(v, "spatial_merge_size"),
            in_channels=int(v.get("in_channels") or v.get("in_chans") or 3),
            out_hidden_size=_pos(v, "out_hidden_size"),
            deepstack=0,
            gated=True,
            pos_embeds=False,
        )
    if model_type not in QWEN3_VISION_TYPES:
        return None
    ds = vision.get("deepstack_visual_indexes") or []
    if not isinstance(ds, list):
        raise InputError("config.json", "vision_config.deepstack_visual_indexes", "must be a list")
    return VisionTower(
        model_type=model_type,
        hidden_size=_pos(vision, "hidden_size"),
        intermediate_size=_pos(vision, "intermediate_size"),
        num_heads=_pos(vision, "num_heads"),
        patch_size=_pos(vision, "patch_size"),
        temporal_patch_size=_pos(vision, "temporal_patch_size"),
        spatial_merge_size=_pos(vision, "spatial_merge_size"),
        in_channels=int(vision.get("in_channels") or 3),
        out_hidden_size=_pos(vision, "out_hidden_size"),
        deepstack=len(ds),
    )


def _fixed_size_tower(vision: Mapping[str, Any], wrapper: str, strategy: str) -> VisionTower | None:
    """A LLaVA's or PaliGemma's CLIP / SigLIP tower: one ``image_size`` crop of
    ``(image_size / patch_size)^2`` patches (CLIP adds a class token), the tokens LLaVA selects
    (``get_num_selected_vision_tokens``: ``default`` drops one, ``full`` keeps all), PaliGemma all."""
    kind = str(vision.get("model_type") or "")
    if kind not in FIXED_SIZE_WRAPPERS[wrapper]:
        return None
    v = {**(clip.DEFAULTS if kind == "clip_vision_model" else siglip.DEFAULTS), **vision}
    size, patch = _pos(v, "image_size"), _pos(v, "patch_size")
    if size % patch and wrapper != "llava_onevision":  # OneVision's SigLIP: 384 px at 14, the conv floors
        raise InputError("config.json", "vision_config.image_size", "must be a multiple of patch_size")
    cls = kind == "clip_vision_model"
    encoded = (size // patch) ** 2 + (1 if cls else 0)
    if wrapper in ("paligemma", "gemma3"):
        tokens = encoded
    elif strategy == "default":
        tokens = encoded - 1
    elif strategy == "full":
        tokens = encoded
    else:
        raise InputError("config.json", "vision_feature_select_strategy", f"{strategy!r}: not default or full")
    return _vit(
        kind,
        v,
        patch,
        image_tokens=max(tokens, 1),
        class_token=cls,
        image_patches=encoded,
        projector_widths=1 if wrapper in ("paligemma", "gemma3") else 2,
    )


def gemma3_num_crops(width: int, height: int, kwargs: Mapping[str, Any]) -> int:
    """Pan-and-scan crops of a ``width x height`` image (``Gemma3ProcessingInfo.get_num_crops``,
    after ``Gemma3ImageProcessor.pan_and_scan``): 0 when off, when the image is not elongated by
    ``pan_and_scan_min_ratio_to_activate``, or when a crop would fall under
    ``pan_and_scan_min_crop_size`` pixels; else ``min(max_num_crops, max(2, min(long //
    min_crop_size, round(long / short))))`` crops along the long side. ``kwargs``: the merged
    processor kwargs (:data:`GEMMA3_PAN_AND_SCAN` under ``--mm-processor-kwargs``)."""
    if not kwargs["do_pan_and_scan"]:
        return 0
    min_crop, max_crops = kwargs["pan_and_scan_min_crop_size"], kwargs["pan_and_scan_max_num_crops"]
    long, short = max(width, height), min(width, height)
    if long / short < kwargs["pan_and_scan_min_ratio_to_activate"]:
        return 0
    n = min(max_crops, max(2, min(long // min_crop, math.floor(long / short + 0.5))))
    if min(-(-long // n), short) < min_crop:
        return 0
    return int(n)


def _gemma3_kwargs(mm_processor_kwargs: Mapping[str, Any]) -> dict[str, Any]:
    kwargs = {**GEMMA3_PAN_AND_SCAN, **{k: v for k, v in mm_processor_kwargs.items() if k in GEMMA3_PAN_AND_SCAN}}
    for key in ("pan_and_scan_min_crop_size", "pan_and_scan_max_num_crops"):
        v = kwargs[key]
        if not isinstance(v, int) or isinstance(v, bool) or not 0 < v <= 1024:
            raise InputError("--mm-processor-kwargs", key, "must be a positive integer up to 1024")
    ratio = kwargs["pan_and_scan_min_ratio_to_activate"]
    if not isinstance(ratio, int | float) or isinstance(ratio, bool) or not 0 < ratio < 1e6:
        raise InputError("--mm-processor-kwargs", "pan_and_scan_min_ratio_to_activate", "must be a positive number")
    if not isinstance(kwargs["do_pan_and_scan"], bool):
        raise InputError("--mm-processor-kwargs", "do_pan_and_scan", "must be true or false")
    return kwargs


def _gemma3_tower(tower: VisionTower, config: Mapping[str, Any], mm_processor_kwargs: Mapping[str, Any]) -> VisionTower:
    """Gemma-3's SigLIP crop tower (``gemma3_mm.py``): the dummy image is ``image_size`` wide and
    ``image_size x pan_and_scan_max_num_crops`` tall (``get_image_size_with_most_features``); it
    runs as the resized image plus its pan-and-scan crops (:func:`gemma3_num_crops`), each
    ``(image_size / patch_size)^2`` patches, average-pooled to ``mm_tokens_per_image`` tokens
    (``Gemma3MultiModalProjector``), ``(crops + 1) x mm_tokens_per_image`` embeddings per item."""
    per_crop = config.get("mm_tokens_per_image", GEMMA3_TOKENS_PER_CROP)
    if not isinstance(per_crop, int) or isinstance(per_crop, bool) or per_crop <= 0:
        raise InputError("config.json", "mm_tokens_per_image", "must be a positive integer to bound the encoder")
    side, pooled = math.isqrt(tower.image_patches), math.isqrt(per_crop)
    if side * side != tower.image_patches or pooled * pooled != per_crop or side % pooled:
        raise InputError("config.json", "mm_tokens_per_image", "must be a square whose side divides the patch grid's")
    kwargs = _gemma3_kwargs(mm_processor_kwargs)
    size = tower.patch_size * side
    crops = 1 + gemma3_num_crops(size, size * kwargs["pan_and_scan_max_num_crops"], kwargs)
    return replace(
        tower,
        image_tokens=crops * per_crop,
        image_patches=crops * tower.image_patches,
        pool=side // pooled,
        crops=crops,
        projector_copies=1,
    )


def select_best_resolution(height: int, width: int, pinpoints: tuple[tuple[int, int], ...]) -> tuple[int, int]:
    """The pinpoint an anyres processor pads a ``height x width`` image to (transformers'
    ``select_best_resolution``): the most effective pixels after an aspect-preserving fit, then the
    least waste; the earlier pinpoint on a tie."""
    best, most, least = pinpoints[0], 0, math.inf
    for h, w in pinpoints:
        scale = min(w / width, h / height)
        effective = min(int(width * scale) * int(height * scale), width * height)
        wasted = w * h - effective
        if effective > most or (effective == most and wasted < least):
            best, most, least = (h, w), effective, wasted
    return best


def llava_next_tokens(
    height: int,
    width: int,
    pinpoints: tuple[tuple[int, int], ...],
    image_size: int,
    grid: int,
    base: int,
    anyres_max: int = 0,
) -> tuple[int, int]:
    """(embeddings, tiles) of a ``height x width`` image (``LlavaNextProcessingInfo.get_num_image_tokens``):
    the tile grid of its best pinpoint (in ``image_size`` tiles), the tiles' ``grid x grid``
    features each with the padding rows or columns removed, a newline feature per remaining row,
    and the ``base`` features of the resized whole image. ``anyres_max`` (LLaVA-OneVision's
    ``_get_num_unpadded_features``): where the unpadded features pass ``anyres_max`` tiles' by more
    than a ratio of 1.1, both sides are floored over that ratio.

    :raises InputError: a best pinpoint under one tile (vLLM fails dividing by zero)."""
    best_h, best_w = select_best_resolution(height, width, pinpoints)
    rows, cols = best_h // image_size, best_w // image_size
    if not rows or not cols:  # vLLM divides by zero here
        raise InputError("config.json", "image_grid_pinpoints", f"({best_h}, {best_w}) holds no {image_size} px tile")
    cur_h, cur_w = grid * rows, grid * cols
    if width / height > cur_w / cur_h:
        new_h = int(round(height * (cur_w / width), 7))
        cur_h -= 2 * ((cur_h - new_h) // 2)
    else:
        new_w = int(round(width * (cur_h / height), 7))
        cur_w -= 2 * ((cur_w - new_w) // 2)
    ratio = math.sqrt(cur_h * cur_w / (anyres_max * grid * grid)) if anyres_max else 0.0
    if ratio > 1.1:
        cur_h, cur_w = int(cur_h // ratio), int(cur_w // ratio)
    return cur_h * cur_w + cur_h + base, rows * cols


def _pinpoints(
    config: Mapping[str, Any], default: tuple[tuple[int, int], ...] = LLAVA_NEXT_PINPOINTS
) -> tuple[tuple[int, int], ...]:
    raw = config.get("image_grid_pinpoints")
    if raw is None:
        return default
    ok = isinstance(raw, list) and 0 < len(raw) <= 256
    points: list[tuple[int, int]] = []
    for p in raw if ok else ():
        if not (isinstance(p, list | tuple) and len(p) == 2):
            ok = False
            break
        h, w = p
        if not all(isinstance(x, int) and not isinstance(x, bool) and 0 < x <= 1 << 15 for x in (h, w)):
            ok = False
            break
        points.append((h, w))
    if not ok:
        raise InputError("config.json", "image_grid_pinpoints", "must be a list of [height, width] pixel pairs")
    return tuple(points)


def _llava_next_tower(tower: VisionTower, config: Mapping[str, Any]) -> VisionTower:
    """LLaVA-NeXT's any-resolution item (``llava_next.py``): the dummy image is the pinpoint with
    the most features (``get_image_size_with_most_features``: the first strict maximum of
    :func:`llava_next_tokens` over ``image_grid_pinpoints``); the tower runs the resized image and
    each tile, ``image_size`` crops of ``(image_size / patch_size)^2`` patches (and CLIP's class
    token); the projector's two linears, then ``pack_image_features``' permuted copy and its
    newline-joined concatenation (three output widths at most)."""
    pinpoints = _pinpoints(config)
    grid = math.isqrt(tower.image_patches - (1 if tower.class_token else 0))
    size = grid * tower.patch_size
    best, tiles = 0, 0
    for h, w in pinpoints:
        tokens, n = llava_next_tokens(h, w, pinpoints, size, grid, tower.image_tokens)
        if tokens > best:
            best, tiles = tokens, n
    crops = 1 + tiles
    return replace(tower, image_tokens=best, image_patches=crops * tower.image_patches, crops=crops, projector_widths=3)


def _llava_onevision_tower(
    tower: VisionTower, config: Mapping[str, Any], strategy: str, vision: Mapping[str, Any]
) -> VisionTower:
    """LLaVA-OneVision's SigLIP item (``llava_onevision.py``). The image: the fixed dummy
    :data:`ONEVISION_DUMMY_IMAGE` (1153 x 944), counted by :func:`llava_next_tokens` with the
    ``anyres_max_9`` downscale, run as the resized image and the tiles of its best pinpoint
    (``image_grid_pinpoints``, default :data:`ONEVISION_PINPOINTS`); the projector's two linears
    over every crop's patches, then the merge's permuted copy and its newline-joined
    concatenation. The video: as many one-crop frames as ``max_model_len`` holds at
    ``ceil(grid / 2)^2`` pooled tokens a frame and one newline, at most
    :data:`ONEVISION_MAX_FRAMES` (:func:`max_tokens_per_item`); every frame's patches are
    projected before the pooling.

    :raises InputError: a ``vision_feature_select_strategy`` other than ``full`` (vLLM's merge
        then fails: the base features are not the patch grid), or a ``spatial_pool_stride``
        other than 2 (vLLM counts by it, pools by 2)."""
    if strategy != "full":
        raise InputError(
            "config.json", "vision_feature_select_strategy", f"{strategy!r}: LLaVA-OneVision's merge needs 'full'"
        )
    if config.get("spatial_pool_stride", ONEVISION_POOL_STRIDE) != ONEVISION_POOL_STRIDE:
        raise InputError("config.json", "spatial_pool_stride", "vLLM pools frames by 2 whatever it says: not bounded")
    pinpoints = _pinpoints(config, ONEVISION_PINPOINTS)
    grid = math.isqrt(tower.image_patches)  # image_size // patch_size: the patch conv floors
    size = _pos(vision, "image_size")  # the tiles' side in pixels
    if not grid or size > 1 << 16:
        raise InputError("config.json", "vision_config.image_size", "must hold one patch and be at most 65,536 px")
    width, height = ONEVISION_DUMMY_IMAGE
    tokens, tiles = llava_next_tokens(height, width, pinpoints, size, grid, tower.image_tokens, ONEVISION_ANYRES_MAX)
    pooled = -(-grid // ONEVISION_POOL_STRIDE)
    return replace(
        tower,
        image_tokens=tokens,
        image_patches=(1 + tiles) * tower.image_patches,
        crops=1 + tiles,
        projector_widths=3,
        frame_tokens=pooled * pooled,
        frame_patches=tower.image_patches,
        max_frames=ONEVISION_MAX_FRAMES,
        project_patches=True,
    )


def idefics3_tiles(tile: int, longest_edge: int) -> int:
    """Crops one image runs through an Idefics3 / SmolVLM tower
    (``Idefics3ImageProcessor.get_number_of_image_patches`` as ``Idefics3ProcessingInfo.get_num_patches``
    counts it, image splitting on): the square dummy rescaled to ``longest_edge``, capped at
    :data:`IDEFICS3_MAX_IMAGE_SIZE`, rounded up to whole ``tile`` crops: ``n^2`` tiles and the
    global image when ``n > 1``, else the one global image."""
    n = -(-min(longest_edge, IDEFICS3_MAX_IMAGE_SIZE) // tile)
    return n * n + 1 if n > 1 else 1


def idefics3_tower(vision: Mapping[str, Any], config: Mapping[str, Any], kind: str) -> VisionTower:
    """Idefics3's / SmolVLM's SigLIP-like tower (``idefics3.py``, ``smolvlm.py``): every crop is
    ``(image_size / patch_size)^2`` patches, pixel-shuffled by ``scale_factor`` into
    ``image_seq_len = patches / scale_factor^2`` embeddings (the processor's, from the same
    widths), then one linear (``modality_projection``); the shuffle's reshapes copy the tower's
    output twice. The crops come from the processor's ``size.longest_edge``
    (:func:`sized_for_processor`; here the image processors' default, 4 tiles a side) over
    ``max_image_size``, taken as the vision config's ``image_size`` (the published checkpoints'
    processors keep them equal; the dummy's own size does not change the count).

    :raises InputError: a width missing, or a grid the pixel shuffle cannot divide (named)."""
    v = {**siglip.DEFAULTS, **idefics3.VISION_DEFAULTS, **vision}
    size, patch = _pos(v, "image_size"), _pos(v, "patch_size")
    scale = config.get("scale_factor", 2)
    if not isinstance(scale, int) or isinstance(scale, bool) or scale <= 0:
        raise InputError("config.json", "scale_factor", "must be a positive integer to bound the encoder")
    side = size // patch  # the patch conv floors (SmolVLM: 384 px at 14: 27 patches a side)
    if not side or side % scale or size > IDEFICS3_MAX_IMAGE_SIZE:
        raise InputError("config.json", "vision_config.image_size", "must be patches the pixel shuffle divides")
    tower = _vit(
        kind,
        v,
        patch,
        merge=scale,
        image_tokens=side * side // (scale * scale),
        image_patches=side * side,
        projector_widths=1,
        projector_copies=2,
        tile_size=size,
    )
    return sized_for_processor(tower, IDEFICS3_DEFAULT_TILES_PER_EDGE * size)


def _flag(config: Mapping[str, Any], key: str, default: bool) -> bool:
    v = config.get(key, default)
    if not isinstance(v, bool):
        raise InputError("config.json", key, "must be true or false")
    return v


def internvl_chat_tower(vision: Mapping[str, Any], config: Mapping[str, Any]) -> VisionTower | None:
    """InternVL's InternViT tower (``internvl.py``, ``model_type`` ``internvl_chat``): every crop
    is an ``image_size`` square of ``(image_size / patch_size)^2`` patches and a class token,
    pixel-shuffled by ``downsample_ratio`` into ``image_seq_length`` embeddings, then ``mlp1``
    (LayerNorm and two linears). The largest image (``get_image_size_with_most_features``) is
    ``max_dynamic_patch`` tiles and the thumbnail (``use_thumbnail`` with more than one tile; one
    crop when ``dynamic_image_size`` is off); a checkpoint whose text model type is in
    :data:`INTERNVL_VIDEO_TEXT_TYPES` also profiles a video of one crop per frame
    (:func:`max_tokens_per_item`). InternViT-6B (``qk_normalization``: its heads padded with
    dummy heads under TP) is not bounded (``None``).

    :raises InputError: a width or tiling option missing or malformed (named)."""
    if vision.get("qk_normalization"):
        return None
    size, patch = _pos(vision, "image_size"), _pos(vision, "patch_size")
    ratio = config.get("downsample_ratio", 0.5)
    if not isinstance(ratio, int | float) or isinstance(ratio, bool) or not 0 < ratio <= 1:
        raise InputError("config.json", "downsample_ratio", "must be a number in (0, 1]")
    side = size // patch
    per_tile = int(side * side * ratio * ratio)  # InternVLChatProcessor's image_seq_length
    if size % patch or not per_tile or int(1 / ratio) ** 2 * per_tile != side * side:
        raise InputError("config.json", "downsample_ratio", "must shuffle the patch grid evenly")
    dynamic = _flag(config, "dynamic_image_size", False)
    thumbnail = _flag(config, "use_thumbnail", False)
    most = config.get("max_dynamic_patch", 6)  # InternVLChatConfig's default
    if not isinstance(most, int) or isinstance(most, bool) or not 0 < most <= 1024:
        raise InputError("config.json", "max_dynamic_patch", "must be a positive integer up to 1024")
    tiles = most if dynamic else 1
    crops = tiles + (1 if thumbnail and tiles > 1 else 0)
    text = config.get("llm_config") or config.get("text_config") or {}
    video = isinstance(text, Mapping) and text.get("model_type") in INTERNVL_VIDEO_TEXT_TYPES
    return _vit(
        "intern_vit_6b",
        vision,
        patch,
        image_tokens=crops * per_tile,
        class_token=True,
        image_patches=crops * (side * side + 1),
        projector_widths=2,
        projector_copies=2,
        crops=crops,
        frame_tokens=per_tile if video else 0,
    )


def gemma4_soft_tokens(width: int, height: int, patch: int, kernel: int, max_soft: int) -> int:
    """Soft tokens of a ``width x height`` image at ``max_soft`` (``Gemma4ProcessingInfo._compute_num_soft_tokens``):
    the image rescaled to at most ``max_soft x kernel^2`` patches, each side floored to whole
    ``patch x kernel`` units (at least one), pooled ``kernel^2`` patches per token, at most ``max_soft``."""
    unit = patch * kernel
    scale = math.sqrt(max_soft * kernel * kernel / ((height / patch) * (width / patch)))
    th = max(unit, math.floor(height * scale / unit) * unit)
    tw = max(unit, math.floor(width * scale / unit) * unit)
    return min((th // patch) * (tw // patch) // (kernel * kernel), max_soft)


def gemma4_max_soft_tokens(vision: Mapping[str, Any], mm_processor_kwargs: Mapping[str, Any]) -> int:
    """An image's soft tokens at most (``get_mm_max_tokens_per_item``' image): ``--mm-processor-kwargs``'
    ``max_soft_tokens`` (top level, else ``images_kwargs``) where it is one of
    :data:`GEMMA4_SOFT_TOKENS`, else ``vision_config.default_output_length``."""
    value = mm_processor_kwargs.get("max_soft_tokens")
    images = mm_processor_kwargs.get("images_kwargs")
    if value is None and isinstance(images, Mapping):
        value = images.get("max_soft_tokens")
    if isinstance(value, int) and not isinstance(value, bool) and value in GEMMA4_SOFT_TOKENS:
        return value
    return _pos(vision, "default_output_length")


def gemma4_tower(
    vision: Mapping[str, Any], config: Mapping[str, Any], mm_processor_kwargs: Mapping[str, Any]
) -> VisionTower:
    """Gemma-4's variable-resolution tower (``gemma4_mm.py``, ``Gemma4VisionModel`` run through
    transformers, replicated on every TP rank). Items (``get_mm_max_tokens_per_item``): an image
    counts its ``max_soft_tokens`` (:func:`gemma4_max_soft_tokens`), a video
    ``32 x (70 + 8)`` tokens, so the video is profiled unless its limit is 0. The dummy video is 32
    ``224 x 224`` frames, each rescaled to at most ``70 x kernel^2`` patches and padded to exactly
    that many (the image processor pads pixel values and positions to ``max_patches``), yielding
    :func:`gemma4_soft_tokens` embeddings a frame; the dummy image is one ``224 x 224`` image padded
    to ``max_soft_tokens x kernel^2`` patches. The tower is gated (``gate_proj`` / ``up_proj``); its
    frames run in chunks (``_encoder_chunk``: as many as half the free memory, at most a tenth
    of the card, allows at ``patches x 32 x position_embedding_size`` bytes a frame), every
    chunk's output kept, then concatenated, pooled, standardized and projected
    (:func:`tower_widest`).

    :raises InputError: a width missing or not a positive integer (named)."""
    v = dict(vision)
    widths = gemma4.vision_widths(v)  # the weights walk's reader
    kernel = _pos(v, "pooling_kernel_size")
    patch = widths.patch_size
    if not patch or not widths.hidden_size:
        raise InputError("config.json", "vision_config.patch_size", "must be positive to bound the encoder")
    max_soft = gemma4_max_soft_tokens(v, mm_processor_kwargs)
    side = GEMMA4_DUMMY_SIDE
    return VisionTower(
        model_type="gemma4_vision",
        hidden_size=widths.hidden_size,
        intermediate_size=widths.intermediate_size,
        num_heads=_pos(v, "num_attention_heads"),
        patch_size=patch,
        temporal_patch_size=1,
        spatial_merge_size=kernel,
        in_channels=3,
        out_hidden_size=0,  # the text model's width, set by the caller
        deepstack=0,
        gated=True,
        pos_embeds=False,
        image_tokens=max_soft,
        image_patches=max_soft * kernel * kernel,
        image_embeds=gemma4_soft_tokens(side, side, patch, kernel, max_soft),
        projector_widths=1,
        frame_tokens=GEMMA4_VIDEO_SOFT_TOKENS + GEMMA4_FRAME_EXTRA,
        frame_patches=GEMMA4_VIDEO_SOFT_TOKENS * kernel * kernel,
        frame_embeds=gemma4_soft_tokens(side, side, patch, kernel, GEMMA4_VIDEO_SOFT_TOKENS),
        video_item_tokens=GEMMA4_VIDEO_FRAMES * (GEMMA4_VIDEO_SOFT_TOKENS + GEMMA4_FRAME_EXTRA),
        position_embedding_size=widths.position_embedding_size,
    )


def glm4v_resize(frames: int, height: int, width: int, factor: int, max_pixels: int) -> tuple[int, int]:
    """(height, width) GLM-4.1V's resize rule gives ``frames`` frames of ``height x width``
    (transformers' ``glm4v`` ``smart_resize`` as vLLM's ``_get_vision_info`` calls it: temporal
    factor 2, ``min_pixels`` :data:`GLM4V_MIN_PIXELS`): each side rounded to ``factor``; where the
    frames (rounded to the temporal factor) times the area pass ``max_pixels``, both sides scaled
    by ``sqrt(frames x area / max_pixels)`` and floored to ``factor`` (at least one unit).

    :raises InputError: an aspect ratio over 200 (the processor refuses it)."""
    if height < factor or width < factor:
        scale = max(factor / height, factor / width)
        height, width = int(height * scale), int(width * scale)
    if max(height, width) / min(height, width) > 200:
        raise InputError("preprocessor_config.json", "size", "an aspect ratio over 200: GLM's processor refuses it")
    h_bar, w_bar = round(height / factor) * factor, round(width / factor) * factor
    t_bar = round(frames / 2) * 2
    if t_bar * h_bar * w_bar > max_pixels:
        beta = math.sqrt((frames * height * width) / max_pixels)
        h_bar = max(factor, math.floor(height / beta / factor) * factor)
        w_bar = max(factor, math.floor(width / beta / factor) * factor)
    elif t_bar * h_bar * w_bar < GLM4V_MIN_PIXELS:
        beta = math.sqrt(GLM4V_MIN_PIXELS / (frames * height * width))
        h_bar = math.ceil(height * beta / factor) * factor
        w_bar = math.ceil(width * beta / factor) * factor
    return h_bar, w_bar


def glm4v_vision_info(tower: VisionTower, side: tuple[int, int], frames: int, max_pixels: int) -> tuple[int, int, int]:
    """(height, width, merged tokens) of ``frames`` frames of a ``side`` (width, height) image
    (``Glm4vProcessingInfo._get_vision_info``): resized by :func:`glm4v_resize` over at least the
    temporal patch's frames, ``ceil(frames / temporal_patch_size)`` temporal patches of
    ``(h / patch) x (w / patch)`` patches, ``spatial_merge_size^2`` patches a token."""
    p, m, t = tower.patch_size, tower.spatial_merge_size, tower.temporal_patch_size
    h, w = glm4v_resize(max(frames, t), side[1], side[0], p * m, max_pixels)
    grid_t = max(-(-frames // t), 1)
    return h, w, grid_t * (h // p) * (w // p) // (m * m)


def glm4v_video_frames(tower: VisionTower, side: tuple[int, int], max_pixels: int, max_tokens: int) -> int:
    """``Glm4vProcessingInfo._get_max_video_frames``: of 1-:data:`GLM4V_MAX_FRAMES` frames of the
    largest image, the first count whose tokens (:func:`glm4v_vision_info` at the video
    processor's ``max_pixels``) are the most within ``max_tokens`` (1 where none fits)."""
    best, most = 1, 0
    for n in range(1, GLM4V_MAX_FRAMES + 1):
        tokens = glm4v_vision_info(tower, side, n, max_pixels)[2]
        if 0 < tokens <= max_tokens and tokens > most:
            best, most = n, tokens
    return best


def glm4v_tower(vision: Mapping[str, Any], kind: str) -> VisionTower:
    """GLM-4.1V's / GLM-4.5V's vision tower (``glm4_1v.py``, ``Glm4vVisionTransformer``): a
    Conv3d patch embedding (``temporal_patch_size`` frames a patch; an image is repeated over
    them), learned position embeddings kept in the encoder metadata, blocks with a gated MLP
    ``out_hidden_size`` wide, then the adapter: a ``spatial_merge_size`` convolution onto
    ``out_hidden_size`` per merged token and the merger (``proj``, norm, GELU, a gated MLP
    ``intermediate_size`` wide). The items are sized at the profile run by :func:`glm4v_sized`.

    :raises InputError: a width missing, or a ``temporal_patch_size`` other than 2 (vLLM's count
        resizes by a temporal factor of 2 whatever it says: not bounded)."""
    if _pos(vision, "temporal_patch_size") != 2:
        raise InputError("config.json", "vision_config.temporal_patch_size", "not 2: vLLM counts by 2, not bounded")
    return VisionTower(
        model_type=kind,
        hidden_size=_pos(vision, "hidden_size"),
        intermediate_size=_pos(vision, "out_hidden_size"),  # the blocks' MLP width
        num_heads=_pos(vision, "num_heads"),
        patch_size=_pos(vision, "patch_size"),
        temporal_patch_size=2,
        spatial_merge_size=_pos(vision, "spatial_merge_size"),
        in_channels=int(vision.get("in_channels") or 3),
        out_hidden_size=_pos(vision, "out_hidden_size"),
        deepstack=0,
        gated=True,
        merger_intermediate=_pos(vision, "intermediate_size"),
    )


def glm4v_sized(
    tower: VisionTower,
    *,
    max_model_len: int,
    image_max_pixels: int,
    video_max_pixels: int,
    image_active: bool,
) -> VisionTower:
    """GLM-4.1V's items for a ``Glm4vProcessor`` checkpoint (vLLM counts them by processing the
    dummies, ``get_mm_max_toks_per_item``): the largest image is the resize of a
    :data:`GLM4V_DUMMY_SIDE` square at the image processor's ``size.longest_edge`` (a pixel area,
    ``image_max_pixels``) over one frame; the counted video is ``max(2, n)`` frames of that image
    at the video processor's ``size.longest_edge`` (``video_max_pixels``), ``n`` from
    :func:`glm4v_video_frames` within ``max_model_len`` less one largest image's tokens where
    images are on. The profiled video (``get_dummy_encoder_profile_inputs``, ``{video: 1}``)
    takes its frames within the whole ``max_model_len``, so it may run more frames than counted:
    ``frame_tokens`` / ``frame_patches`` / ``frame_embeds`` carry one counted item and the one run.

    :raises InputError: a processor area over :data:`MAX_ITEM_TOKENS` tokens (named)."""
    m = tower.spatial_merge_size
    for value, source in (
        (image_max_pixels, "preprocessor_config.json"),
        (video_max_pixels, "video_preprocessor_config.json"),
    ):
        if value // (tower.patch_size * m) ** 2 > MAX_ITEM_TOKENS:
            raise InputError(source, "size.longest_edge", f"{value} px is over {MAX_ITEM_TOKENS:,} tokens")
    h, w, image = glm4v_vision_info(tower, (GLM4V_DUMMY_SIDE, GLM4V_DUMMY_SIDE), 1, image_max_pixels)
    side = (w, h)

    def video(room: int) -> int:
        frames = max(glm4v_video_frames(tower, side, video_max_pixels, room), 2)
        return glm4v_vision_info(tower, side, frames, video_max_pixels)[2]

    counted = video(max_model_len - (image if image_active else 0))
    run = video(max_model_len)
    return replace(
        tower,
        image_tokens=image,
        image_patches=image * m * m,
        video_item_tokens=counted,
        frame_tokens=counted,
        frame_patches=run * m * m,
        frame_embeds=run,
    )


def kimi_k25_width(vision: Mapping[str, Any], key: str) -> int:
    """One of Kimi-K2.5's tower widths: the ``vision_config``'s ``key`` (transformers' name, its
    default :data:`KIMI_K25_WIDTHS`) where its ``vt_`` name (the remote code's) says the same.

    :raises InputError: the two readings differ, or the width is not a positive integer (named)."""
    native = vision.get(key, KIMI_K25_WIDTHS[key])
    remote = vision.get("vt_" + key, native)
    if native != remote:
        raise InputError("config.json", f"vision_config.vt_{key}", f"differs from {key}'s {native}: not bounded")
    return _pos({key: native}, key)


def kimi_k25_tower(vision: Mapping[str, Any]) -> VisionTower:
    """Kimi-K2.5's MoonViT-3D (``kimi_k25_vit.py``): ``patch_size`` patches (one frame each) with
    interpolated position embeddings added once, ``mlp2`` blocks (``fc0``, activation, ``fc1``)
    attending over every frame of an item, then ``sd2_tpool``: the item's frames averaged, the
    ``merge_kernel_size`` groups copied out, concatenated, normed, ``linear_1`` over ``kernel^2 x
    hidden`` with its GELU, and ``linear_2`` onto the text model's width. The item is sized from
    the checkpoint's ``media_proc_cfg`` (:func:`kimi_k25_sized`).

    :raises InputError: a width missing or read two ways, a non-square merge kernel, or a variant
        of the forward (``mlp_type``, ``qkv_hidden_size``, ...) other than the published one (named)."""
    for key, default in KIMI_K25_VARIANTS.items():
        if vision.get(key, default) != default:
            raise InputError("config.json", f"vision_config.{key}", f"{vision.get(key)!r}: not {default}, not bounded")
    hidden = kimi_k25_width(vision, "hidden_size")
    if vision.get("qkv_hidden_size", hidden) not in (None, hidden):
        raise InputError("config.json", "vision_config.qkv_hidden_size", "not the hidden size: not bounded")
    kernel = _kernel(vision.get("merge_kernel_size", [2, 2]), "config.json", "vision_config.merge_kernel_size")
    if kernel[0] != kernel[1]:
        raise InputError("config.json", "vision_config.merge_kernel_size", "not square: not bounded")
    return VisionTower(
        model_type="kimi_k25_vision",
        hidden_size=hidden,
        intermediate_size=kimi_k25_width(vision, "intermediate_size"),
        num_heads=kimi_k25_width(vision, "num_attention_heads"),
        patch_size=_pos({"patch_size": vision.get("patch_size", 14)}, "patch_size"),
        temporal_patch_size=1,
        spatial_merge_size=kernel[0],
        in_channels=3,
        out_hidden_size=0,  # linear_2 onto the text model's width, set by the caller
        deepstack=0,
        pos_embeds=False,
        projector_widths=1,
    )


def kimi_k25_grid(side: int, patch: int, kernel: int, in_patch_limit: int, side_limit: int) -> int:
    """Patches a side of the ``side`` px square dummy after ``navit_resize_image`` (vLLM's
    ``kimi_k25_vision_fused.py``): scaled by the least of 1, ``sqrt(in_patch_limit / patches)``
    and ``side_limit x patch / side``, truncated (at most ``side_limit`` patches), padded to
    whole ``kernel x patch`` units."""
    s1 = math.sqrt(in_patch_limit / (max(1.0, side // patch) * max(1.0, side // patch)))
    scale = min(1.0, s1, side_limit * patch / side)
    new = min(max(1, int(side * scale)), side_limit * patch)
    unit = kernel * patch
    return (new + (unit - new % unit) % unit) // patch


def _cfg_int(cfg: Mapping[str, Any], key: str, *, optional: bool = False) -> int | None:
    value = cfg.get(key)
    if value is None and optional:
        return None
    if not isinstance(value, int) or isinstance(value, bool) or not 0 < value <= MAX_ITEM_TOKENS:
        raise InputError("preprocessor_config.json", f"media_proc_cfg.{key}", "must be an integer in 1-16,777,216")
    return value


def kimi_k25_sized(tower: VisionTower, preprocessor: Mapping[str, Any]) -> VisionTower:
    """Kimi-K2.5's item from a checkpoint's ``preprocessor_config.json`` ``media_proc_cfg``
    (``KimiK25FusedVisionProcessor``, the processor vLLM uses where numba imports; numba is
    among vLLM's requirements): the 3000 px image under ``in_patch_limit``, or, where it counts
    at least as many tokens, the video chunk of ``temporal_merge_kernel_size`` such frames under
    ``in_patch_limit_each_frame`` (else ``in_patch_limit``), lowered to
    ``round(in_patch_limit_video / frames)`` where that is set; both capped at
    ``patch_limit_on_one_side`` patches a side. The chunk's tokens are one frame's
    (``kernel^2`` patches a token); it runs every frame's patches.

    :raises InputError: a missing or malformed field, ``fixed_output_tokens`` set, or a
        ``patch_size`` / ``merge_kernel_size`` other than the vision config's (named)."""
    cfg = preprocessor.get("media_proc_cfg")
    if not isinstance(cfg, Mapping):
        raise InputError("preprocessor_config.json", "media_proc_cfg", "not found: Kimi-K2.5's item is not known")
    if cfg.get("fixed_output_tokens") is not None:
        raise InputError("preprocessor_config.json", "media_proc_cfg.fixed_output_tokens", "set: not bounded")
    if cfg.get("patch_size") != tower.patch_size:
        raise InputError("preprocessor_config.json", "media_proc_cfg.patch_size", "differs from the vision config's")
    raw = cfg.get("merge_kernel_size")
    kernel = raw[0] if isinstance(raw, list | tuple) and raw else raw
    if kernel != tower.spatial_merge_size:
        raise InputError(
            "preprocessor_config.json", "media_proc_cfg.merge_kernel_size", "differs from the vision config's"
        )
    limit = _cfg_int(cfg, "in_patch_limit")
    side_limit = _cfg_int(cfg, "patch_limit_on_one_side")
    frames = _cfg_int(cfg, "temporal_merge_kernel_size")
    each = _cfg_int(cfg, "in_patch_limit_each_frame", optional=True) or limit
    video = _cfg_int(cfg, "in_patch_limit_video", optional=True)
    assert limit is not None and side_limit is not None and frames is not None and each is not None
    if frames > 1024:
        raise InputError("preprocessor_config.json", "media_proc_cfg.temporal_merge_kernel_size", "over 1024")
    if video is not None:
        each = min(round(video / frames), each)
    p, k = tower.patch_size, tower.spatial_merge_size
    image = kimi_k25_grid(KIMI_K25_DUMMY_SIDE, p, k, limit, side_limit)
    chunk = kimi_k25_grid(KIMI_K25_DUMMY_SIDE, p, k, each, side_limit)
    grid, t = (chunk, frames) if chunk * chunk >= image * image else (image, 1)
    return replace(tower, image_tokens=grid * grid // (k * k), image_patches=t * grid * grid, pooled_frames=t)


#: MiniCPM-V 4.6 / 4.7's image processor defaults (transformers' ``MiniCPMV4_6ImageProcessor``):
#: ``max_slice_nums``, ``scale_resolution`` (pixels a side), ``patch_size``; and the merged
#: patches per token of its two downsample modes (``16x``: the ViT's window-attention merger and
#: the downsample MLP, 2 x 2 each; ``4x``: the merger skipped).
MINICPMV4_6_DEFAULTS = (9, 448, 14)
MINICPMV4_6_TOKEN_DIVISOR = {"16x": 16, "4x": 4}


def _minicpmv_multiple(length: float, divisor: int) -> int:
    """``length`` to the nearest multiple of ``divisor`` (Python's half-to-even rounding), at
    least one ``divisor``: the processor's rule for every resized side."""
    return max(round(length / divisor) * divisor, divisor)


def _minicpmv_resize(height: float, width: float, scale: int, patch: int, upscale: bool) -> tuple[int, int]:
    """(height, width) an image or slice is resized to: scaled to about ``scale`` squared pixels
    (aspect kept) where larger or where ``upscale``, each side to whole 4-patch units."""
    if height * width > scale * scale or upscale:
        aspect = width / height
        height = int(scale / math.sqrt(aspect))
        width = int(height * aspect)
    unit = patch * 4
    return _minicpmv_multiple(height, unit), _minicpmv_multiple(width, unit)


def minicpmv_slice_grid(height: int, width: int, max_slices: int, scale: int) -> tuple[int, int] | None:
    """(rows, columns) of slices MiniCPM-V 4.6's processor cuts a ``height`` x ``width`` image
    into, or None (no slices): ``min(ceil(area / scale^2), max_slices)`` give or take one slice,
    the factorisation whose columns / rows is nearest the image's aspect in log space (ties to
    more rows). Mirrors transformers' ``MiniCPMV4_6ImageProcessor.get_sliced_grid``."""
    log_ratio = math.log(width / height)
    multiple = min(math.ceil(width * height / (scale * scale)), max_slices)
    if multiple <= 1:
        return None
    best, error = (1, 1), math.inf
    for n in (multiple - 1, multiple, multiple + 1):
        if n == 1 or n > max_slices:
            continue
        for rows in (r for r in range(1, n + 1) if n % r == 0):
            e = abs(log_ratio - math.log(n // rows / rows))
            if e < error or (e == error and rows > best[0]):
                best, error = (rows, n // rows), e
    return best


def minicpmv4_6_slices(
    width: int,
    height: int,
    *,
    max_slices: int = MINICPMV4_6_DEFAULTS[0],
    scale: int = MINICPMV4_6_DEFAULTS[1],
    patch: int = MINICPMV4_6_DEFAULTS[2],
) -> tuple[tuple[int, int], int, tuple[int, int]]:
    """(source (height, width) px, slices, one slice's (height, width) px) of one MiniCPM-V 4.6 /
    4.7 image as the image processor cuts it (``find_best_resize``, ``get_sliced_grid``,
    ``get_refine_size``): the whole image resized to about ``scale`` squared pixels (upscaled
    where there are no slices), then, where :func:`minicpmv_slice_grid` slices it, the image
    refined to whole slices of about that size; no slices: ``0`` and ``(0, 0)``."""
    grid = minicpmv_slice_grid(height, width, max_slices, scale)
    if grid is None:
        return _minicpmv_resize(height, width, scale, patch, upscale=True), 0, (0, 0)
    rows, cols = grid
    piece = _minicpmv_resize(
        _minicpmv_multiple(height, rows) / rows, _minicpmv_multiple(width, cols) / cols, scale, patch, upscale=True
    )
    return _minicpmv_resize(height, width, scale, patch, upscale=False), rows * cols, piece


def minicpmv4_6_image_tokens(
    width: int,
    height: int,
    *,
    max_slices: int = MINICPMV4_6_DEFAULTS[0],
    scale: int = MINICPMV4_6_DEFAULTS[1],
    patch: int = MINICPMV4_6_DEFAULTS[2],
    downsample_mode: str = "16x",
) -> tuple[int, int, int]:
    """(source tokens, slices, tokens a slice) of one MiniCPM-V 4.6 / 4.7 image, as vLLM 0.33.0's
    ``MiniCPMV4_6ProcessingInfo._compute_visual_tokens`` counts them over
    :func:`minicpmv4_6_slices`: tokens are pixels over ``patch^2`` x 16 (``16x``) or x 4 (``4x``).

    :raises InputError: a downsample mode other than ``16x`` / ``4x``."""
    divisor = MINICPMV4_6_TOKEN_DIVISOR.get(downsample_mode)
    if divisor is None:
        raise InputError(
            "preprocessor_config.json", "downsample_mode", f"{downsample_mode!r}: only 16x and 4x are known"
        )
    unit = patch * patch * divisor
    (h, w), n, (sh, sw) = minicpmv4_6_slices(width, height, max_slices=max_slices, scale=scale, patch=patch)
    return h * w // unit, n, sh * sw // unit


#: ``_MAX_FRAMES_PER_VIDEO`` (``minicpmv.py``, 0.33.0): the dummy video's frame cap.
MINICPMV_MAX_FRAMES_PER_VIDEO = 16


def minicpmv4_6_video_tokens(
    seq_len: int,
    images: int,
    videos: int,
    *,
    image_size: int,
    image_slices: int,
    video_slices: int,
    max_slices: int = MINICPMV4_6_DEFAULTS[0],
    scale: int = MINICPMV4_6_DEFAULTS[1],
    patch: int = MINICPMV4_6_DEFAULTS[2],
    downsample_mode: str = "16x",
) -> tuple[int, int]:
    """(frames, tokens a frame) of MiniCPM-V 4.6 / 4.7's dummy video as vLLM 0.33.0 counts it
    (``MiniCPMVProcessingInfo.get_num_frames_with_most_features`` over 4.6's token count): a
    frame is ``image_size`` x ``image_size * video_slices`` (the video processor's
    ``max_slice_nums``) counted at ``video_slices`` slices; the frames fill ``seq_len`` less
    ``images`` dummy images (``image_size`` x ``image_size * image_slices``, the config's slice
    count, counted at the image processor's ``max_slices``), shared by ``videos``, 1-16."""

    def count(height: int, slices: int) -> int:
        src, n, per = minicpmv4_6_image_tokens(
            image_size, height, max_slices=slices, scale=scale, patch=patch, downsample_mode=downsample_mode
        )
        return src + n * per

    frame = count(image_size * video_slices, video_slices)
    frames = (seq_len - count(image_size * image_slices, max_slices) * images) // frame // max(videos, 1)
    return max(min(frames, MINICPMV_MAX_FRAMES_PER_VIDEO), 1), frame


#: MiniCPM-V 4.6 / 4.7 (``minicpmv4_6.py``, ``minicpmv4_7.py``, 0.33.0): the top-level
#: ``model_type`` and its tower's ``vision_config.model_type``; and ``MiniCPMV4_6Config``'s
#: defaults vLLM falls back to: ``image_size`` (the dummy's width), ``insert_layer_id`` (the
#: window merger after that block), and ``get_image_max_slice_num``'s 9.
MINICPMV4_6_WRAPPERS = {"minicpmv4_6": "minicpmv4_6_vision", "minicpmv4_7": "minicpmv4_7_vision"}
MINICPMV4_6_IMAGE_SIZE, MINICPMV4_6_INSERT_LAYER, MINICPMV4_6_CONFIG_SLICES = 448, 6, 9


@dataclass(frozen=True)
class MiniCPMVProcessing:
    """What sizes MiniCPM-V 4.6 / 4.7's dummy items: the config's ``image_size`` and slice count
    (the dummy image is ``image_size`` x ``image_size * image_slices``), the image processor's
    ``max_slice_nums`` / ``scale_resolution`` / ``patch_size`` / ``downsample_mode``, the video
    processor's ``max_slice_nums`` (its frames are ``image_size`` x ``image_size * video_slices``),
    whether the window merger runs (``insert_layer_id`` >= 0), whether the processor values
    came from the checkpoint's files (else the processors' defaults), and the config's own
    ``downsample_mode`` (the tower's default where no per-item flag reaches it: videos before
    vLLM 0.32)."""

    image_size: int
    image_slices: int
    max_slices: int = MINICPMV4_6_DEFAULTS[0]
    video_slices: int = MINICPMV4_6_DEFAULTS[0]
    scale: int = MINICPMV4_6_DEFAULTS[1]
    patch: int = MINICPMV4_6_DEFAULTS[2]
    downsample_mode: str = "16x"
    vit_merger: bool = True
    from_checkpoint: bool = False
    config_mode: str = "16x"


def _small_int(value: object, source: str, field: str, top: int) -> int:
    if not isinstance(value, int) or isinstance(value, bool) or not 0 < value <= top:
        raise InputError(source, field, f"must be an integer in 1-{top:,}")
    return value


def minicpmv4_6_tower(vision: Mapping[str, Any], config: Mapping[str, Any], kind: str) -> VisionTower:
    """MiniCPM-V 4.6 / 4.7's vision tower (``MiniCPMV4_6ForConditionalGeneration``): a SigLIP-like
    NaViT ViT (``Idefics2VisionTransformer`` with its attention mask: every slice of the batch
    padded to the longest), the window-attention merger after block ``insert_layer_id`` (a 2 x 2
    window attention, then a ``4 x hidden`` norm and a ``4 x intermediate`` MLP onto one position
    per window), the remaining blocks, and the 2 x 2 downsample MLP merger onto the text model's
    width. Sized at the profile run by :func:`minicpmv4_6_sized` from the config's ``image_size``
    and slice count (``slice_config.max_slice_nums``, else ``max_slice_nums``, else 9) and the
    processors' sizes (:func:`minicpmv4_6_processing`; their defaults until then).

    :raises InputError: a width, ``image_size`` or slice count missing or malformed (named)."""
    slice_config = config.get("slice_config")
    slices = (
        slice_config.get("max_slice_nums", MINICPMV4_6_CONFIG_SLICES)
        if isinstance(slice_config, Mapping)
        else config.get("max_slice_nums", MINICPMV4_6_CONFIG_SLICES)
    )
    insert = config.get("insert_layer_id", MINICPMV4_6_INSERT_LAYER)
    if not isinstance(insert, int) or isinstance(insert, bool):
        raise InputError("config.json", "insert_layer_id", "must be an integer")
    processing = MiniCPMVProcessing(
        image_size=_small_int(config.get("image_size", MINICPMV4_6_IMAGE_SIZE), "config.json", "image_size", 1 << 14),
        image_slices=_small_int(slices, "config.json", "max_slice_nums", 1024),
        vit_merger=insert >= 0,
        config_mode=str(config.get("downsample_mode", "16x")),
    )
    return _vit(kind, vision, _pos(vision, "patch_size"), 4, minicpmv=processing)


def minicpmv4_6_processing(
    tower: VisionTower, preprocessor: Mapping[str, Any] | None, video_preprocessor: Mapping[str, Any] | None
) -> VisionTower:
    """``tower`` with the sizes of the checkpoint's ``preprocessor_config.json`` (the image
    processor: ``max_slice_nums``, ``scale_resolution``, ``patch_size``, ``downsample_mode``) and
    ``video_preprocessor_config.json`` (``max_slice_nums``; without the file, transformers' video
    processor reads ``preprocessor_config.json``), each key left out keeping the processors'
    default (9, 448, 14, ``16x``).

    :raises InputError: a malformed size, an unknown mode, or a processor ``patch_size`` other than
        the vision config's (named)."""
    assert tower.minicpmv is not None
    image = dict(preprocessor or {})
    video = dict(video_preprocessor if video_preprocessor is not None else image)
    src, vsrc = (
        "preprocessor_config.json",
        ("video_preprocessor_config.json" if video_preprocessor is not None else "preprocessor_config.json"),
    )
    d = MINICPMV4_6_DEFAULTS
    mode = image.get("downsample_mode", "16x")
    if mode not in MINICPMV4_6_TOKEN_DIVISOR:
        raise InputError(src, "downsample_mode", f"{mode!r}: only 16x and 4x are known")
    patch = _small_int(image.get("patch_size", d[2]), src, "patch_size", 1024)
    if patch != tower.patch_size:
        raise InputError(src, "patch_size", f"{patch}: not the vision config's {tower.patch_size}, not bounded")
    return replace(
        tower,
        minicpmv=replace(
            tower.minicpmv,
            max_slices=_small_int(image.get("max_slice_nums", d[0]), src, "max_slice_nums", 1024),
            video_slices=_small_int(video.get("max_slice_nums", d[0]), vsrc, "max_slice_nums", 1024),
            scale=_small_int(image.get("scale_resolution", d[1]), src, "scale_resolution", 1 << 14),
            patch=patch,
            downsample_mode=str(mode),
            from_checkpoint=True,
        ),
    )


def minicpmv4_6_sized(tower: VisionTower, *, max_model_len: int, image_active: bool) -> VisionTower:
    """MiniCPM-V 4.6 / 4.7's items (vLLM 0.33.0's ``MiniCPMVProcessingInfo`` over 4.6's count and
    ``MiniCPMVDummyInputsBuilder``): the dummy image ``image_size`` x ``image_size *
    image_slices``, cut by the image processor (:func:`minicpmv4_6_slices`) into its source and
    slices, each padded to the longest (``image_patches``: the positions an image runs); the counted
    video the frames of :func:`minicpmv4_6_video_tokens` within ``max_model_len`` less one image
    where images are on, while the profiled video (built for ``{video: 1}``) takes its frames
    within the whole ``max_model_len``: ``frame_patches`` / ``frame_embeds`` / ``frame_crops``
    carry the one run. ``16x`` merges 4 x 4 patches a token (the window merger, then the
    merger), ``4x`` 2 x 2 (the window merger skipped).

    :raises InputError: ``16x`` without the window merger (``insert_layer_id`` < 0: vLLM's count
        divides by 16 while the tower merges 4 patches a token; not bounded)."""
    p = tower.minicpmv
    assert p is not None
    if p.downsample_mode == "16x" and not p.vit_merger:
        raise InputError(
            "config.json",
            "insert_layer_id",
            "negative with downsample_mode 16x: the tower skips the window merger "
            "while vLLM counts 16 patches a token, not bounded",
        )
    side, mode = p.image_size, p.downsample_mode

    def positions(height: int, slices: int) -> tuple[int, int]:
        """(crops, padded positions a crop) of one ``side`` x ``height`` image."""
        (h, w), n, (sh, sw) = minicpmv4_6_slices(side, height, max_slices=slices, scale=p.scale, patch=p.patch)
        return 1 + n, max(h * w, sh * sw) // (p.patch * p.patch)

    def video(images: int) -> tuple[int, int]:
        return minicpmv4_6_video_tokens(
            max_model_len,
            images,
            1,
            image_size=side,
            image_slices=p.image_slices,
            video_slices=p.video_slices,
            max_slices=p.max_slices,
            scale=p.scale,
            patch=p.patch,
            downsample_mode=mode,
        )

    src, n, per = minicpmv4_6_image_tokens(
        side, side * p.image_slices, max_slices=p.max_slices, scale=p.scale, patch=p.patch, downsample_mode=mode
    )
    crops, longest = positions(side * p.image_slices, p.max_slices)
    frames, frame = video(1 if image_active else 0)
    run, _ = video(0)
    frame_crops, frame_longest = positions(side * p.video_slices, p.video_slices)
    return replace(
        tower,
        spatial_merge_size=4 if p.downsample_mode == "16x" else 2,
        image_tokens=src + n * per,
        image_patches=crops * longest,
        crops=crops,
        video_item_tokens=frames * frame,
        frame_tokens=frames * frame,
        frame_patches=run * frame_crops * frame_longest,
        frame_embeds=run * frame,
        frame_crops=run * frame_crops,
    )


def minicpmv4_6_widest(
    tower: VisionTower, positions: int, slices: int, tp: int, dtype_bytes: int, embeds: int
) -> tuple[int, int]:
    """(certain, extra) bytes at MiniCPM-V 4.6's vision forward's widest point
    (``get_vision_hidden_states`` and ``_process_vision_input``, 0.33.0) over ``slices`` crops
    padded to ``positions / slices`` positions each, yielding ``embeds`` embeddings.

    certain: the padded model-dtype copy of the pixel values and the additive and boolean padding
    masks, alive through the whole forward, beside the widest of: a block before the window merger
    over every padded position (its input, held by the caller, the residual stream and the norm,
    ``3 x hidden``, then the attention's qkv, SDPA output, its reshaped copy and ``out_proj``,
    ``5 x hidden / TP``, or ``fc1`` and its activation, ``2 x intermediate / TP``); the window
    merger (its input held, the merged slices and their padded batch, a quarter each, and one
    slice's norm, permuted copy,
    ``pre_norm`` over ``4 x hidden`` and ``linear_1`` with its GELU over ``4 x intermediate``); a
    block after it over a quarter of the positions (``16x``); the merger (the normed states, the
    outputs so far and one slice's concatenated 2 x 2 copy, norm, ``linear_1`` and GELU); the end
    (the slices' outputs beside each item's concatenation: twice the outputs). extra: a block's
    output before its residual add, the SDPA kernel's float32 log-sum-exp per head and position,
    and one window's attention path."""
    b = dtype_bytes
    h, i = tower.hidden_size, tower.intermediate_size
    longest = positions // max(slices, 1)
    merged = tower.spatial_merge_size == 4  # 16x: the window merger quarters the positions
    after = positions // 4 if merged else positions

    def block(n: int) -> int:  # the block's input (held by the caller) and residual stream, its norm,
        # then the attention's qkv, SDPA output, reshaped copy and out_proj, or fc1 and its activation
        return n * (3 * h + max(5 * h // tp, 2 * i // tp)) * b

    held = positions * (tower.pixel_elements_per_patch * b + b + 1)  # the pixels, the additive and boolean masks
    window = positions * h * b + 2 * (positions // 4) * h * b + longest * (4 * h + 2 * i) * b if merged else 0
    out = embeds * tower.out_hidden_size * b
    tokens = after // max(slices, 1) // 4
    merger = after * h * b + max(after * h * b, out + 4 * tokens * 4 * h * b)
    certain = max(held + max(block(positions), window, block(after), merger), 2 * out)
    extra = positions * h * b + positions * (tower.num_heads // tp) * 4 + longest * 6 * h * b
    return certain, extra


def kimi_vl_grid(width: int, height: int, patch: int, kernel: tuple[int, int], limit: int) -> tuple[int, int]:
    """(rows, columns) of merged tokens of a ``width x height`` image
    (``KimiVLProcessingInfo.get_num_image_tokens``): past ``limit`` patches the image is scaled by
    ``sqrt(limit / patches)`` (each side truncated), then padded to whole ``kernel x patch`` units."""
    if (width // patch) * (height // patch) > limit:
        scale = math.sqrt(limit / ((width // patch) * (height // patch)))
        width, height = int(width * scale), int(height * scale)
    unit_h, unit_w = kernel[0] * patch, kernel[1] * patch
    return -(-height // unit_h), -(-width // unit_w)


def _kernel(value: object, source: str, field: str) -> tuple[int, int]:
    if isinstance(value, list | tuple) and len(value) == 2:
        h, w = value
        if all(isinstance(x, int) and not isinstance(x, bool) and 0 < x <= 64 for x in (h, w)):
            return int(h), int(w)
    raise InputError(source, field, "must be two positive integers up to 64")


def kimi_vl_tower(vision: Mapping[str, Any], in_token_limit: int = KIMI_VL_IN_TOKEN_LIMIT) -> VisionTower:
    """Kimi-VL's MoonViT (``kimi_vl.py`` / ``moonvit.py``): the dummy image is
    :data:`KIMI_VL_DUMMY_SIDE` square, sized by :func:`kimi_vl_grid` under the image processor's
    ``in_token_limit`` (4,096: 33 x 33 tokens at patch 14 and a 2 x 2 kernel; 16,384: 37 x 37),
    ``kernel^2`` patches a token. The tower is not gated and adds its interpolated position
    embeddings once; ``patch_merger`` copies its output into ``kernel^2``-patch groups, which
    ``_process_image_input`` concatenates (another copy) before the projector's norm, ``linear_1``
    over ``kernel^2 x hidden`` and its GELU, and ``linear_2`` onto the text model's width.

    :raises InputError: a width missing, or a merge kernel that is not two positive integers (named)."""
    patch = _pos(vision, "patch_size")
    kernel = _kernel(vision.get("merge_kernel_size", [2, 2]), "config.json", "vision_config.merge_kernel_size")
    if kernel[0] != kernel[1]:
        raise InputError("config.json", "vision_config.merge_kernel_size", "not square: not bounded")
    rows, cols = kimi_vl_grid(KIMI_VL_DUMMY_SIDE, KIMI_VL_DUMMY_SIDE, patch, kernel, in_token_limit)
    return VisionTower(
        model_type="moonvit",
        hidden_size=_pos(vision, "hidden_size"),
        intermediate_size=_pos(vision, "intermediate_size"),
        num_heads=_pos(vision, "num_attention_heads"),
        patch_size=patch,
        temporal_patch_size=1,
        spatial_merge_size=kernel[0],
        in_channels=3,
        out_hidden_size=0,  # linear_2 onto the text model's width, set by the caller
        deepstack=0,
        pos_embeds=False,
        image_tokens=rows * cols,
        image_patches=rows * cols * kernel[0] * kernel[1],
        projector_widths=1,
        projector_copies=3,
    )


def kimi_vl_in_token_limit(preprocessor: Mapping[str, Any] | None, tower: VisionTower) -> int:
    """A Kimi-VL checkpoint's ``preprocessor_config.json`` ``in_token_limit`` (0: absent, the
    default :data:`KIMI_VL_IN_TOKEN_LIMIT` applies).

    :raises InputError: not an integer in 1-2^24, or a ``patch_size`` / ``merge_kernel_size``
        other than the vision config's (the tower would run another grid than the one counted)."""
    pre = preprocessor or {}
    if pre.get("patch_size", tower.patch_size) != tower.patch_size:
        raise InputError("preprocessor_config.json", "patch_size", "differs from vision_config.patch_size: not bounded")
    kernel = _kernel(
        pre.get("merge_kernel_size", [tower.spatial_merge_size] * 2), "preprocessor_config.json", "merge_kernel_size"
    )
    if kernel != (tower.spatial_merge_size, tower.spatial_merge_size):
        raise InputError("preprocessor_config.json", "merge_kernel_size", "differs from the vision config's")
    value = pre.get("in_token_limit")
    if value is None:
        return 0
    if not isinstance(value, int) or isinstance(value, bool) or not 0 < value <= MAX_ITEM_TOKENS:
        raise InputError("preprocessor_config.json", "in_token_limit", "must be an integer in 1-16,777,216")
    return value


def llama4_chunks(max_patches: int) -> int:
    """Chunks one dummy image runs through Llama-4's tower: ``get_image_size_with_most_features``
    is ``max_patches`` tiles tall and one wide, which ``get_best_fit`` maps onto that many
    tiles exactly; more than one tile adds the global tile (``patches_per_image``)."""
    return max_patches + 1 if max_patches > 1 else 1


def llama4_tower(vision: Mapping[str, Any], max_patches: int = LLAMA4_MAX_PATCHES) -> VisionTower:
    """Llama-4's vision tower (``mllama4.py``, ``Llama4VisionModel``, sharded under TP): the dummy
    image runs :func:`llama4_chunks` ``image_size`` chunks of ``(image_size / patch_size)^2``
    patches and a class token each (``max_patches``: the image processor's, 16 by default;
    ``vision`` over ``Llama4VisionConfig``'s defaults, ``mllama4.DEFAULTS``, as vLLM reads it); the
    class token is dropped, the rest pixel-shuffled (``pixel_shuffle_ratio``; two contiguous
    copies) into ``get_patch_per_chunk`` embeddings a chunk, which the adapter's two linears and
    ``multi_modal_projector`` map onto the text model's width. Every chunk's embeddings are image
    tokens (``select_token_ids`` over the patch token; the tile separators are not).

    :raises InputError: a width missing, or a chunk the patches or the shuffle do not divide (named)."""
    vision = {**mllama4.DEFAULTS, **vision}
    size, patch = _pos(vision, "image_size"), _pos(vision, "patch_size")
    ratio = vision.get("pixel_shuffle_ratio", LLAMA4_PIXEL_SHUFFLE_RATIO)
    if not isinstance(ratio, int | float) or isinstance(ratio, bool) or not 0 < ratio <= 1:
        raise InputError("config.json", "vision_config.pixel_shuffle_ratio", "must be a number in (0, 1]")
    side = size // patch
    per_chunk = side * side // round(1 / ratio**2)  # get_patch_per_chunk
    if size % patch or not per_chunk or size > 1 << 16:
        raise InputError("config.json", "vision_config.image_size", "must be whole patches the pixel shuffle divides")
    chunks = llama4_chunks(max_patches)
    return _vit(
        LLAMA4_VISION_TYPE,
        vision,
        patch,
        image_tokens=chunks * per_chunk,
        class_token=True,
        image_patches=chunks * (side * side + 1),
        projector_widths=1,
        projector_copies=2,
        crops=chunks,
        tile_size=size,
    )


def llama4_tile_refusal(tower: VisionTower, preprocessor: Mapping[str, Any] | None) -> str:
    """Why vLLM cannot run Llama-4's dummy image through ``tower`` ('' where it can): the image
    processor cuts it into tiles of its ``size`` (``preprocessor_config.json``'s height and width;
    absent: :data:`LLAMA4_TILE_SIDE`), and ``Llama4VisionEncoder`` adds ``positional_embedding_vlm``,
    one row per patch of a ``vision_config.image_size`` tile and the class token, to each tile's
    positions: a tile of another side does not broadcast (Llama4Config's default tower, 448 px, under
    the published 336 px processor).

    :raises InputError: ``size`` without a positive height and width (``Llama4ImageProcessor``
        refuses it; named)."""
    size = (preprocessor or {}).get("size")
    if size is None:
        tile, said = (LLAMA4_TILE_SIDE, LLAMA4_TILE_SIDE), "its default; no preprocessor_config.json size"
    else:
        sides = [size.get(k) if isinstance(size, Mapping) else None for k in ("height", "width")]
        if not all(isinstance(v, int) and not isinstance(v, bool) and 0 < v <= 1 << 16 for v in sides):
            raise InputError("preprocessor_config.json", "size", "must give a height and a width in px (1-65,536)")
        tile, said = (int(sides[0] or 0), int(sides[1] or 0)), "preprocessor_config.json"
    if tile == (tower.tile_size, tower.tile_size):
        return ""
    side = tower.tile_size // tower.patch_size
    return (
        f"the image processor's {tile[0]} x {tile[1]} px tiles ({said}) against vision_config.image_size "
        f"{tower.tile_size} (a Llama4Config without vision_config takes Llama4VisionConfig's 448): vLLM's tower "
        f"adds its {side * side + 1:,} position embeddings to "
        f"{(tile[0] // tower.patch_size) * (tile[1] // tower.patch_size) + 1:,} positions a tile and fails"
    )


def llama4_max_patches(preprocessor: Mapping[str, Any] | None) -> int:
    """``max_patches`` of a Llama-4 checkpoint's ``preprocessor_config.json`` (0: absent, the
    default :data:`LLAMA4_MAX_PATCHES` applies).

    :raises InputError: not an integer in 1-1024 (named)."""
    value = (preprocessor or {}).get("max_patches")
    if value is None:
        return 0
    if not isinstance(value, int) or isinstance(value, bool) or not 0 < value <= 1024:
        raise InputError("preprocessor_config.json", "max_patches", "must be an integer in 1-1024")
    return value


def gemma4_audio_seq_length(source: str, value: object) -> int:
    """A Gemma-4 processor's ``audio_seq_length`` (``source`` names where it was read).

    :raises InputError: not an integer in 1-1,048,576 (named)."""
    if not isinstance(value, int) or isinstance(value, bool) or not 0 < value <= 1 << 20:
        raise InputError(source, "audio_seq_length", "must be an integer in 1-1,048,576")
    return value


def gemma4_with_audio(
    tower: VisionTower, audio: Mapping[str, Any], mm_processor_kwargs: Mapping[str, Any]
) -> VisionTower:
    """Gemma-4's vision ``tower`` with its audio tower beside it (the E2B / E4B checkpoints'
    ``audio_config``): an audio item counts the processor's ``audio_seq_length``
    (``--mm-processor-kwargs`` ``audio_seq_length``, else :data:`GEMMA4_AUDIO_SEQ_LENGTH`; a
    checkpoint's ``processor_config.json`` replaces it, :func:`with_audio_seq_length`), so the
    video (32 x 78 tokens) stays the profiled item unless its limit is 0 or the audio counts more.

    :raises InputError: a malformed ``audio_seq_length`` or ``audio_config.hidden_size`` (named)."""
    seq = mm_processor_kwargs.get("audio_seq_length")
    tokens = GEMMA4_AUDIO_SEQ_LENGTH if seq is None else gemma4_audio_seq_length("--mm-processor-kwargs", seq)
    hidden = audio.get("hidden_size", 1024)  # Gemma4AudioConfig's default
    if not isinstance(hidden, int) or isinstance(hidden, bool) or not 0 < hidden <= 1 << 16:
        raise InputError("config.json", "audio_config.hidden_size", "must be a positive integer up to 65,536")
    return replace(tower, audio_item_tokens=tokens, audio_hidden_size=hidden)


def with_audio_seq_length(tower: VisionTower, processor: Mapping[str, Any] | None) -> VisionTower:
    """``tower`` with a checkpoint's ``processor_config.json`` ``audio_seq_length`` (Gemma-4 with
    audio); unchanged where the tower has no audio or the file names none.

    :raises InputError: a malformed value (named)."""
    if not tower.audio_item_tokens or not processor or processor.get("audio_seq_length") is None:
        return tower
    value = gemma4_audio_seq_length("processor_config.json", processor.get("audio_seq_length"))
    return replace(tower, audio_item_tokens=value)


def mistral3_tower(vision: Mapping[str, Any], config: Mapping[str, Any]) -> VisionTower:
    """Mistral3's Pixtral tower (``mistral3.py``, ``model_type`` ``mistral3`` over a ``pixtral``
    ``vision_config``): the dummy image is a ``longest_edge`` square (the image processor's
    ``size["longest_edge"]``, ``Mistral3ProcessingInfo.get_image_size_with_most_features``;
    :func:`sized_for_processor` applies it; here ``vision_config.image_size``, which the published
    checkpoints' processors keep), resized to
    ``ceil(edge / patch_size)`` patches a side; its embeddings are the image tokens of a
    ``ceil(edge / (patch_size x spatial_merge_size))`` square grid (``get_patch_grid_size``; the
    ``[IMG_BREAK]`` / ``[IMG_END]`` tokens are not embeddings). The tower is gated
    (``gate_up_proj``) with 2D rotary tables; the projector norms, unfolds
    ``spatial_merge_size^2`` patches per token, then two linears (:func:`tower_widest`).

    :raises InputError: a width missing or not a positive integer (named)."""
    v = {**PIXTRAL_DEFAULTS, **vision}
    patch = _pos(v, "patch_size")
    merge = config.get("spatial_merge_size", MISTRAL3_SPATIAL_MERGE)
    if not isinstance(merge, int) or isinstance(merge, bool) or merge <= 0:
        raise InputError("config.json", "spatial_merge_size", "must be a positive integer to bound the encoder")
    edge = _pos(v, "image_size")
    if edge > 1 << 16:
        raise InputError("config.json", "vision_config.image_size", f"{edge} px: over 65,536")
    side = -(-edge // patch)
    grid = -(-edge // (patch * merge))
    return _vit(
        str(vision.get("model_type") or "pixtral"),
        v,
        patch,
        merge=merge,
        gated=True,
        image_tokens=grid * grid,
        image_patches=side * side,
        projector_widths=2,
        projector_copies=4,
    )


def sized_for_processor(tower: VisionTower, image_edge: int) -> VisionTower:
    """``tower`` with its item sized by the checkpoint's image processor where the size decides a
    fixed-size tower's item (``image_edge`` is ``size["longest_edge"]``; Mistral3's Pixtral: the
    square's side, 0: ``vision_config.image_size``; Idefics3 / SmolVLM: the side the image is
    rescaled to before its tiles, :func:`idefics3_tiles`, 0: 4 tiles; Llama-4: ``image_edge`` is
    the processor's ``max_patches``, :func:`llama4_max_patches`, 0: 16); else ``tower`` unchanged
    (the Qwen towers read the processor's size in :func:`max_tokens_per_item`).

    :raises InputError: an edge over 65,536 px (named)."""
    if image_edge and tower.model_type == "moonvit":  # Kimi-VL: image_edge is in_token_limit
        k = tower.spatial_merge_size
        rows, cols = kimi_vl_grid(KIMI_VL_DUMMY_SIDE, KIMI_VL_DUMMY_SIDE, tower.patch_size, (k, k), image_edge)
        return replace(tower, image_tokens=rows * cols, image_patches=rows * cols * k * k)
    if image_edge and tower.model_type == LLAMA4_VISION_TYPE:  # Llama-4: image_edge is max_patches
        chunks = llama4_chunks(image_edge)
        per_chunk, patches = tower.image_tokens // tower.crops, tower.image_patches // tower.crops
        return replace(tower, image_tokens=chunks * per_chunk, image_patches=chunks * patches, crops=chunks)
    if not image_edge or tower.model_type not in ("pixtral", *IDEFICS3_WRAPPERS.values()):
        return tower
    patch, merge = tower.patch_size, tower.spatial_merge_size
    if image_edge > 1 << 16:
        raise InputError("preprocessor_config.json", "size.longest_edge", f"{image_edge} px: over 65,536")
    if tower.model_type != "pixtral":  # Idefics3 / SmolVLM: crops of one tile each
        per_tile_patches = tower.image_patches // tower.crops
        crops = idefics3_tiles(tower.tile_size, image_edge)
        per_tile_tokens = per_tile_patches // (merge * merge)
        return replace(tower, image_tokens=crops * per_tile_tokens, image_patches=crops * per_tile_patches, crops=crops)
    side, grid = -(-image_edge // patch), -(-image_edge // (patch * merge))
    return replace(tower, image_tokens=grid * grid, image_patches=side * side)


def _most_features_tokens(max_pixels: int, unit: int) -> int:
    """Tokens of ``get_image_size_with_most_features``: the largest ``h x w`` merged-token grid
    of at most ``max_pixels // unit**2`` tokens with an aspect ratio of at most 200."""
    n = max_pixels // (unit * unit)
    if n > MAX_ITEM_TOKENS:
        raise InputError(
            "preprocessor_config.json", "size.longest_edge", f"{max_pixels} px is over {MAX_ITEM_TOKENS:,} tokens"
        )
    for seq in range(n, 0, -1):
        d = math.isqrt(seq)
        while d > 1 and seq % d:
            d -= 1
        if seq // d / d <= 200:
            return seq
    return 1


def _edge(processor: Mapping[str, Any] | None, source: str) -> int:
    """The ``longest_edge`` pixels of a processor config (``size.longest_edge``, else
    ``max_pixels``); 0 where it names none."""
    if not processor:
        return 0
    size = processor.get("size")
    value = size.get("longest_edge") if isinstance(size, Mapping) else None
    if value is None:
        value = processor.get("max_pixels")
    if value is None:
        return 0
    if not isinstance(value, int) or isinstance(value, bool) or value <= 0:
        raise InputError(source, "size.longest_edge", "must be a positive integer (pixels)")
    return value


def processor_max_pixels(
    preprocessor: Mapping[str, Any] | None, video_preprocessor: Mapping[str, Any] | None = None
) -> tuple[int, int]:
    """(image, video) ``longest_edge`` pixels from a checkpoint's ``preprocessor_config.json`` and
    ``video_preprocessor_config.json`` as vLLM's processors read them (0: the published default
    applies).

    :raises InputError: a size that is not a positive integer (named)."""
    return (
        _edge(preprocessor, "preprocessor_config.json"),
        _edge(video_preprocessor, "video_preprocessor_config.json"),
    )


def max_tokens_per_item(
    tower: VisionTower,
    max_model_len: int,
    image_max_pixels: int = 0,
    video_max_pixels: int = 0,
    image_active: bool = True,
) -> dict[str, int]:
    """``get_mm_max_tokens_per_item`` for the processors' sizes (``image_max_pixels`` /
    ``video_max_pixels`` from the checkpoint's processor configs, 0: the published defaults):
    merged tokens of the largest image and of the dummy video. ``image_active``: images are
    among the dummy's modalities (``--limit-mm-per-prompt`` above 0 for them).

    InternVL: ``get_num_frames_with_most_features``' frames, the context left beside one largest
    image (when images are on) over the embeddings per frame, at least 1.

    Qwen3-VL: the video processor's own size over 2 frames. Qwen2-VL / Qwen2.5-VL: frames of the
    largest image, as many as keep the video within ``max_model_len`` tokens (at least 1, at most
    :data:`QWEN2_MAX_FRAMES_PER_VIDEO`; ``_get_max_video_frames``), padded to the temporal patch."""
    if tower.image_tokens:
        sizes = {"image": tower.image_tokens}
        if tower.audio_item_tokens:  # Gemma-4's audio tower: the processor's audio_seq_length
            sizes["audio"] = tower.audio_item_tokens
        if tower.video_item_tokens:  # Gemma-4: a fixed count of frames
            sizes["video"] = tower.video_item_tokens
        elif tower.max_frames:  # LLaVA-OneVision: the frames the context holds beside one newline
            frames = max(1, min(tower.max_frames, (max_model_len - 1) // tower.frame_tokens))
            sizes["video"] = frames * tower.frame_tokens + 1
        elif tower.frame_tokens:  # InternVL: the frames the context leaves beside one image
            room = max_model_len - (tower.image_tokens if image_active else 0)
            sizes["video"] = max(room // tower.frame_tokens, 1) * tower.frame_tokens
        return sizes
    unit = tower.patch_size * tower.spatial_merge_size
    if tower.model_type in QWEN2_VISION_TYPES:
        image = _most_features_tokens(image_max_pixels or QWEN2_IMAGE_MAX_PIXELS, unit)

        def video_tokens(frames: int) -> int:
            return -(-frames // tower.temporal_patch_size) * image

        frames = 1
        while video_tokens(frames + 1) <= max_model_len:
            frames += 1
        frames = max(min(frames, QWEN2_MAX_FRAMES_PER_VIDEO), 1)
        return {"image": image, "video": video_tokens(frames)}
    image = _most_features_tokens(image_max_pixels or QWEN3_IMAGE_MAX_PIXELS, unit)
    video = _most_features_tokens((video_max_pixels or QWEN3_VIDEO_MAX_PIXELS) // tower.temporal_patch_size, unit)
    return {"image": image, "video": video}


@dataclass(frozen=True)
class EncoderBatch:
    """What ``profile_run`` encodes: ``items`` items of ``modality`` of ``tokens_per_item``
    merged tokens each, under an encoder budget of ``budget`` tokens (the log's "Encoder cache
    will be initialized with a budget of B tokens, and profiled with N M items")."""

    modality: str
    tokens_per_item: int
    items: int
    budget: int

    @property
    def tokens(self) -> int:
        return self.items * self.tokens_per_item


def encoder_batch(
    tower: VisionTower,
    *,
    max_num_batched_tokens: int,
    max_num_seqs: int,
    max_model_len: int,
    limit_mm_per_prompt: Mapping[str, int] | None = None,
    image_max_pixels: int = 0,
    video_max_pixels: int = 0,
) -> EncoderBatch | None:
    """The dummy batch ``MultiModalBudget`` picks (0.27.1-0.33.0, chunked prefill on); ``None``
    when every modality's limit is 0 (nothing is encoded). A modality the limits omit counts 999;
    ``image_max_pixels`` / ``video_max_pixels``: as :func:`max_tokens_per_item`."""
    limits = limit_mm_per_prompt or {}
    sizes = max_tokens_per_item(
        tower, max_model_len, image_max_pixels, video_max_pixels, image_active=limits.get("image", 999) > 0
    )
    per_item = {m: t for m, t in sizes.items() if limits.get(m, 999) > 0}
    if not per_item:
        return None
    modality, tokens = max(per_item.items(), key=lambda kv: (kv[1], kv[0]))
    budget = max(max_num_batched_tokens, max(per_item.values()))
    per_prompt = max(1, min(limits.get(modality, 999), max_model_len // tokens))
    items = max(1, min(budget // tokens, max_num_seqs * per_prompt))
    return EncoderBatch(modality, tokens, items, budget)


def tower_widest(
    tower: VisionTower, patches: int, tp: int, dtype_bytes: int, tokens: int | None = None
) -> tuple[int, int]:
    """(certain, extra) bytes alive at the tower forward's widest point over ``patches`` patches
    on one TP rank (``mm_encoder_tp_mode`` ``weights``: the attention and MLP widths sharded).

    certain: the running hidden states and the position embeddings (``encoder_metadata`` holds
    them), the deepstack features produced so far, and the widest block: its norm, then the MLP's
    ``linear_fc1`` output and activation (``2 x intermediate / TP``), or the attention's qkv, the
    rotated q and k, its output and projection (``(3 + 2 + 1) x hidden / TP + hidden``); or the
    end, where the merger's and deepstack outputs and their concatenation are alive together
    (twice the outputs); a LLaVA's projector (``linear_1`` and its activation, or its output and
    ``linear_2``'s: two output widths), PaliGemma's linear (one). ``tokens``: the output tokens
    (default ``patches / merge^2``). extra: the rotary cos/sin tables (float32), the float32 pixel
    values' model-dtype copy, and the block's output before the residual add."""
    b = dtype_bytes
    h, i = tower.hidden_size, tower.intermediate_size
    tokens = patches // tower.patches_per_token if tokens is None else tokens
    out = tokens * tower.out_hidden_size * b
    # the hidden states and the residual (Qwen2.5-VL's fused norm) or the position embeddings
    base = (2 if tower.pos_embeds or tower.gated else 1) * patches * h * b
    deep = tower.deepstack * out
    # gated (Qwen2.5-VL): the block's input, attention output and fused norm (3 H), gate_up (2 I) and
    # its activation (I) held until down_proj's output (H) exists; else (fc2(act(fc1(x)))) the
    # norm, fc1 and its activation (fc1 is freed before fc2 runs)
    mlp = patches * (2 * h + 3 * i // tp) * b if tower.gated else patches * (h + 2 * i // tp) * b
    attn = patches * (h + 6 * h // tp) * b
    block = base + deep + max(mlp, attn)
    merger = base + deep + 2 * patches * h * b  # the merger's fc1 and activation on merge^2 x hidden per token
    # the merger's output beside its concatenation with the deepstack features (Qwen3-VL's
    # torch.cat copies even without them) or its reverse-window-index copy (Qwen2.5-VL)
    end = out if tower.model_type == "qwen2_vl" else 2 * out * (1 + tower.deepstack)
    if tower.image_tokens:  # LLaVA's two-layer projector keeps two output widths, PaliGemma's one
        end = tower.projector_widths * out
        if tower.project_patches:  # LLaVA-OneVision: linear_2's input and output over every patch, or
            # the projected patches beside the merge's permuted copy and its newline-joined (or pooled) one
            end = max(2 * patches * tower.out_hidden_size * b, patches * tower.out_hidden_size * b + 2 * out)
        # Gemma-3: the transposed copy, then its pooled and normed tokens; Mistral3: the output's
        # concatenation, norm, unfolded grids and their concatenation (merge^2 x hidden per token)
        merger = base + tower.projector_copies * patches * h * b + (2 * tokens * h * b if tower.pool else 0) + end
    if tower.model_type == "kimi_k25_vision":  # the frames' mean and its grouped copy beside the
        # final hidden states; then the copies, their concatenation, norm, linear_1 and its GELU
        pooled = patches // tower.pooled_frames * h * b
        merger = max(base + 2 * pooled, 4 * pooled + out)
    if tower.merger_intermediate:  # GLM-4.1V: the adapter, then the merger over merged tokens
        o, mi = tower.out_hidden_size, tower.merger_intermediate
        # post_layernorm beside the hidden states and the position embeddings, a contiguous copy
        # for the downsample convolution and its output; then, the convolution's output held by
        # the caller, the merger's GELU output, gate_up (2 x intermediate / TP) and its activation
        adapter = 4 * patches * h * b + tokens * o * b
        merger = max(adapter, patches * h * b + tokens * (2 * o + 3 * mi // tp) * b)
        end = out
    certain = max(block, merger, end)
    head_dim = h // tower.num_heads
    extra = 2 * patches * head_dim * 4 + patches * tower.pixel_elements_per_patch * b + patches * h * b
    return certain, extra


def gemma4_widest(tower: VisionTower, patches: int, unit: int, embeds: int, dtype_bytes: int) -> tuple[int, int]:
    """(certain, extra) bytes at Gemma-4's tower forward's widest point (``_process_video_input`` /
    ``_process_image_input``) over ``patches`` padded patches in items (frames or images) of
    ``unit`` patches, yielding ``embeds`` embeddings; replicated, so no TP split.

    The items run in chunks whose size depends on the free memory (``_encoder_chunk``), so
    certain takes one item a chunk: every earlier chunk's output held (``hidden`` a patch) beside
    one item's widest block (the hidden states and residual, then ``gate_proj``'s activation,
    ``up_proj`` and their product, or the attention's q, k, v, their norms and rotations); or
    the end, where the chunks' outputs and their concatenation, the pooled float32 states, their
    model-dtype copy, its norm and the projection are alive together. extra: the widest chunk
    (as many items as a tenth of :data:`GEMMA4_CHUNK_CARD_BYTES` allows, less what certain holds), the attention mask
    (``unit`` booleans a patch), the float32 pixel values' shifted copies."""
    b = dtype_bytes
    h, i = tower.hidden_size, tower.intermediate_size

    def block(n: int) -> int:
        return n * (2 * h + max(3 * i, 7 * h)) * b

    end = 2 * patches * h * b + embeds * h * (4 + 2 * b) + embeds * tower.out_hidden_size * b
    one = (patches - unit) * h * b + block(unit)
    certain = max(end, one)
    cost = unit * 4 * tower.position_embedding_size * 8
    chunk = max(1, min(patches // unit, GEMMA4_CHUNK_CARD_BYTES // 10 // cost if cost else patches // unit))
    widest_chunk = (patches - chunk * unit) * h * b + block(chunk * unit)
    extra = max(0, widest_chunk - one) + patches * unit + 2 * patches * tower.pixel_elements_per_patch * 4
    return certain, extra


def gemma4_audio_term(tower: VisionTower, batch: EncoderBatch, *, dtype_bytes: int, runner: str) -> Term:
    """``activation: multimodal encoder`` where Gemma-4's audio is profiled (its
    ``audio_seq_length`` above the other modalities' tokens): ``batch.items`` dummy audios of
    :data:`GEMMA4_DUMMY_AUDIO_SAMPLES` samples each, one embedding each. low: the embeddings
    (text width, model dtype); high: those, V1's float32 mel features, and each item's tower
    bounded by :data:`GEMMA4_AUDIO_ITEM_WIDTHS` float32 widths of ``audio_hidden_size`` and the
    convolution maps."""
    items = batch.items
    out = items * GEMMA4_DUMMY_AUDIO_EMBEDS * tower.out_hidden_size * dtype_bytes
    features = items * 3 * 128 * 4 if runner == "V1" else 0
    per_item = 4 * (GEMMA4_AUDIO_ITEM_WIDTHS * tower.audio_hidden_size + GEMMA4_AUDIO_CONV_ELEMENTS)
    high = out + features + items * per_item
    source = (
        f"profile_run: {items} audio item(s) x {batch.tokens_per_item:,} tokens (encoder budget {batch.budget:,}; "
        f"the processor's audio_seq_length counts, but the dummy audio is {GEMMA4_DUMMY_AUDIO_SAMPLES} samples: "
        f"{GEMMA4_DUMMY_AUDIO_EMBEDS} embedding each); low: the embeddings kept in the encoder cache "
        f"({out / MIB:,.2f} MiB); high: with each item's conformer over at most 32 positions "
        f"({high / MIB:,.2f} MiB)"
    )
    return Term("activation: multimodal encoder", out, high, source)


def data_parallel_shares(items: int, tp: int) -> tuple[int, ...]:
    """The dummy items each TP rank runs under ``--mm-encoder-tp-mode data``
    (``get_load_balance_assignment``, ``models/vision.py``, 0.27.1-0.33.0): the items sorted by
    size, largest first (a stable sort: equal items keep their order), each to the first rank
    with the least load; the profile's items are all one size, so they go round the ranks:
    ``ceil(items / tp)`` to the first ``items % tp`` ranks (all where it divides), one fewer to
    the rest, none where ``items < tp``.

    :returns: items per rank, rank 0 first (``tp`` values)."""
    return tuple(items // tp + (1 if rank < items % tp else 0) for rank in range(tp))


def data_parallel_widest(
    tower: VisionTower, batch: EncoderBatch, tp: int, dtype_bytes: int
) -> tuple[int, int, int, int, int]:
    """(low, high, certain, largest share, held): bytes of the tower's forward on the heaviest TP rank
    under ``--mm-encoder-tp-mode data`` (``run_dp_sharded_mrope_vision_model``,
    ``models/vision.py``): each rank copies its share's pixel values out of the batch
    (``torch.cat``, the pixel values' dtype, alive until the function returns), runs the whole
    tower over them (no TP split: :func:`tower_widest` at TP 1), pads its output to the largest
    share (a rank with fewer items: an empty padding and the concatenation's copy) and, under
    TP > 1, all-gathers ``tp x`` that largest share into a new buffer (at TP 1 the gather
    returns its input), whose views the encoder cache keeps. For each rank's share (of
    :func:`data_parallel_shares`): certain = the larger of the tower's certain point and the
    end (its output, padding, padded copy and the gathered buffer). low: certain x
    :data:`TOWER_SLACK` low plus the share's pixel copy at 2 B; high: certain x the high slack,
    the tower's extra and the copy at 4 B; each the larger over the ranks' shares. held: what
    the encoder cache keeps through the decoder's dummy run (the gathered buffer, or the
    outputs at TP 1); certain: the largest certain point over the shares (factor 1); largest
    share: the items rank 0 runs."""
    b = dtype_bytes
    shares = data_parallel_shares(batch.items, tp)
    largest = shares[0]
    per_item = tower.embeddings(batch.items, batch.tokens, batch.modality) // batch.items
    width = tower.out_hidden_size * (1 + tower.deepstack) * b  # the tower's output row, deepstack joined
    gathered = tp * largest * per_item * width if tp > 1 else 0
    held = gathered or batch.items * per_item * width
    low = high = widest = 0
    for k in sorted(set(shares)):
        tokens = k * batch.tokens_per_item
        certain = extra = 0
        if k:
            certain, extra = tower_widest(tower, tower.patches(k, tokens, batch.modality), 1, b, tokens)
        local = k * per_item * width
        padded = (2 * largest - k) * per_item * width if k < largest else 0  # the padding and the cat's copy
        certain = max(certain, local + padded + gathered)
        widest = max(widest, certain)
        copy = tower.pixels(k, tokens, batch.modality)
        low = max(low, certain * TOWER_SLACK[0] // 100 + copy * PIXEL_BYTES[0])
        high = max(high, certain * TOWER_SLACK[1] // 100 + extra + copy * PIXEL_BYTES[1])
    return low, high, widest, largest, held


def encoder_term(
    tower: VisionTower,
    batch: EncoderBatch,
    *,
    tp: int,
    dtype_bytes: int,
    runner: str,
    decoder_high: int,
    sizes: str = "published default sizes",
    dense_mask: bool = False,
    data_parallel: bool = False,
) -> Term:
    """``activation: multimodal encoder``: what the encoder adds to the profile run's transient
    peak over the decoder's own terms (see the module text).

    low: the larger of the encoder outputs, ``tokens x out_hidden_size x (1 + deepstack)`` in the
    model dtype, alive through the decoder's dummy run (both runners), plus on V1 the pixel values
    (model dtype), and the tower's certain widest point (with its pixel values) less
    ``decoder_high``, the decoder's own activation high bound (bytes): the run's peak is at least
    the tower's. high: the larger of the tower forward's widest point x :data:`TOWER_SLACK` (with
    the float32 pixel values, its rotary tables and a block's output) and the outputs with V1's
    float32 pixels. ``dense_mask``: the tower attends through one ``N x N`` mask in the model dtype
    over the batch's ``N`` patches, alive through every block (Pixtral up to 0.28,
    :data:`PIXTRAL_DENSE_MASK_UNTIL`); it joins the certain point. ``data_parallel``:
    ``--mm-encoder-tp-mode data`` (a class of
    :data:`~dryboot.vllm.config.mm_encoder_tp.PROFILED_DATA_TOWERS`): the heaviest rank's share
    of the items through the whole tower, with its pixel copy and the gathered outputs
    (:func:`data_parallel_widest`); the batch's pixel values are on every rank.
    """
    if batch.modality == "audio":
        return gemma4_audio_term(tower, batch, dtype_bytes=dtype_bytes, runner=runner)
    patches = tower.patches(batch.items, batch.tokens, batch.modality)
    embeds = tower.embeddings(batch.items, batch.tokens, batch.modality)
    out = embeds * tower.out_hidden_size * (1 + tower.deepstack) * dtype_bytes
    pixels = tower.pixels(batch.items, batch.tokens, batch.modality)
    held_lo = out + (pixels * PIXEL_BYTES[0] if runner == "V1" else 0)
    held_hi = out + (pixels * PIXEL_BYTES[1] if runner == "V1" else 0)
    if tower.model_type == "gemma4_vision":
        unit = tower.frame_patches if batch.modality == "video" else tower.image_patches
        certain, extra = gemma4_widest(tower, patches, unit, embeds, dtype_bytes)
    elif tower.minicpmv is not None:
        slices = batch.items * (tower.frame_crops if batch.modality == "video" else tower.crops)
        certain, extra = minicpmv4_6_widest(tower, patches, slices, tp, dtype_bytes, embeds)
    else:
        certain, extra = tower_widest(tower, patches, tp, dtype_bytes, batch.tokens)
    mask = patches * patches * dtype_bytes if dense_mask else 0
    # the mask is certain; torch's memory-efficient kernel may copy it once more, padded to aligned rows
    certain, extra = certain + mask, extra + mask
    tower_hi = certain * TOWER_SLACK[1] // 100 + extra + pixels * PIXEL_BYTES[1]
    tower_lo = certain * TOWER_SLACK[0] // 100 + pixels * PIXEL_BYTES[0]
    split = ""
    if data_parallel:
        dp_lo, dp_hi, certain, largest, held = data_parallel_widest(tower, batch, tp, dtype_bytes)
        held_lo, held_hi = held_lo - out + held, held_hi - out + held
        tower_lo, tower_hi = dp_lo + pixels * PIXEL_BYTES[0], dp_hi + pixels * PIXEL_BYTES[1]
        split = (
            f"; --mm-encoder-tp-mode data: {largest} of the {batch.items} item(s) on the heaviest of {tp} TP rank(s), "
            "through the whole tower beside its copy of their pixel values"
            + (f", the {held / MIB:,.0f} MiB all-gathered outputs kept" if tp > 1 else "")
        )
    low = max(held_lo, tower_lo - decoder_high)
    high = max(held_hi, tower_hi)
    source = (
        f"profile_run: {batch.items} {batch.modality} item(s) x {batch.tokens_per_item:,} tokens (encoder budget "
        f"{batch.budget:,}; {patches:,} patches through the {tower.model_type} tower, at the processors' "
        f"{sizes}); low: the encoder outputs kept in the encoder cache through the decoder's dummy run "
        f"({out / MIB:,.0f} MiB"
        + (", with V1's dummy pixel values" if runner == "V1" else "")
        + f"), or the tower's certain widest point less the decoder's high bound ({tower_lo / MIB:,.0f} - "
        f"{decoder_high / MIB:,.0f} MiB); high: the tower's widest point x {TOWER_SLACK[0]}-{TOWER_SLACK[1]} % "
        f"({certain / MIB:,.0f} MiB at factor 1, plus float32 pixels and rotary tables)"
        + (f"; the dense block-diagonal attention mask ({mask / MIB:,.0f} MiB) included" if mask else "")
        + split
    )
    return Term("activation: multimodal encoder", low, high, source)

"""The activation peak of vLLM's profile run (route b: a per-layer model read from vLLM's forward
code, not a measurement).

``GPUModelRunner.profile_run`` (0.28 ``v1/worker/gpu_model_runner.py``) runs
``_dummy_run(max_num_batched_tokens, is_profile=True)`` then ``_dummy_sampler_run`` on
``min(max_num_seqs, max_num_batched_tokens)`` rows; ``memory_profiling``
(``utils/mem_utils.py``) keeps ``torch_peak - torch_allocated`` after it: the *transient* peak,
the largest set of tensors alive at once. The two runs do not overlap, so the transient is the
larger of

- **the forward**: at its widest point a decoder layer holds the residual and the normed hidden
  states (``T x hidden``) and the MLP's ``gate_up`` output and activation
  (``T x 3 x intermediate / TP``), or for a fused-MoE layer the routed copies
  (``T x top_k x (2 x moe_intermediate / TP + hidden)``); the attention projections
  (``T x (q + 2 kv + o) / TP``) when wider;
- **the sampler**: ``compute_logits`` in the model dtype, the float32 copy the sampler works on,
  the softmax and the exponential noise of ``forward_native`` (``v1/sample/ops/topk_topp_sampler.py``;
  top-k/top-p run in place in Triton), all ``S x vocab``.

The per-element factors are stated as intervals (``SAMPLER_BYTES_PER_LOGIT``,
``FORWARD_SLACK``); a cold torch.compile cache adds inductor's compilation and autotuning
inside the profile run, its own term (``COLD_COMPILE_MIB``).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, replace
from typing import Any

from dryboot.errors import InputError
from dryboot.vllm.model_executor.models import mllama4, qwen3_vl
from dryboot.vllm.models.registry import ARCHITECTURES
from dryboot.vllm.versions import version_key
from dryboot.vllm.worker.encoder_profile import (
    GEMMA3_PAN_AND_SCAN,
    GEMMA4_VIDEO_FRAMES,
    GLM4V_WRAPPERS,
    LLAMA4_VISION_TYPE,
    PIXTRAL_DENSE_MASK_UNTIL,
    VisionTower,
    encoder_batch,
    encoder_term,
    gemma4_with_audio,
    glm4v_sized,
    minicpmv4_6_sized,
    sized_for_processor,
    vision_tower,
)
from dryboot.vllm.worker.interval import MIB, Term

#: bytes alive per logit at the sampler's peak (low, high): the model-dtype logits
#: ``compute_logits`` returns (2, kept by ``_dummy_sampler_run``), their float32 copy
#: (``Sampler.forward``, 4; temperature divides in place), then the second, seeded call's
#: ``forward_native``: top-k/top-p in place (Triton, 8+ rows), the float32 softmax (4) and the
#: exponential noise ``q`` (4): 14; up to 2 more per logit for the tensor-parallel gather and the
#: FlashInfer sampler's buffers of the first call.
SAMPLER_BYTES_PER_LOGIT = (14, 16)
#: the forward's transient over the widest layer's live tensors: inductor's buffers and the
#: kernels' workspaces (low, high), in percent.
FORWARD_SLACK = (100, 150)
#: a cold torch.compile cache: inductor compiles (and Triton autotunes) inside the profile run, and
#: its temporaries raise the torch peak vLLM charges as activation, or stay allocated (low, high), MiB.
#: Not a share of the activation: the boots of upstream releases that separate it lose about the same
#: KV on very different peaks, all at max_num_batched_tokens 2048: an RTX 4090 boot of Qwen3-8B
#: (0.27.1), KV 4.92 vs 5.91 GiB (+0.99: all of it peak); Qwen3-1.7B on the same rented card (0.27.1),
#: 16.94 vs 17.99 (+1.05: +0.50 peak, +0.56 left allocated); an RTX 4050 laptop (Qwen2.5-3B-AWQ,
#: 0.29.0), 1.50 vs 2.41 at util 0.80 vs 0.79 (+0.97 at equal util: +0.45 peak, +0.53 left
#: allocated); the reference RTX 3090 deployment (Qwen3.8-27B W4A16), peak 1.96 vs 1.09 (+0.87); an
#: RTX 4070 laptop under WSL2 (Qwen2.5-1.5B-Instruct, 0.30.0, the author's note): --enforce-eager
#: keeps 1.08 GiB more KV, 0.35 of it the graph figure, so ~0.73 is the compile's (the smallest).
#: Low 0.70 GiB (0.73 less a printed hundredth per figure and rounding), high 1.07 (1.05 plus one
#: hundredth per figure). The golite fork's pair (yeasah/vllm-golite, a source build 0.1.dev20058
#: serving an EXL3 checkpoint, a quantization no release 0.27.1-0.33 has: 0.79 vs 0.40 peak, +0.40 KV)
#: is set apart as every fork is (out of range in the calibration: not a release dryboot models).
#: tests/data/budget/EVIDENCE-0.27-0.33.md, "Seventh pass".
COLD_COMPILE_MIB = (720, 1100)
#: vLLM pads the vocabulary to a multiple of 64 (``DEFAULT_VOCAB_PADDING_SIZE``).
VOCAB_PADDING = 64

#: the V2 model runner's ``_dummy_sampler_run`` (``v1/worker/gpu/model_runner.py``): the
#: model-dtype logits (2) and, where the dummy batch needs logits processing, their float32 copy
#: (``Sampler.apply_sampling_params``, 4); the Gumbel sampling is a Triton kernel with per-block
#: partials only, and no rejection sampler runs (low, high).
V2_SAMPLER_BYTES_PER_LOGIT = (2, 6)
#: 0.33's V2 ``_dummy_sampler_run`` adds a pass with ``SamplingParams.for_sampler_warmup()``
#: (penalties, min-p, top-k/top-p, 5 logprobs): the float32 logits (4), their log-softmax for the
#: logprobs (4) beside the model-dtype logits (2), and up to 12 more for top-k/top-p's sort
#: (float32 values, int64 indices) and min-p's probabilities (low, high).
V2_WARMUP_SAMPLER_BYTES_PER_LOGIT = (10, 22)
#: config keys of the encoders ``profile_run`` profiles first (``_get_mm_dummy_batch``), with
#: the modalities each may serve (a vision tower: images and videos).
ENCODER_MODALITIES: dict[str, tuple[str, ...]] = {
    "vision_config": ("image", "video"),
    "audio_config": ("audio",),
    "vision_tower_config": ("image", "video"),
    "speech_config": ("audio",),
    # an encoder of images only whose config the file lays out under names of its own, as a
    # family's forward_config hook names it (get_supported_mm_limits: image alone)
    "image_encoder_config": ("image",),
}
_ENCODER_KEYS = tuple(ENCODER_MODALITIES)
#: top-level ``model_type``s whose vision tower serves another modality than image and video
#: (``get_supported_mm_limits``): Kimi-K2.5's ``vision_chunk`` (images and video chunks alike),
#: so ``--limit-mm-per-prompt`` image / video 0 leaves it profiled, as vLLM does.
VISION_MODALITIES_BY_MODEL: dict[str, tuple[str, ...]] = {"kimi_k25": ("vision_chunk",)}
#: with speculative decoding ``_dummy_sampler_run`` then runs the rejection sampler on new
#: ``2 x S`` model-dtype logits with their float32 probabilities (and, for probabilistic drafts,
#: ``S`` rows of float32 draft probabilities and their softmax), while the first ``S`` rows of
#: logits are still referenced: bytes per ``S x vocab`` element (low, high).
SPECULATIVE_SAMPLER_BYTES = (14, 30)

_DTYPE_BYTES = {"float32": 4, "float": 4, "bfloat16": 2, "float16": 2, "half": 2}


@dataclass(frozen=True)
class ForwardShape:
    """The widths the forward and the sampler allocate with (totals, before TP).

    :param vocab_size: tokens (``vocab_size``).
    :param hidden_size: ``hidden_size``.
    :param intermediate_size: the dense MLP's width (0: none).
    :param moe_intermediate_size: one expert's width (0: dense).
    :param experts_per_token: ``num_experts_per_tok`` (0: dense).
    :param q_size: ``num_attention_heads * head_dim``; ``kv_size``: ``num_key_value_heads * head_dim``.
    :param dtype_bytes: the activations' bytes per element (the model dtype).
    :param multimodal: the config key of an encoder vLLM profiles before the decoder
        (``vision_config``...), ``None`` for a text-only model.
    :param modalities: the modalities its encoders may serve (``image``, ``video``, ``audio``).
    :param encoder_decoder: the config's ``is_encoder_decoder`` (Whisper): the decoder reads the
        encoder's outputs, so only ``--skip-mm-profiling`` leaves the encoder unprofiled.
    :param vision_tower: the vision tower's widths where :mod:`~dryboot.vllm.worker.encoder_profile`
        bounds it; ``vision_model_type``: the ``vision_config``'s ``model_type`` (named in a refusal);
        ``vision_refusal``: why a tower of a bounded family cannot be sized (a width missing);
        ``image_max_pixels`` / ``video_max_pixels``: the checkpoint's processor sizes (0: the
        published defaults; :func:`~dryboot.vllm.worker.encoder_profile.processor_max_pixels`).
    """

    vocab_size: int
    hidden_size: int
    intermediate_size: int
    moe_intermediate_size: int = 0
    experts_per_token: int = 0
    q_size: int = 0
    kv_size: int = 0
    dtype_bytes: int = 2
    multimodal: str | None = None
    modalities: tuple[str, ...] = ()
    encoder_decoder: bool = False
    vision_tower: VisionTower | None = None
    vision_model_type: str = ""
    vision_refusal: str = ""
    image_max_pixels: int = 0
    video_max_pixels: int = 0


def _int(cfg: Mapping[str, Any], *keys: str) -> int:
    for k in keys:
        v = cfg.get(k)
        if isinstance(v, int) and not isinstance(v, bool) and v > 0:
            return v
    return 0


def forward_shape(
    config: Mapping[str, Any],
    source: str = "config.json",
    dtype: str = "auto",
    mm_processor_kwargs: Mapping[str, Any] | None = None,
) -> ForwardShape:
    """The :class:`ForwardShape` of an HF ``config.json`` (its ``text_config`` when it has one).
    ``mm_processor_kwargs``: ``--mm-processor-kwargs``, read where the tower's item depends on
    them (Gemma-3's pan-and-scan); any other key makes a profiled encoder refused by name.

    The family of the file's architecture says where those widths lie (its ``forward_config``
    hook: Moondream3's ``config.text``); read as ``config`` for an architecture not planned.

    :raises InputError: no ``vocab_size`` or ``hidden_size`` (the activation cannot be bounded),
        or a width the family reads malformed.
    """
    names = config.get("architectures")
    family = ARCHITECTURES.get(str(names[0])) if isinstance(names, list) and names else None
    if family is not None:
        config = family.forward_config(with_class_vision_config(config))
    cfg: Mapping[str, Any] = config
    for key in ("text_config", "language_config", "llm_config"):
        sub = config.get(key)
        if isinstance(sub, Mapping) and "hidden_size" in sub:
            cfg = sub
            break
    vocab = _int(cfg, "vocab_size", "padded_vocab_size") or _int(config, "vocab_size")
    hidden = _int(cfg, "hidden_size", "d_model", "n_embd")
    if not vocab or not hidden:
        missing = "vocab_size" if not vocab else "hidden_size"
        raise InputError(
            source, missing, "activation (profile run): not found, so the sampler's logits cannot be bounded"
        )
    heads = _int(cfg, "num_attention_heads", "n_head")
    head_dim = _int(cfg, "head_dim") or (hidden // heads if heads else 0)
    kv_heads = _int(cfg, "num_key_value_heads", "num_kv_heads") or heads
    name = (
        dtype
        if dtype != "auto"
        else str(cfg.get("torch_dtype") or cfg.get("dtype") or config.get("torch_dtype") or "bfloat16")
    )
    encoders = [k for k in _ENCODER_KEYS if isinstance(config.get(k), Mapping)]
    encoder = encoders[0] if encoders else None
    own = VISION_MODALITIES_BY_MODEL.get(str(config.get("model_type") or ""))
    modalities = tuple(
        sorted({m for k in encoders for m in (own if own and k == "vision_config" else ENCODER_MODALITIES[k])})
    )
    # Gemma-4's audio tower beside its vision tower (E2B / E4B): one of them is profiled
    gemma4_audio = config.get("model_type") == "gemma4" and encoders == ["vision_config", "audio_config"]
    vision = config.get("vision_config") if encoders == ["vision_config"] or gemma4_audio else None
    tower, vision_refusal = None, ""
    if isinstance(vision, Mapping):
        try:
            tower = vision_tower(
                vision,
                str(config.get("model_type") or ""),
                str(config.get("vision_feature_select_strategy") or "default"),
                config=config,
                mm_processor_kwargs=mm_processor_kwargs,
            )
            read = set(GEMMA3_PAN_AND_SCAN) if tower is not None and tower.pool else set()
            if tower is not None and tower.model_type == "gemma4_vision":
                read = {"max_soft_tokens", "images_kwargs"}
                if gemma4_audio:
                    tower = gemma4_with_audio(tower, config["audio_config"], mm_processor_kwargs or {})
                    read.add("audio_seq_length")
            unread = sorted(set(mm_processor_kwargs or {}) - read)
            if unread:
                raise InputError(
                    "--mm-processor-kwargs", unread[0], "not read for this tower: the largest item's size is unknown"
                )
        except InputError as e:  # refused only where the encoder is profiled (activation_terms)
            tower, vision_refusal = None, str(e)
        if tower is not None and not tower.out_hidden_size:  # a projector onto the text model's width
            tower = replace(tower, out_hidden_size=hidden)
    named = vision if isinstance(vision, Mapping) else config.get(encoder) if encoder else None
    vision_type = str(named.get("model_type") or "") if isinstance(named, Mapping) else ""
    if tower is None and not vision_refusal and vision_type in ("clip_vision_model", "siglip_vision_model"):
        vision_type += (
            f" (in {config.get('model_type')}: only LLaVA's, LLaVA-NeXT's, LLaVA-OneVision's, PaliGemma's and "
            "Gemma-3's are bounded)"
        )
    return ForwardShape(
        multimodal=encoder,
        modalities=modalities,
        encoder_decoder=config.get("is_encoder_decoder") is True,
        vision_tower=tower,
        vision_refusal=vision_refusal,
        vision_model_type=tower.model_type if tower else vision_type,
        vocab_size=vocab,
        hidden_size=hidden,
        intermediate_size=_int(cfg, "intermediate_size", "ffn_dim", "n_inner") or 4 * hidden,
        moe_intermediate_size=_int(cfg, "moe_intermediate_size", "expert_intermediate_size"),
        experts_per_token=_int(cfg, "num_experts_per_tok", "moe_topk", "top_k", "num_experts_per_token"),
        q_size=heads * head_dim,
        kv_size=kv_heads * head_dim,
        dtype_bytes=_DTYPE_BYTES.get(name, 2),
    )


def encoder_profiled(
    shape: ForwardShape,
    *,
    language_model_only: bool = False,
    limit_mm_per_prompt: Mapping[str, int] | None = None,
    skip_mm_profiling: bool = False,
) -> bool:
    """Whether ``profile_run`` profiles a multimodal encoder before the decoder (0.28
    ``GPUModelRunner.profile_run``): not for a text-only model; not with
    ``--language-model-only`` (every modality's limit is then 0) or ``--limit-mm-per-prompt`` 0
    for every modality the encoders serve (``supports_multimodal_inputs`` is then false: text-only
    mode); not with ``--skip-mm-profiling``. A modality the limits omit counts 999, as
    ``MultiModalConfig.get_limit_per_prompt`` reads it."""
    if shape.multimodal is None or language_model_only or skip_mm_profiling:
        return False
    limits = limit_mm_per_prompt or {}
    return not all(limits.get(m, 999) == 0 for m in shape.modalities)


#: the multimodal wrappers whose config class fills the vision config the profile run encodes with:
#: transformers' ``Llama4Config`` builds ``Llama4VisionConfig()`` where config.json has no
#: ``vision_config`` (the aiconfigurator copies of Llama-4 Scout and Maverick), and ``Qwen3VLConfig`` /
#: ``Qwen3VLMoeConfig`` default what a ``vision_config`` leaves out (``deepstack_visual_indexes``
#: [8, 16, 24]: the published Qwen3-VL-235B-A22B-Thinking lists none); keyed by architecture and the
#: ``model_type`` that picks the config class
_VISION_CONFIG_CLASSES = {
    ("Llama4ForConditionalGeneration", "llama4"): mllama4.vision_config,
    ("Qwen3VLForConditionalGeneration", "qwen3_vl"): qwen3_vl.vision_config,
    ("Qwen3VLMoeForConditionalGeneration", "qwen3_vl_moe"): qwen3_vl.vision_config,
}


def with_class_vision_config(config: Mapping[str, Any]) -> Mapping[str, Any]:
    """``config`` with the ``vision_config`` its config class gives vLLM's tower, for a wrapper of
    :data:`_VISION_CONFIG_CLASSES` (``mllama4.vision_config``: an empty one where the file has none, its
    widths then ``Llama4VisionConfig``'s defaults; ``qwen3_vl.vision_config``: the file's over
    ``Qwen3VLVisionConfig``'s defaults), the same readers the weights walk uses; ``config`` itself for
    every other architecture."""
    names = config.get("architectures")
    arch = str(names[0]) if isinstance(names, list) and names else ""
    read = _VISION_CONFIG_CLASSES.get((arch, str(config.get("model_type") or "")))
    return config if read is None else {**config, "vision_config": read(config)}


def padded_vocab(vocab: int) -> int:
    """``pad_vocab_size``: rounded up to a multiple of 64."""
    return -(-vocab // VOCAB_PADDING) * VOCAB_PADDING


def forward_widest(shape: ForwardShape, tokens: int, tp: int) -> int:
    """Bytes alive at the widest point of one decoder layer's forward over ``tokens`` tokens on
    one TP rank (the activation factor 1; see the module text)."""
    b = shape.dtype_bytes
    residual = 2 * tokens * shape.hidden_size * b
    mlp = 3 * tokens * (shape.intermediate_size // tp) * b
    moe = 0
    if shape.moe_intermediate_size and shape.experts_per_token:
        routed = tokens * shape.experts_per_token
        moe = routed * (3 * shape.moe_intermediate_size // tp + shape.hidden_size) * b
    attn = tokens * ((2 * shape.q_size + 2 * shape.kv_size) // tp) * b
    return residual + max(mlp, moe, attn)


def sampler_rows(max_num_seqs: int, max_num_batched_tokens: int) -> int:
    """The rows ``_dummy_sampler_run`` samples: ``min(max_num_seqs, max_num_batched_tokens)``."""
    return min(max_num_seqs, max_num_batched_tokens)


def _sizes_said(shape: ForwardShape) -> str:
    """Where the largest item's size came from, for the encoder term's text."""
    if shape.vision_tower is not None and shape.vision_tower.model_type == "pixtral":
        if shape.image_max_pixels:
            return f"image processor's longest_edge ({shape.image_max_pixels} px square)"
        return "vision config's image_size (no preprocessor_config.json beside the config)"
    if shape.vision_tower is not None and shape.vision_tower.model_type == "gemma4_vision":
        t = shape.vision_tower
        return (
            f"image processor's max_soft_tokens {t.image_tokens} ({t.image_patches:,} padded patches an image); "
            f"the video's {GEMMA4_VIDEO_FRAMES} 224 px frames padded to {t.frame_patches} patches, "
            f"{t.frame_embeds} embeddings each"
        )
    if shape.vision_tower is not None and shape.vision_tower.model_type in GLM4V_WRAPPERS.values():
        return (
            f"image processor's size.longest_edge {shape.image_max_pixels:,} px and the video processor's "
            f"{shape.video_max_pixels:,} px (pixel areas; the profiled video's frames fill max_model_len)"
        )
    if shape.vision_tower is not None and (p := shape.vision_tower.minicpmv) is not None:
        said = (
            "sizes in the checkpoint's processor configs"
            if p.from_checkpoint
            else "defaults (no preprocessor_config.json beside the config)"
        )
        return (
            f"{said}: image max_slice_nums {p.max_slices}, scale_resolution {p.scale}, downsample_mode "
            f"{p.downsample_mode}, video max_slice_nums {p.video_slices}; the config's image_size {p.image_size} x "
            f"{p.image_slices} slices; every slice padded to the batch's longest"
        )
    if shape.vision_tower is not None and shape.vision_tower.model_type == "kimi_k25_vision":
        t = shape.vision_tower
        what = f"a video chunk of {t.pooled_frames} frames" if t.pooled_frames > 1 else "the image"
        return f"media_proc_cfg of preprocessor_config.json (the 3000 px dummy: {what}, {t.image_tokens:,} tokens)"
    if shape.vision_tower is not None and shape.vision_tower.model_type == "moonvit":
        limit = shape.image_max_pixels
        said = f"image processor's in_token_limit {limit}" if limit else "published Kimi-VL-A3B in_token_limit 4096"
        return f"{said} (the 1024 px dummy: {shape.vision_tower.image_tokens:,} tokens)"
    if shape.vision_tower is not None and shape.vision_tower.model_type == LLAMA4_VISION_TYPE:
        said = f"image processor's max_patches {shape.image_max_pixels or 16}"
        return f"{said} ({shape.vision_tower.crops} chunks per image: the tiles and the global tile)"
    if shape.vision_tower is not None and shape.vision_tower.pool:
        crops = shape.vision_tower.crops
        return f"vision config's image_size ({crops} crop{'s' if crops > 1 else ''} per image: pan-and-scan " + (
            "on)" if crops > 1 else "off, the processor's default)"
        )
    if shape.vision_tower is not None and shape.vision_tower.model_type in ("idefics3_vision", "smolvlm_vision"):
        return (
            f"image processor's size.longest_edge ({shape.image_max_pixels} px; {shape.vision_tower.crops} crops)"
            if shape.image_max_pixels
            else f"image processors' default size, 4 tiles a side ({shape.vision_tower.crops} crops per image)"
        )
    if shape.vision_tower is not None and shape.vision_tower.max_frames:  # LLaVA-OneVision
        t = shape.vision_tower
        return (
            f"fixed 1153 x 944 dummy image ({t.crops} crops: the resized image and the tiles of its best pinpoint); "
            f"the video's one-crop frames, {t.frame_tokens} pooled tokens each, at most {t.max_frames}"
        )
    if shape.vision_tower is not None and shape.vision_tower.crops > 1:
        return (
            f"vision config's image_size and image_grid_pinpoints ({shape.vision_tower.crops} crops per image: "
            "the resized image and the tiles of the pinpoint with the most features)"
        )
    if shape.vision_tower is not None and shape.vision_tower.image_tokens:
        return "vision config's image_size (one crop per image)"
    if shape.image_max_pixels or shape.video_max_pixels:
        return "sizes in the checkpoint's processor configs"
    return "published default sizes (no preprocessor_config.json beside the config)"


def _glm4v_sized(shape: ForwardShape, tower: VisionTower, max_model_len: int, limits: Mapping[str, int]) -> VisionTower:
    """GLM-4.1V's items at ``max_model_len`` (:func:`~dryboot.vllm.worker.encoder_profile.glm4v_sized`).

    :raises InputError: the checkpoint's image or video processor size not known (vLLM reads both
        to build the dummies; dryboot keeps no published default for them)."""
    if not shape.image_max_pixels or not shape.video_max_pixels:
        missing = "preprocessor_config.json" if not shape.image_max_pixels else "video_preprocessor_config.json"
        raise InputError(
            "activation",
            "multimodal encoder profiling",
            f"GLM-4.1V's dummy items are sized by the checkpoint's {missing} size.longest_edge (a pixel area), "
            "not found beside the config: not bounded",
        )
    return glm4v_sized(
        tower,
        max_model_len=max_model_len,
        image_max_pixels=shape.image_max_pixels,
        video_max_pixels=shape.video_max_pixels,
        image_active=limits.get("image", 999) > 0,
    )


def activation_terms(
    shape: ForwardShape,
    *,
    max_num_batched_tokens: int,
    max_num_seqs: int,
    tp: int,
    compiled: bool,
    compile_cache: str = "unknown",
    drafter: ForwardShape | None = None,
    speculative: bool = False,
    runner: str = "V1",
    last_stage: bool = True,
    release: str = "0.28.0",
    encoder_profiled: bool = True,
    drafter_pass: bool = False,
    max_model_len: int = 0,
    mm_limits: Mapping[str, int] | None = None,
    first_stage: bool = True,
    encoder_data_parallel: bool = False,
) -> list[Term]:
    """The profile run's transient peak as terms: ``activation: forward`` and
    ``activation: sampler`` (only the larger counts: the runs follow each other, so the smaller
    term is 0..0 with its figure in the text), plus ``activation: cold torch.compile`` when
    ``compiled`` and ``compile_cache`` is not ``warm``. ``drafter``: a speculative drafter's
    forward, run after the target's (``_dummy_run`` calls ``drafter.dummy_run``), whose own
    transient adds only where wider. ``speculative``: the rejection sampler's warm-up follows
    the sampler's (:data:`SPECULATIVE_SAMPLER_BYTES`; V1 runner only). ``runner``: ``V1`` or
    ``V2`` (whose dummy sampler keeps far less: :data:`V2_SAMPLER_BYTES_PER_LOGIT`).
    ``last_stage``: only the last pipeline stage runs the sampler (``profile_run``).
    ``drafter_pass``: a drafter model runs its ``dummy_run`` after the target's forward
    (EAGLE/EAGLE3/MTP/DFlash/draft model; ``drafter`` gives its widths, else the target's bound
    it), the target's output hidden states held meanwhile.
    ``encoder_profiled``: ``False`` where vLLM skips the multimodal encoder's profiling
    (``--language-model-only``, or ``--limit-mm-per-prompt`` 0 for every modality); where it
    runs, ``activation: multimodal encoder`` is added
    (:func:`~dryboot.vllm.worker.encoder_profile.encoder_term`, over ``max_model_len`` and the
    ``mm_limits`` of ``--limit-mm-per-prompt``); on the V2 runner only the first pipeline stage
    encodes (``first_stage``), on V1 every stage does. ``encoder_data_parallel``:
    ``--mm-encoder-tp-mode data`` for a class of
    :data:`~dryboot.vllm.config.mm_encoder_tp.PROFILED_DATA_TOWERS` (the items split over the
    ``tp`` ranks, each share through the whole tower: ``encoder_term``'s ``data_parallel``; a
    rank with fewer items pads its output in the pixel values' dtype before 0.31, the tower's
    after, the same: ``InputProcessingContext.call_hf_processor`` casts the processor's floating
    tensors to the model dtype).

    :raises InputError: a multimodal model whose encoder is not one dryboot bounds (named).
    """
    batch = None
    if shape.multimodal is not None and encoder_profiled:
        tower = shape.vision_tower
        if tower is not None and max_model_len > 0:
            sized = sized_for_processor(tower, shape.image_max_pixels)
            old_pixtral = tower.model_type == "pixtral" and version_key(release)[:2] <= PIXTRAL_DENSE_MASK_UNTIL
            if old_pixtral and sized != tower:
                # 0.27-0.28's Mistral3ProcessingInfo counts the dummy by vision_config.image_size while the
                # image processor resizes it to its own longest_edge: the tower's input is not the item counted
                raise InputError(
                    "activation",
                    "multimodal encoder profiling",
                    f"vLLM {release} sizes Mistral3's dummy image by vision_config.image_size, and the checkpoint's "
                    f"image processor resizes it to longest_edge {shape.image_max_pixels} px: not bounded",
                )
            limits = dict(mm_limits or {})
            if tower.model_type == "kimi_k25_vision":
                if not tower.image_tokens:
                    raise InputError(
                        "activation",
                        "multimodal encoder profiling",
                        "Kimi-K2.5's dummy item is sized by the checkpoint's preprocessor_config.json "
                        "media_proc_cfg, not found beside the config: not bounded",
                    )
                limits = {"image": limits.get("vision_chunk", 999)}  # its one modality, counted as the image
            if tower.model_type in GLM4V_WRAPPERS.values():
                sized = _glm4v_sized(shape, tower, max_model_len, limits)
                limits["video"] = min(limits.get("video", 999), 1)  # Glm4vProcessingInfo supports one video
            if tower.minicpmv is not None:
                sized = minicpmv4_6_sized(tower, max_model_len=max_model_len, image_active=limits.get("image", 999) > 0)
            tower = sized
            batch = encoder_batch(
                tower,
                max_num_batched_tokens=max_num_batched_tokens,
                max_num_seqs=max_num_seqs,
                max_model_len=max_model_len,
                limit_mm_per_prompt=limits,
                image_max_pixels=shape.image_max_pixels,
                video_max_pixels=shape.video_max_pixels,
            )
            if batch is not None and tower.model_type == "kimi_k25_vision":
                batch = replace(batch, modality="vision_chunk")
            p = tower.minicpmv
            # before 0.32 no per-item flag reaches the tower for a video: it runs the config's mode
            video = p is not None and batch is not None and batch.modality == "video"
            if video and p and p.downsample_mode != p.config_mode and version_key(release)[:2] < (0, 32):
                raise InputError(
                    "activation",
                    "multimodal encoder profiling",
                    f"vLLM {release}'s MiniCPM-V 4.6 runs a video at the config's downsample_mode "
                    f"{p.config_mode} and counts it at the image processor's {p.downsample_mode}: not bounded",
                )
        if tower is None or max_model_len <= 0:
            what = f"the {shape.vision_model_type} tower's" if shape.vision_model_type else f"the {shape.multimodal}'s"
            if shape.vision_refusal:
                what += f" ({shape.vision_refusal})"
            raise InputError(
                "activation",
                "multimodal encoder profiling",
                f"the model has a {shape.multimodal}: vLLM profiles the encoder on a dummy batch of its largest "
                f"items before the decoder, and dryboot does not bound {what} forward (bounded: the Qwen2-VL, "
                "Qwen2.5-VL and Qwen3-VL vision towers, LLaVA's, PaliGemma's and Gemma-3's CLIP / SigLIP, "
                "Mistral3's Pixtral, Gemma-4's vision tower, GLM-4.1V's and others in docs/budget.md); "
                + (
                    "--skip-mm-profiling skips it (an encoder-decoder model: its decoder reads the encoder's "
                    "outputs, so the encoder is always built and served)"
                    if shape.encoder_decoder
                    else "--language-model-only, "
                    f"--limit-mm-per-prompt 0 for {', '.join(shape.modalities)}, or --skip-mm-profiling skip it"
                ),
            )
    t = max_num_batched_tokens
    fwd = forward_widest(shape, t, tp)
    drafted = ""
    if drafter is not None or drafter_pass:
        # the drafter's dummy_run follows the target's forward while the target's output hidden
        # states (T x hidden) are still held by _dummy_run
        held = t * shape.hidden_size * shape.dtype_bytes
        dfwd = forward_widest(drafter or shape, t, tp) + held
        drafted = f"; the drafter's pass with the target's {held / MIB:,.0f} MiB of hidden states held"
        fwd = max(fwd, dfwd)
    fwd_lo, fwd_hi = fwd * FORWARD_SLACK[0] // 100, fwd * FORWARD_SLACK[1] // 100
    rows = sampler_rows(max_num_seqs, t) if last_stage else 0
    logits = rows * padded_vocab(shape.vocab_size)
    if runner == "V2" and version_key(release)[:2] >= (0, 33):
        per_logit = V2_WARMUP_SAMPLER_BYTES_PER_LOGIT
        what = "V2 runner, 0.33's warm-up pass: float32 logits, log-softmax, top-k/top-p, min-p)"
    elif runner == "V2":
        per_logit = V2_SAMPLER_BYTES_PER_LOGIT
        what = "V2 runner: model-dtype logits, float32 copy where processed; Gumbel sampling in Triton)"
    elif speculative:
        per_logit = SPECULATIVE_SAMPLER_BYTES
        what = "the rejection sampler's 2 x rows of logits and probabilities beside the first logits)"
    else:
        per_logit = SAMPLER_BYTES_PER_LOGIT
        what = "model-dtype logits, float32 copy, softmax, exponential noise)"
    smp_lo, smp_hi = logits * per_logit[0], logits * per_logit[1]
    fwd_src = (
        f"_dummy_run({t}, is_profile=True): widest decoder layer x {FORWARD_SLACK[0]}-{FORWARD_SLACK[1]} % "
        f"({fwd / MIB:,.0f} MiB at factor 1){drafted}"
    )
    smp_src = (
        f"_dummy_sampler_run: {rows} rows x {padded_vocab(shape.vocab_size):,} logits x "
        f"{per_logit[0]}-{per_logit[1]} B ({what}"
    )
    terms: list[Term]
    if smp_lo >= fwd_hi:
        terms = [
            Term("activation: sampler", smp_lo, smp_hi, smp_src),
            Term("activation: forward", 0, 0, fwd_src + "; below the sampler"),
        ]
    elif fwd_lo >= smp_hi:
        terms = [
            Term("activation: forward", fwd_lo, fwd_hi, fwd_src),
            Term("activation: sampler", 0, 0, smp_src + "; below the forward"),
        ]
    else:
        lo, hi = max(fwd_lo, smp_lo), max(fwd_hi, smp_hi)
        terms = [Term("activation: max(forward, sampler)", lo, hi, fwd_src + "; " + smp_src)]
    if compiled and compile_cache != "warm":
        lo, hi = COLD_COMPILE_MIB
        terms.append(
            Term(
                "activation: cold torch.compile",
                lo * MIB if compile_cache == "cold" else 0,
                hi * MIB,
                "inductor compiles and autotunes inside the profile run on a cold compile cache: "
                f"+{lo / 1024:.2f}-{hi / 1024:.2f} GiB (the posted cold/warm boots of 0.27.1-0.30 lose +0.73, +0.87, "
                "+0.97, +0.99 and +1.05 GiB); 0 on a warm cache"
                + ("; the cache's state unknown: 0 up to the cold figure" if compile_cache == "unknown" else ""),
                estimate=(lo + hi) // 2 * MIB if compile_cache == "cold" else 0,
            )
        )
    if batch is not None and shape.vision_tower is not None and (first_stage or runner != "V2"):
        # the decoder's pass at its widest (the cold compile's temporaries included): the run's peak is
        # at least the tower's, so the encoder adds at least the tower's peak less this
        decoder_high = sum(t.high for t in terms)
        tower = sized_for_processor(shape.vision_tower, shape.image_max_pixels)
        if tower.model_type in GLM4V_WRAPPERS.values():
            tower = _glm4v_sized(shape, tower, max_model_len, mm_limits or {})
        if tower.minicpmv is not None:
            image_active = (mm_limits or {}).get("image", 999) > 0
            tower = minicpmv4_6_sized(tower, max_model_len=max_model_len, image_active=image_active)
        terms.append(
            encoder_term(
                tower,
                batch,
                tp=tp,
                data_parallel=encoder_data_parallel,
                dtype_bytes=shape.dtype_bytes,
                runner=runner,
                decoder_high=decoder_high,
                sizes=_sizes_said(shape),
                dense_mask=tower.model_type == "pixtral" and version_key(release)[:2] <= PIXTRAL_DENSE_MASK_UNTIL,
            )
        )
    return terms

"""Wrappers with timm towers, each built as vLLM composes it: the language model is sized (a
planned text architecture); a tower is sized where vLLM fixes its timm model (DeepSeek-VL2,
OpenVLA), else refused by name, naming the one module not sized. ``--language-model-only``, or
``--limit-mm-per-prompt`` 0 for every modality a tower takes, drops that tower (vLLM's
``_mark_tower_model``), and the rest is sized:

* DeepSeek-VL2 (``deepseek_vl2.py``, ``DeepseekVLV2ForCausalLM``): the DeepSeek-V2 / V3 language
  model of ``language_config``, then its image tower, sized (:func:`so400m_tower`): timm's
  ``vit_so400m_patch14_siglip_384`` whatever ``vision_config`` says (vLLM's
  ``_init_vision_module`` names it), its MLPs' ``fc1`` / ``fc2`` split over TP
  (``patch_vit_for_tp``), and the ``MlpProjector`` (:func:`projector`); the tile separators
  ``image_newline`` / ``view_seperator`` ``[n_embed]`` (plain parameters of the wrapper: kept
  without the tower, as DeepSeek-OCR's are; ``MlpProjectorConfig``'s ``n_embed`` default 2048).
* OpenVLA (``openvla.py``, ``OpenVLAForActionPrediction``): the language model of ``text_config``
  (Llama), then ``PrismaticVisionBackbone``, sized (:func:`_openvla_tower`): vLLM accepts only the
  DINOv2 + SigLIP 224 backbone, whose timm models (:func:`dinov2_large`, :func:`so400m_tower`)
  are replicated, and the ``PrismaticProjector``.
* Gemma-3n multimodal (``gemma3n_mm.py``, ``Gemma3nForConditionalGeneration``): the Gemma-3n
  language model of ``text_config``; the image tower is timm's MobileNet-V5
  (``vision_config``, ``AutoModel``: :func:`mobilenetv5_300m_enc`, replicated, the one timm model
  sized) with ``embed_vision``; the audio tower
  transformers' ``Gemma3nAudioEncoder`` (Conformer, ``audio_config``: :func:`gemma3n_audio_encoder`,
  replicated) with ``embed_audio`` (:func:`gemma3n_embedder`, split over TP), sized; each dropped
  alone by its modality's limit. The wrapper also allocates, with the language model whatever the
  towers, ``per_layer_embeddings`` ``[max_num_batched_tokens, num_hidden_layers,
  hidden_size_per_layer_input]`` in the model dtype (a plain attribute: counted in
  ``buffer_bytes`` as Qwen3-VL's deepstack buffers are).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from dryboot.errors import InputError
from dryboot.vllm.model_executor.model_loader import weights as W
from dryboot.vllm.model_executor.models.compose import Family, Tower, WalkArgs, vision_language
from dryboot.vllm.model_executor.models.towers import linear, tensors

DEEPSEEK_TEXT = ("DeepseekV2ForCausalLM", "DeepseekV3ForCausalLM")


def refused_tower(what: str, key: str) -> Tower:
    """A tower that refuses itself by name: ``what`` (the vLLM module not sized), the config's
    ``key`` for it.

    :raises InputError: always, when the tower is built."""

    def tower(config: Mapping[str, Any], text: Mapping[str, Any], tp: int, ab: int) -> W.RankWeights:
        raise InputError(
            "config.json",
            key,
            f"{what} is not sized (serve with --language-model-only, or the tower's modalities limited to 0)",
        )

    return tower


#: timm's ``vit_so400m_patch14_siglip_384``: width, MLP width, blocks, positions (27 x 27 patches
#: of 14 at 384), patch size
SO400M = {"width": 1152, "mlp": 4304, "blocks": 27, "positions": 729, "patch": 14}
#: ``MlpProjectorConfig``'s defaults
PROJECTOR_DEFAULTS: dict[str, Any] = {
    "projector_type": "downsample_mlp_gelu",
    "input_dim": 1152,
    "n_embed": 2048,
    "depth": 2,
    "mlp_ratio": 1,
    "downsample_ratio": 2,
}


def so400m_tower(tp: int, positions: int = SO400M["positions"]) -> list[int]:
    """timm's SigLIP so400m/14 as vLLM builds it (elements per rank): ``pos_embed``
    ``[positions, W]`` (729 at 384, 256 at 224), ``patch_embed.proj`` ``[W, 3, 14, 14]`` + bias; 27
    blocks of two LayerNorms,
    ``qkv`` ``[3 W, W]`` + bias, ``proj`` ``[W, W]`` + bias (replicated) and the MLP ``fc1``
    ``[M / TP, W]`` + bias, ``fc2`` ``[W, M / TP]`` + bias; the final LayerNorm; the MAP head
    (``latent`` ``[W]``, ``q`` ``[W, W]``, ``kv`` ``[2 W, W]``, ``proj`` with biases, a LayerNorm and an
    MLP split alike). ``num_classes=0``: no classifier.

    :raises InputError: TP does not divide the MLP width (4304)."""
    w, m_r = SO400M["width"], W._divide(SO400M["mlp"], tp, "the SigLIP so400m tower's MLP width (4304)")
    mlp = linear(m_r, w) + linear(w, m_r)
    block = [w, w, *linear(3 * w, w), *linear(w, w), w, w, *mlp]
    pool = [w, *linear(w, w), *linear(2 * w, w), *linear(w, w), w, w, *mlp]
    patch = linear(w, 3 * SO400M["patch"] ** 2)
    return [positions * w, *patch, *block * SO400M["blocks"], w, w, *pool]


def projector(p: Mapping[str, Any]) -> list[int]:
    """``MlpProjector`` over ``projector_config`` (:data:`PROJECTOR_DEFAULTS`), replicated:
    ``downsample_mlp_gelu``: ``[n_embed x mlp_ratio, input_dim x downsample_ratio^2]``, ``depth - 2``
    square ``[n_embed x mlp_ratio]`` layers, ``[n_embed, n_embed x mlp_ratio]``, with biases;
    ``linear``: ``[n_embed, input_dim]`` + bias.

    :raises InputError: another projector type, or token pooling (vLLM asserts it off)."""
    p = {**PROJECTOR_DEFAULTS, **{k: v for k, v in p.items() if v is not None}}
    if p.get("token_pooling"):
        raise InputError("config.json", "projector_config.token_pooling", "vLLM refuses it (not supported)")
    n, d = W._int(p, "n_embed"), W._int(p, "input_dim")
    if p["projector_type"] == "linear":
        return linear(n, d)
    if p["projector_type"] != "downsample_mlp_gelu":
        raise InputError("config.json", "projector_config.projector_type", f"{p['projector_type']} is not modelled")
    wide = n * W._int(p, "mlp_ratio")
    out = linear(wide, d * W._int(p, "downsample_ratio") ** 2)
    for _ in range(1, W._int(p, "depth") - 1):
        out += linear(wide, wide)
    return out + linear(n, wide)


def _dsvl2_tower(config: Mapping[str, Any], text: Mapping[str, Any], tp: int, ab: int) -> W.RankWeights:
    return tensors("vision", so400m_tower(tp) + projector(config.get("projector_config") or {}), ab)


def _deepseek_vl2(config: Mapping[str, Any], par: W.Parallel, args: WalkArgs) -> W.RankWeights:
    """The language model of ``language_config`` as the architecture it names (DeepSeek-V2 when
    none), the separators, the tower refused.

    :raises InputError: another language model (named), ``kv_lora_rank`` absent (its default
        differs by release), the tower when built."""
    text = config.get("language_config") or {}
    archs = text.get("architectures") if isinstance(text, Mapping) else None
    arch = str(archs[0]) if isinstance(archs, list) and archs else "DeepseekV2ForCausalLM"
    if arch not in DEEPSEEK_TEXT:
        raise InputError("config.json", "language_config.architectures", f"a {arch} language model is not modelled")
    if isinstance(text, Mapping) and "kv_lora_rank" not in text:
        # DeepseekVLV2TextConfig: null on 0.28.0, 512 from 0.29.0 (the MLA projections' width)
        raise InputError(
            "config.json",
            "language_config.kv_lora_rank",
            "absent, vLLM's releases read it differently (null on 0.28.0, 512 from 0.29.0): give it",
        )
    family = vision_language(
        arch, _dsvl2_tower, ("image",), text_of=lambda c: c.get("language_config"), tower_of=lambda c: c
    )
    weights = family.walk(config, par, args)
    n_embed = W._int({"n_embed": 2048, **(config.get("projector_config") or {})}, "n_embed")
    ab = W.model_dtype_bytes({**config, **text}, args.dtype)
    return tensors("vision", [n_embed, n_embed], ab, into=weights)


#: ``Gemma3nAudioConfig``'s defaults (transformers), for the keys the audio tower's sizes read
GEMMA3N_AUDIO_DEFAULTS: dict[str, Any] = {
    "hidden_size": 1536,
    "input_feat_size": 128,
    "sscp_conv_channel_size": [128, 32],
    "sscp_conv_kernel_size": [[3, 3], [3, 3]],
    "sscp_conv_stride_size": [[2, 2], [2, 2]],
    "conf_num_hidden_layers": 12,
    "conf_num_attention_heads": 8,
    "conf_conv_kernel_size": 5,
    "conf_attention_chunk_size": 12,
    "conf_attention_context_left": 13,
    "conf_attention_context_right": 0,
    "vocab_size": 128,
}


def gemma3n_audio_encoder(a: Mapping[str, Any], ab: int) -> tuple[list[int], list[int]]:
    """transformers' ``Gemma3nAudioEncoder`` (built whole by ``AutoModel``: replicated over TP),
    elements of its parameters and bytes of its buffers (``ab``: the model dtype's bytes, the
    default dtype it is built under). Hidden width H, A heads: the sub-sampler's two convolutions
    ``[C0, 1, kh, kw]`` / ``[C1, C0, kh, kw]`` with a norm ``[C]`` each, ``input_proj_linear`` ``[H,
    C1 x F]`` (F: ``input_feat_size`` through both convolutions, padded 1 each side of the
    frequency axis: ``(f + 2 - kw) // sw + 1``); per Conformer layer two feed-forwards (norm,
    ``[4 H, H]``, ``[H, 4 H]``, norm), attention (norm, ``per_dim_scale`` ``[H / A]``,
    ``pos_proj`` / q / k / v ``[H, H]``, ``post`` ``[H, H]``, norm), the light convolution (norm,
    ``linear_start`` ``[2 H, H]``, depthwise ``[H, 1, k]``, norm, ``linear_end`` ``[H, H]``) and a
    norm, no biases. Buffers per layer: five ``gradient_clipping`` scalars and ``q_scale`` (``ab``
    each), ``softcap`` (fp32), ``local_causal_valid_mask`` (bool ``[chunk, chunk + max(0, left -
    1) + right]``) and ``inv_timescales`` (fp32 ``[H / 2]``).

    :raises InputError: a width A does not divide, a key of the wrong type."""
    a = {**GEMMA3N_AUDIO_DEFAULTS, **{k: v for k, v in a.items() if v is not None}}
    h, heads = W._int(a, "hidden_size"), W._int(a, "conf_num_attention_heads")
    head_dim = W._divide(h, heads, "audio_config.hidden_size over conf_num_attention_heads")
    c0, c1 = (int(c) for c in a["sscp_conv_channel_size"])
    (k0h, k0w), (k1h, k1w) = ((int(x) for x in k) for k in a["sscp_conv_kernel_size"])
    s0w, s1w = (int(s[1]) for s in a["sscp_conv_stride_size"])
    f = W._int(a, "input_feat_size")
    f = (f + 2 - k0w) // s0w + 1
    f = (f + 2 - k1w) // s1w + 1
    sub = [c0 * k0h * k0w, c0, c1 * c0 * k1h * k1w, c1, h * c1 * f]
    ffw = [h, 4 * h * h, 4 * h * h, h]
    attn = [h, head_dim, *[h * h] * 4, h * h, h]
    lconv = [h, 2 * h * h, h * W._int(a, "conf_conv_kernel_size"), h, h * h]
    layer = [*ffw, *attn, *lconv, *ffw, h]
    chunk = W._int(a, "conf_attention_chunk_size")
    context = chunk + max(0, W._int(a, "conf_attention_context_left") - 1) + W._int(a, "conf_attention_context_right")
    layer_buffers = [ab] * 6 + [4, chunk * context, 4 * (h // 2)]
    n = W._int(a, "conf_num_hidden_layers")
    return sub + layer * n, layer_buffers * n


def gemma3n_embedder(m: Mapping[str, Any], text: Mapping[str, Any], tp: int, defaults: Mapping[str, Any]) -> list[int]:
    """vLLM's ``Gemma3nMultimodalEmbedder`` (``embed_audio`` / ``embed_vision``), elements per
    rank: ``embedding`` (``VocabParallelEmbedding`` ``[vocab_size]`` rows padded to 64 and split
    over TP, ``[rows / TP, M]``), ``hard_embedding_norm`` / ``soft_embedding_norm`` ``[M]``,
    ``embedding_projection`` (``RowParallelLinear`` ``[H_text, M / TP]``, no bias); the post-projection
    norm has no weight. M: the tower config's ``hidden_size``.

    :raises InputError: TP does not divide the padded vocabulary or M."""
    m = {**defaults, **{k: v for k, v in m.items() if v is not None}}
    w = W._int(m, "hidden_size")
    rows = W.padded_vocab_per_rank(W._int(m, "vocab_size"), tp, "the Gemma-3n embedder's padded vocabulary")
    w_r = W._divide(w, tp, "the Gemma-3n tower's hidden_size")
    return [rows * w, w, w, W._int(text, "hidden_size") * w_r]


#: ``Gemma3nVisionConfig``'s defaults (transformers): the timm model and the embedder's keys
GEMMA3N_VISION_DEFAULTS: dict[str, Any] = {
    "architecture": "mobilenetv5_300m_enc",
    "hidden_size": 2048,
    "vocab_size": 128,
}
#: timm's ``mobilenetv5_300m_enc`` block strings per stage (its ``_gen_mobilenet_v5``; repeats
#: written out as ``(string, times)``): ``er`` edge residual, ``uir`` universal inverted residual
#: (``a`` start / ``k`` middle depthwise kernels, 0 none), ``mqa`` multi-query attention (``h``
#: heads of ``d``, ``v2`` keys and values down-sampled); ``e`` expansion, ``c`` output channels
MNV5_300M: list[list[tuple[str, int]]] = [
    [("er_k3_e4_c128", 3)],
    [("uir_a3_k5_e6_c256", 1), *[("uir_a5_k0_e4_c256", 1), ("uir_a3_k0_e4_c256", 1)] * 2],
    [("uir_a5_k5_e6_c640", 1), ("uir_a5_k0_e4_c640", 7), ("uir_a0_k0_e1_c640", 1)]
    + [("mqa_k3_h12_v2_d64_c640", 1), ("uir_a0_k0_e2_c640", 1)] * 14,
    [("uir_a5_k5_e6_c1280", 1)] + [("mqa_k3_h16_v1_d96_c1280", 1), ("uir_a0_k0_e2_c1280", 1)] * 19,
]
#: the stem's channels, the multi-scale fusion adapter's expansion and output channels
MNV5_STEM, MNV5_MSFA_EXPANSION, MNV5_MSFA_OUT = 64, 2, 2048


def _mnv5_block(spec: str, cin: int) -> tuple[list[int], int]:
    """One MobileNet-V5 block's tensors (elements, no biases; RMS norms ``[C]``) and its output
    channels: ``er``: ``conv_exp`` ``[E, Cin, k, k]`` (E = Cin x e), norm, ``conv_pwl`` ``[C, E]``,
    norm; ``uir``: the start depthwise ``[Cin, 1, a, a]`` + norm (a > 0), ``pw_exp`` ``[E, Cin]`` +
    norm, the middle depthwise ``[E, 1, k, k]`` + norm (k > 0), ``pw_proj`` ``[C, E]`` + norm,
    ``layer_scale`` ``[C]``; ``mqa``: a norm, ``query`` ``[h d, Cin]``, key and value each (with
    ``v`` > 1 a depthwise ``[Cin, 1, k, k]`` and a norm) ``[d, Cin]``, ``output`` ``[C, h d]``,
    ``layer_scale`` ``[C]``."""
    kind, *fields = spec.split("_")
    f = {x[0]: int(x[1:]) for x in fields}
    c = f["c"]
    if kind == "er":
        e = cin * f["e"]
        return [e * cin * f["k"] ** 2, e, c * e, c], c
    if kind == "uir":
        e = cin * f["e"]
        start = [cin * f["a"] ** 2, cin] if f["a"] else []
        mid = [e * f["k"] ** 2, e] if f["k"] else []
        return [*start, e * cin, e, *mid, c * e, c, c], c
    hd = f["h"] * f["d"]
    down = [cin * f["k"] ** 2, cin] if f["v"] > 1 else []
    kv = [*down, f["d"] * cin]
    return [cin, hd * cin, *kv, *kv, c * hd, c], c


def mobilenetv5_300m_enc() -> list[int]:
    """timm's ``mobilenetv5_300m_enc`` (``TimmWrapperModel``, replicated), elements per tensor:
    the stem ``conv`` ``[64, 3, 3, 3]`` + bias and its norm, the blocks of :data:`MNV5_300M`
    (:func:`_mnv5_block`), the multi-scale fusion adapter over the last two stages' channels
    (``pw_exp`` ``[2 S, S]`` + norm, S = their sum, ``pw_proj`` ``[2048, 2 S]`` + norm) and its
    final norm ``[2048]``."""
    out = [MNV5_STEM * 3 * 9, MNV5_STEM, MNV5_STEM]
    cin, ends = MNV5_STEM, []
    for stage in MNV5_300M:
        for spec, times in stage:
            for _ in range(times):
                counts, cin = _mnv5_block(spec, cin)
                out += counts
        ends.append(cin)
    s = sum(ends[-2:])
    wide = MNV5_MSFA_EXPANSION * s
    return [*out, wide * s, wide, MNV5_MSFA_OUT * wide, MNV5_MSFA_OUT, MNV5_MSFA_OUT]


def _gemma3n_vision(config: Mapping[str, Any], text: Mapping[str, Any], tp: int, ab: int) -> W.RankWeights:
    """The image tower: timm's model named by ``vision_config.architecture`` (only
    ``mobilenetv5_300m_enc``, :func:`mobilenetv5_300m_enc`, without ``model_args``) and
    ``embed_vision`` (:func:`gemma3n_embedder`, its weightless norm's ones as for the audio tower).

    :raises InputError: another timm model, or ``model_args`` (not sized)."""
    vision = config.get("vision_config") or {}
    arch = vision.get("architecture") or GEMMA3N_VISION_DEFAULTS["architecture"]
    if arch != GEMMA3N_VISION_DEFAULTS["architecture"]:
        raise InputError(
            "config.json",
            "vision_config.architecture",
            f"vLLM's gemma3n_mm.py vision tower (timm's {arch}) is not sized: only mobilenetv5_300m_enc",
        )
    if vision.get("model_args"):
        raise InputError(
            "config.json",
            "vision_config.model_args",
            "vLLM's gemma3n_mm.py vision tower with timm model_args is not sized",
        )
    counts = mobilenetv5_300m_enc() + gemma3n_embedder(vision, text, tp, GEMMA3N_VISION_DEFAULTS)
    w = tensors("vision", counts, ab)
    w.allocated_bytes += -(-W._int(text, "hidden_size") * ab // W.ALLOC_ROUND) * W.ALLOC_ROUND
    return w


def _gemma3n_audio(config: Mapping[str, Any], text: Mapping[str, Any], tp: int, ab: int) -> W.RankWeights:
    """The audio tower (:func:`gemma3n_audio_encoder`) and ``embed_audio`` (:func:`gemma3n_embedder`);
    the embedder's weightless post-projection norm keeps its ones ``[H_text]`` (model dtype) as a
    tensor attribute: allocated, outside the parameter and buffer bytes."""
    audio = config.get("audio_config") or {}
    counts, buffers = gemma3n_audio_encoder(audio, ab)
    counts += gemma3n_embedder(audio, text, tp, GEMMA3N_AUDIO_DEFAULTS)
    w = tensors("audio", counts, ab, buffers=buffers)
    w.allocated_bytes += -(-W._int(text, "hidden_size") * ab // W.ALLOC_ROUND) * W.ALLOC_ROUND
    return w


_GEMMA3N = vision_language(
    "Gemma3nForCausalLM",
    (
        (
            ("image",),
            _gemma3n_vision,
        ),
        (
            ("audio",),
            _gemma3n_audio,
        ),
    ),
    text_of=lambda c: c.get("text_config"),
    tower_of=lambda c: c,
)


def _gemma3n(config: Mapping[str, Any], par: W.Parallel, args: WalkArgs) -> W.RankWeights:
    """:data:`_GEMMA3N` plus the wrapper's ``per_layer_embeddings`` (module docstring).

    :raises InputError: what :data:`_GEMMA3N` refuses, ``max_num_batched_tokens`` not given."""
    weights = _GEMMA3N.walk(config, par, args)
    if args.max_num_batched_tokens is None:
        raise InputError(
            "--max-num-batched-tokens",
            None,
            "the Gemma-3n wrapper allocates its per-layer embeddings (max_num_batched_tokens x layers x "
            "hidden_size_per_layer_input) with the weights: give max_num_batched_tokens",
        )
    text = {**{k: config[k] for k in ("torch_dtype",) if k in config}, **(config.get("text_config") or {})}
    per_token = W._int(text, "num_hidden_layers") * W._int(text, "hidden_size_per_layer_input")
    weights.add(
        "per-layer embeddings",
        args.max_num_batched_tokens * per_token * W.model_dtype_bytes(text, args.dtype),
        buffer=True,
    )
    return weights


#: ``openvla.py``'s one backbone: timm ids, image sizes, activation overrides (anything else: vLLM's
#: ``ValueError``)
OPENVLA_IDS = ["vit_large_patch14_reg4_dinov2.lvd142m", "vit_so400m_patch14_siglip_224"]
#: timm's DINOv2 ViT-L/14 with four registers at 224: width, MLP width, blocks, patches
DINOV2_L = {"width": 1024, "mlp": 4096, "blocks": 24, "positions": 256}


def dinov2_large() -> list[int]:
    """timm's ``vit_large_patch14_reg4_dinov2`` at 224, replicated (elements): ``cls_token`` ``[W]``,
    ``reg_token`` ``[4, W]``, ``pos_embed`` ``[256, W]``, ``patch_embed.proj`` ``[W, 3, 14, 14]`` +
    bias; 24 blocks of two LayerNorms, ``qkv`` + bias, ``proj`` + bias, the MLP ``[4096, W]`` /
    ``[W, 4096]`` with biases, LayerScale ``ls1`` / ``ls2`` ``[W]``; the final LayerNorm."""
    w, m = DINOV2_L["width"], DINOV2_L["mlp"]
    block = [w, w, *linear(3 * w, w), *linear(w, w), w, w, w, *linear(m, w), *linear(w, m), w]
    return [w, 4 * w, DINOV2_L["positions"] * w, *linear(w, 3 * 14 * 14), *block * DINOV2_L["blocks"], w, w]


def _openvla_tower(config: Mapping[str, Any], text: Mapping[str, Any], tp: int, ab: int) -> W.RankWeights:
    """``PrismaticVisionBackbone`` (DINOv2, and with ``use_fused_vision_backbone`` SigLIP so400m
    at 224: replicated, as timm builds them) and ``PrismaticProjector``: fused (vision width V =
    2176) ``fc1`` ``[4 V / TP, V]``, ``fc2`` ``[H, 4 V / TP]``, ``fc3`` ``[H, H]``; else (V = 1024)
    ``fc1`` ``[H / TP, V]``, ``fc2`` ``[H, H / TP]``; with biases.

    :raises InputError: another backbone, image size or activation (vLLM refuses it), widths TP
        does not divide."""
    for key, want in (
        ("timm_model_ids", OPENVLA_IDS),
        ("image_sizes", [224, 224]),
        ("timm_override_act_layers", [None, None]),
    ):
        if list(config.get(key) or []) != want:
            raise InputError("config.json", key, f"vLLM's openvla.py supports only {want} (it refuses the model)")
    fused = bool(config.get("use_fused_vision_backbone", True))
    h = W._int(text, "hidden_size")
    counts = dinov2_large()
    if fused:
        v = DINOV2_L["width"] + SO400M["width"]
        wide_r = W._divide(4 * v, tp, "the OpenVLA projector's width")
        counts += so400m_tower(1, DINOV2_L["positions"]) + linear(wide_r, v) + linear(h, wide_r) + linear(h, h)
    else:
        h_r = W._divide(h, tp, "the OpenVLA projector's width (text hidden_size)")
        counts += linear(h_r, DINOV2_L["width"]) + linear(h, h_r)
    return tensors("vision", counts, ab)


FAMILIES: dict[str, Family] = {
    "DeepseekVLV2ForCausalLM": Family(_deepseek_vl2, ("image",)),
    "OpenVLAForActionPrediction": vision_language(
        "LlamaForCausalLM", _openvla_tower, ("image",), text_of=lambda c: c.get("text_config"), tower_of=lambda c: c
    ),
    "Gemma3nForConditionalGeneration": Family(_gemma3n, ("image", "audio")),
}

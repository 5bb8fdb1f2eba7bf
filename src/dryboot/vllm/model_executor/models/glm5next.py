"""GLM-5.3-Flash's weights (``Glm5NextForCausalLM``, vLLM 0.32.0 / 0.33.0's ``vllm/models/glm5next/common``,
``model.py`` / ``kda.py`` / ``attention.py``, the same modules in both): the text model, unquantized, sized
from the config, and on 0.33.0 its wrapper ``Glm5NextForConditionalGeneration`` (:func:`wrapper_walk`: this
text model over ``text_config`` beside GLM-5.3's own vision tower, ``multimodal.py``, :func:`vision_tower`).
Per decoder layer (``layer_types``: ``linear_attention`` a KDA layer, any other an MLA one;
an unset list is transformers' default, every fourth layer MLA):

* two RMSNorms ``[H]``; with ``mhc`` the hyper-connection mixers, float32: ``hc_attn_fn`` / ``hc_ffn_fn``
  ``[(2 + n) n, n H]``, ``*_base`` ``[(2 + n) n]`` and ``*_scale`` ``[3]`` (``n`` = ``hc_mult``);
* a KDA layer (``Glm5NextLinearAttention``; ``m`` heads of ``d``, ``linear_num_heads`` /
  ``linear_head_dim``, kernel ``K``): ``in_proj_qkvbfg_a`` ``[3 m d / TP + m / TP + 2 d, H]`` (q, k, v
  and ``b`` split, ``f_a`` / ``g_a`` replicated), ``f_b_proj`` / ``g_b_proj`` ``[m d / TP, d]``, ``o_norm``
  ``[d]``, ``o_proj`` ``[H, m d / TP]``, and float32 ``q/k/v_conv1d`` ``[m d / TP, 1, K]``, ``dt_bias``
  ``[m d / TP]``, ``A_log`` ``[m / TP]``;
* an MLA layer (``Glm5NextMLAAttention``, q-LoRA, NoPE): :func:`~W.q_lora_mla_sizes`, the attention's scale
  buffers, and with ``index_topk`` the kpool indexer, replicated: ``index_kpool_compress_ape`` ``[kpool,
  index_head_dim]`` float32, ``index_kpool_compress_gate`` ``[index_head_dim, H]`` bfloat16 whatever the
  model dtype, ``wq_b`` ``[index_n_heads x index_head_dim, q_lora]``, ``wk_weights_proj`` ``[index_head_dim +
  index_n_heads, H]``, ``k_norm`` (float32 weight and bias ``[index_head_dim]``);
* the MLP of ``mlp_layer_types`` (default: the first three layers dense): dense ``[2 I / TP, H]`` +
  ``[H, I / TP]``; sparse the router ``[E, H]``, its float32 ``e_score_correction_bias`` ``[E]`` (``topk_method``
  ``noaux_tc``), the shared experts (``moe_intermediate_size x n_shared_experts``, split) and the routed
  experts (:meth:`~W._Walk.experts`).

The embedding on the first stage, the final norm and the untied head on the last; with ``index_topk``
the model's top-k indices buffer (``max_num_batched_tokens x round_up(index_topk + index_kpool - 1,
128)`` int32, allocated with the weights, not a buffer) on a stage that holds an MLA layer (its
indexers keep it; a KDA-only stage frees it). Recorded on the tiny config, the config class's
defaults and the KV tests' stand-ins (``data/glm5next/configs/``) against vLLM 0.32.0 and 0.33.0's
engine start (``data/weights/recorded-<release>-glm5next*.json``).

Refused by name: a quantized checkpoint, other releases (0.30.0 / 0.31.0 build another model; not
recorded), ``mhc`` unset (vLLM reads the attribute), q-LoRA unset, the fused shared experts (ROCm gfx950
only), sequence parallelism (expert parallelism with TP and DP above 1); the wrapper on releases before
0.33.0 (their registries lack it) and under ``--mm-encoder-tp-mode data`` (its tower whole on every rank: not
sized). The wrapper is recorded in the ``0.33.0-mm`` boot environment: the tiny wrapper, the config classes'
defaults and a stand-in (``data/weights/recorded-0.33.0-glm5next-mm*.json``).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from dryboot.errors import InputError
from dryboot.vllm.model_executor.model_loader import weights as W
from dryboot.vllm.model_executor.models.compose import Family, WalkArgs, towers_on_stage, unquantized, vision_language
from dryboot.vllm.model_executor.models.towers import linear, tensors

ARCH = "Glm5NextForCausalLM"
#: the releases whose ``vllm/models/glm5next/common`` builds the layers as sized here (recorded)
RELEASES = ("0.32.0", "0.33.0")
#: transformers' ``Glm5NextTextConfig`` defaults of the keys the walk reads
DEFAULTS: dict[str, Any] = {
    "vocab_size": 154880,
    "hidden_size": 4096,
    "intermediate_size": 12288,
    "moe_intermediate_size": 2048,
    "num_hidden_layers": 45,
    "num_attention_heads": 64,
    "n_shared_experts": 1,
    "n_routed_experts": 288,
    "kv_lora_rank": 512,
    "q_lora_rank": 1536,
    "qk_rope_head_dim": 0,
    "v_head_dim": 256,
    "qk_nope_head_dim": 256,
    "index_topk": 2048,
    "index_head_dim": 128,
    "index_n_heads": 32,
    "linear_head_dim": 128,
    "linear_num_heads": 64,
    "linear_conv_kernel_dim": 4,
    "hc_mult": 4,
    "index_kpool": 16,
    "tie_word_embeddings": False,
}
_WHY = (
    "vLLM {}'s vllm.models.glm5next is sized on 0.32.0 / 0.33.0 only (recorded); its KV cache is planned on "
    "0.30.0-0.33.0"
)
WRAPPER = "Glm5NextForConditionalGeneration"
#: the releases whose registry lists the wrapper (``glm5next/common/model.py``, its tower in ``multimodal.py``)
WRAPPER_RELEASES = ("0.33.0",)
#: transformers' ``Glm5NextVisionConfig`` defaults of the keys the tower reads (a config without
#: ``vision_config`` gets them all: ``Glm5NextConfig.__post_init__``)
VISION_DEFAULTS: dict[str, Any] = {
    "depth": 24,
    "hidden_size": 1024,
    "num_heads": 16,
    "in_channels": 3,
    "patch_size": 14,
    "spatial_merge_size": 2,
    "temporal_patch_size": 2,
    "out_hidden_size": 1536,
    "intermediate_size": 4096,
    "projection_intermediate_size": 10240,
}


def _layer_types(c: Mapping[str, Any], n: int) -> list[bool]:
    """Whether each layer is a KDA one (``_is_kda_layer``: a ``linear_attention`` entry; transformers'
    ``Glm5NextTextConfig`` fills an unset list with every fourth layer indexed, the others KDA)."""
    types = c.get("layer_types")
    if types is None:
        return [i % 4 != 3 for i in range(n)]
    if not isinstance(types, list):
        raise InputError("config.json", "layer_types", "a list")
    return [i < len(types) and types[i] == "linear_attention" for i in range(n)]


def _mlp_types(c: Mapping[str, Any], n: int) -> list[bool]:
    """Whether each layer's MLP is sparse (``mlp_layer_types``; default the first three dense)."""
    types = c.get("mlp_layer_types")
    if types is None:
        types = ["dense"] * min(3, n) + ["sparse"] * max(n - 3, 0)
    if not isinstance(types, list) or len(types) < n or not set(types[:n]) <= {"dense", "sparse"}:
        raise InputError("config.json", "mlp_layer_types", f"one of dense / sparse per layer ({n})")
    return [t == "sparse" for t in types[:n]]


def _kda(w: W._Walk, c: Mapping[str, Any], h: int, tp: int, ab: int) -> None:
    m, d, k = (W._int(c, key) for key in ("linear_num_heads", "linear_head_dim", "linear_conv_kernel_dim"))
    m_r = W._divide(m, tp, "linear_num_heads")
    md_r = m_r * d
    # in_proj_qkvbfg_a, f_b_proj, g_b_proj, o_norm, o_proj
    for size in ((3 * md_r + m_r + 2 * d) * h, md_r * d, md_r * d, d, h * md_r):
        w.own("linear attention", size * ab)
    for size in (3 * md_r * k, md_r, m_r):  # q/k/v_conv1d, dt_bias, A_log: float32
        w.own("linear attention", size * 4)


def _mla(w: W._Walk, c: Mapping[str, Any], h: int, tp: int, ab: int) -> None:
    heads_r = W._divide(W._int(c, "num_attention_heads"), tp, "num_attention_heads")
    nope, rope, v = (W._int(c, key) for key in ("qk_nope_head_dim", "qk_rope_head_dim", "v_head_dim"))
    q_lora, kv_lora = W._int(c, "q_lora_rank"), W._int(c, "kv_lora_rank")
    for size in W.q_lora_mla_sizes(h, heads_r, nope, rope, v, q_lora, kv_lora):
        w.own("attention", size * ab)
    w.attention_layer((), ab)  # the MLA layer's scale buffers
    if c.get("index_topk") is None:
        return
    ih, ihd, kpool = W._int(c, "index_n_heads"), W._int(c, "index_head_dim"), W._int(c, "index_kpool")
    w.own("indexer", kpool * ihd * 4)  # index_kpool_compress_ape: float32
    w.own("indexer", ihd * h * 2)  # index_kpool_compress_gate: bfloat16
    w.own("indexer", ih * ihd * q_lora * ab)  # wq_b
    w.own("indexer", (ihd + ih) * h * ab)  # wk_weights_proj
    w.own("indexer", 2 * ihd * 4)  # k_norm: float32 weight and bias


def _mlp(w: W._Walk, c: Mapping[str, Any], par: W.Parallel, sparse: bool, h: int, ab: int) -> None:
    if not sparse or c.get("n_routed_experts") is None:
        i_r = W._divide(W._int(c, "intermediate_size"), par.tp, "intermediate_size")
        w.own("mlp", 3 * i_r * h * ab)
        return
    e, i = W._int(c, "n_routed_experts"), W._int(c, "moe_intermediate_size")
    w.own("router", e * h * ab)
    if c.get("topk_method") == "noaux_tc":
        w.own("router", e * 4)  # e_score_correction_bias: float32
    if c.get("n_shared_experts") is not None:
        s_r = W._divide(i * W._int(c, "n_shared_experts"), par.tp, "the shared experts' width")
        w.own("mlp", 3 * s_r * h * ab)
    w.experts(e, h, i, par, ab, "moe_intermediate_size")


def walk(config: Mapping[str, Any], par: W.Parallel, args: WalkArgs) -> W.RankWeights:
    """One rank of one stage (module docstring).

    :raises InputError: what the module docstring names, sizes TP does not divide, no
        ``max_num_batched_tokens`` (the top-k buffer)."""
    if par.vllm_version not in RELEASES:
        raise InputError("--vllm", None, _WHY.format(par.vllm_version))
    c, ab = unquantized(config, args, DEFAULTS, untied="GLM-5.3-Flash")
    if "mhc" not in c:
        raise InputError("config.json", "mhc", "GLM-5.3-Flash's decoder layers read config.mhc (not set): not modelled")
    if c.get("q_lora_rank") is None:
        raise InputError("config.json", "q_lora_rank", "GLM-5.3-Flash's MLA without q-LoRA is not modelled")
    if par.expert_parallel and par.tp > 1 and par.dp > 1:
        raise InputError(
            "--enable-expert-parallel",
            None,
            "GLM-5.3-Flash under sequence parallelism (expert parallelism with TP and DP above 1) is not modelled",
        )
    n = W._int(c, "num_hidden_layers")
    kda, sparse = _layer_types(c, n), _mlp_types(c, n)
    h = W._int(c, "hidden_size")
    hc = W._int(c, "hc_mult") if c.get("mhc") else 0
    vocab_r = W.padded_vocab_per_rank(W._int(c, "vocab_size"), par.tp)
    w = W._Walk(None, par.vllm_version)
    layers = list(W.pp_layers(n, par))
    if c.get("index_topk") is not None and not all(kda[li] for li in layers):
        # held by the stage's MLA layers' indexers: a stage of KDA layers alone frees it
        if args.max_num_batched_tokens is None:
            raise InputError(
                "--max-num-batched-tokens", None, "GLM-5.3-Flash's top-k indices buffer has one row per batched token"
            )
        width = -(-(W._int(c, "index_topk") + W._int(c, "index_kpool") - 1) // 128) * 128
        topk = args.max_num_batched_tokens * width * 4
        w.ref.allocated_bytes += -(-topk // W.ALLOC_ROUND) * W.ALLOC_ROUND
    w.ends(par, vocab_r, h, ab)
    for li in layers:
        w.own("norm", h * ab)
        w.own("norm", h * ab)
        for _ in range(2 if hc else 0):  # hc_attn_*, hc_ffn_*: fn, base, scale (float32)
            mix = (2 + hc) * hc
            for size in (mix * hc * h, mix, 3):
                w.own("hyper-connections", size * 4)
        if kda[li]:
            _kda(w, c, h, par.tp, ab)
        else:
            _mla(w, c, h, par.tp, ab)
        _mlp(w, c, par, sparse[li], h, ab)
    return w.result()


def vision_tower(v: Mapping[str, Any], text: Mapping[str, Any], tp: int, ab: int) -> W.RankWeights:
    """``Glm5NextVisionTransformer`` on one rank, in the model dtype, sharded by TP (``D`` the tower's
    ``hidden_size``, ``O`` its ``out_hidden_size``, ``m`` ``spatial_merge_size``):

    * the Conv3d patch embedding ``[D, C, T, P, P]`` + bias (no position embedding);
    * per block two RMSNorms ``[D]``, RMS ``q_norm`` / ``k_norm`` ``[D / heads]``, ``attn.qkv``
      ``[3 D / TP, D]`` + bias, ``attn.proj`` ``[D, D / TP]`` + bias, a gated MLP of the tower's
      ``intermediate_size`` with biases;
    * ``post_layernorm`` ``[D]``, the Conv2d ``downsample`` ``[O, D, m, m]`` + bias, the merger
      (``proj`` ``[O / TP, O]``, a LayerNorm ``[O]`` with bias, a gated MLP of
      ``projection_intermediate_size`` without biases);
    * the rotary table ``[max_position_embeddings, D / heads / 2]`` (the *text* config's length:
      1,048,576 by default).

    :raises InputError: heads or widths TP does not divide."""
    v = {**VISION_DEFAULTS, **v}
    d, heads, o = W._int(v, "hidden_size"), W._int(v, "num_heads"), W._int(v, "out_hidden_size")
    W._divide(heads, tp, "the vision tower's num_heads")
    hd = d // heads
    d_r, o_r = W._divide(d, tp, "the vision tower's width"), W._divide(o, tp, "out_hidden_size")
    i_r = W._divide(W._int(v, "intermediate_size"), tp, "the vision intermediate_size")
    pi_r = W._divide(W._int(v, "projection_intermediate_size"), tp, "projection_intermediate_size")
    p, t, c, m = (W._int(v, k) for k in ("patch_size", "temporal_patch_size", "in_channels", "spatial_merge_size"))
    block = [d, d, hd, hd, *linear(3 * d_r, d), *linear(d, d_r), *linear(2 * i_r, d), *linear(d, i_r)]
    counts = [*linear(d, c * t * p * p), *block * W._int(v, "depth"), d, *linear(o, d * m * m)]
    counts += [o_r * o, o, o, 2 * pi_r * o, o * pi_r]
    positions = W._int({**DEFAULTS, "max_position_embeddings": 1048576, **text}, "max_position_embeddings")
    return tensors("vision", counts, ab, buffers=[positions * (hd // 2) * ab])


def _strict_limit(c: Mapping[str, Any], where: str) -> None:
    """:raises InputError: ``swiglu_limit`` given as null (transformers' strict config classes type it
    ``float``: vLLM's config parsing fails, recorded for the vision config)."""
    if "swiglu_limit" in c and c["swiglu_limit"] is None:
        raise InputError(
            "config.json",
            where,
            "StrictDataclassFieldValidationError: Validation error for field 'swiglu_limit': TypeError: Field "
            "'swiglu_limit' expected float, got NoneType (value: None)",
        )


def _vision_config(config: Mapping[str, Any]) -> Mapping[str, Any]:
    """The wrapper's ``vision_config`` (transformers' defaults where it has none or null).

    :raises InputError: one that is not an object."""
    vision = config.get("vision_config")
    if vision is not None and not isinstance(vision, Mapping):
        raise InputError("config.json", "vision_config", f"{WRAPPER}'s vision_config must be an object")
    return vision if isinstance(vision, Mapping) else {}


_WRAPPED = vision_language(Family(walk), vision_tower, tower_of=_vision_config)


def wrapper_walk(config: Mapping[str, Any], par: W.Parallel, args: WalkArgs) -> W.RankWeights:
    """``Glm5NextForConditionalGeneration`` (vLLM 0.33.0) on one rank of one stage: :func:`walk` over
    ``text_config`` and, on the first stage (0.33's runner), :func:`vision_tower` with the device-side image
    normalization (``build_mm_input_norm``: float32 weight and bias ``[channels]`` where the checkpoint's
    processor config normalizes, :class:`~W.WalkArgs` ``image_norm_channels``); ``--language-model-only``
    (or every modality limited to 0) drops the tower.

    :raises InputError: another release (its registry lacks the wrapper), what :func:`walk` and
        :func:`vision_tower` refuse, a ``text_config`` that is not an object, a null ``swiglu_limit``
        (transformers' strict config classes refuse it, :func:`_strict_limit`)."""
    if par.vllm_version not in WRAPPER_RELEASES:
        raise InputError("--vllm", None, f"vLLM {par.vllm_version}'s registry has no {WRAPPER}: sized on 0.33.0")
    text = config.get("text_config", {})
    if not isinstance(text, Mapping):
        raise InputError("config.json", "text_config", f"{WRAPPER}'s text_config must be an object")
    _strict_limit(text, "text_config.swiglu_limit")
    _strict_limit(_vision_config(config), "vision_config.swiglu_limit")  # parsed with or without the tower
    w = _WRAPPED.walk({**config, "text_config": text}, par, args)
    if not args.no_tower and towers_on_stage(WRAPPER, par) and args.image_norm_channels:
        for _ in range(2):
            w.add("input norm", args.image_norm_channels * 4, buffer=True)
        w.notes.append(f"{WRAPPER}'s tower: the device-side image normalization assumes --mm-device-do-normalize on")
    return w


FAMILIES: dict[str, Family] = {ARCH: Family(walk), WRAPPER: Family(wrapper_walk, ("image", "video"))}

"""DeepSeek-V4 (``vllm/models/deepseek_v4/``, ``DeepseekV4ForCausalLM``) as vLLM 0.27.1-0.33.0
hold it after loading on a CUDA GPU of SM 8.x, under its published quantization (``quant_method: fp8``,
``weight_block_size`` 128x128, ``scale_fmt: ue8m0``, ``expert_dtype: fp4``: vLLM's
``deepseek_v4_fp8``, ``quant_config.py`` ``DeepseekV4FP8Config``). Read against vLLM's own build
on the meta device (``RECORD_SET=dsv4 record_quant_weights.py``).

One rank (``nvidia/model.py``; TP ``t``, hidden ``H``, ``m = hc_mult``, ``mix = (2 + m) m``):

* the model: the embedding and the untied LM head (padded vocabulary / ``t`` rows), the final
  norm ``[H]``; the hyper-connection head ``hc_head_fn`` ``[m, m H]``, ``hc_head_base`` ``[m]``,
  ``hc_head_scale`` ``[1]`` (float32); one int32 top-k buffer ``[max_num_batched_tokens,
  index_topk]`` every attention layer and indexer shares (one allocation);
* per layer: ``attn_norm`` / ``ffn_norm`` ``[H]``; the hyper-connection mixers ``hc_attn_fn`` /
  ``hc_ffn_fn`` ``[mix, m H]``, ``hc_*_base`` ``[mix]``, ``hc_*_scale`` ``[3]`` (float32); the
  first layer also ``hc_attn_fn_broadcast`` ``[mix, H]`` float32, made while loading
  (``finalize_mhc_broadcast_weights``);
* attention (``attention.py`` ``DeepseekV4Attention``): ``attn_sink`` float32 over the heads
  FlashMLA pads the rank's to (64, or 128 above 64); ``fused_wqa_wkv`` replicated
  ``[q_lora_rank + head_dim, H]``, ``wq_b`` column ``[heads x head_dim / t, q_lora_rank]``,
  ``wo_a`` column ``[o_groups x o_lora_rank / t, heads x head_dim / o_groups]``, ``wo_b`` row
  ``[H, o_groups x o_lora_rank / t]`` (fp8 blocks); ``q_norm`` / ``kv_norm``;
* a layer of compress ratio ``r`` 4 or 128: its compressor (``compressor.py``
  ``DeepseekCompressor``, replicated, unquantized; ``c = 2`` at ratio 4, else 1): ``ape``
  ``[r, c x head_dim]`` float32, ``fused_wkv_wgate`` ``[2 c x head_dim, H]``, ``norm``; at ratio 4
  also the indexer (replicated): ``wq_b`` ``[index_n_heads x index_head_dim, q_lora_rank]`` (fp8
  blocks), ``weights_proj`` ``[index_n_heads, H]`` (unquantized) and a ratio-4 compressor of
  ``index_head_dim``;
* the MoE (``DeepseekV4MoE``): the gate ``[E, H]`` (unquantized); on the first
  ``num_hash_layers`` layers the int32 hash table ``tid2eid`` ``[vocab, top_k]``, on the others
  (``noaux_tc``) ``e_score_correction_bias`` ``[E]`` float32 (the experts hold the same tensors);
  the shared experts' ``gate_up_proj`` / ``down_proj`` (fp8 blocks) over an intermediate padded to
  whole 128-blocks per rank (``cdiv(I_s / 128, t) x 128`` each); the routed experts through
  gpt-oss's ``Mxfp4MoEMethod`` on Marlin (:func:`mxfp4_experts_bytes`, no biases);
* one rotary table ``[positions, qk_rope_head_dim]`` per rope kind in use (:func:`rope_table`)
  (``common/rope.py``): the sliding layers' plain one of ``max_position_embeddings`` positions,
  the compressed layers' (``compress_rope_theta``) of ``original_max_position_embeddings x
  factor`` under YaRN, else ``max_position_embeddings`` (0.27.1-0.29.0 differ: :func:`rope_table`).

0.30.0, 0.31.0 and 0.32.0 hold what 0.33.0 holds (the same rotary tables, no scratch pool, the
broadcast mixer made in ``process_weights_after_loading``): recorded the same, byte for byte.
0.27.1 holds what 0.28.0 holds. 0.29.0 holds 0.28.0's rotary tables but no scratch pool, and
makes the broadcast mixer in ``process_weights_after_loading`` as 0.33.0 does.

vLLM 0.27.1 and 0.28.0 also hold one eager scratch pool (:func:`eager_scratch_bytes`).

fp8 block layers (:func:`weights.linear_bytes`): fp8 weight ``[N, K]`` and ``weight_scale_inv``
``[ceil(N / 128), ceil(K / 128)]`` in e8m0, one byte each (``is_scale_e8m0``: the ``expert_dtype:
fp4`` checkpoints), kept as loaded on SM 8.x. The KV cache tensors the attention, compressor and indexer layers register
are empty until the cache is allocated. The MTP layers are the drafter's, not built here.

vLLM 0.27.1 and 0.28.0 make the first layer's broadcast mixer in ``load_weights``, which the meta-device
build does not run: its recorded figures lack it, dryboot's hold it.

Unquantized (no ``quantization_config``): every linear layer in the model dtype, the shared
experts unpadded (``I_s / t``), the experts ``UnquantizedFusedMoEMethod``'s ``w13`` / ``w2``
(:func:`weights.experts_bytes`).

The wrapper (``DeepseekV4ForConditionalGeneration``, ``common/vl_model.py``, 0.30.0+; a
``DeepseekV4ForCausalLM`` config with ``vision_n_layers`` is served as it there): the text model
with the vision variant's routing tensors (``bias_vl`` ``[E]`` float32 on every MoE layer, and
``e_score_correction_bias`` on the hash layers too) plus :func:`vision_counts` and the image
vectors (:func:`vl_walk`); before 0.30.0 a config with a tower is refused by name.

Refused by name: other releases, other GPUs (SM 9.0: DeepGEMM's scale layout, which the CPU
oracle cannot build; SM 10.x: other MoE backends; SM 12.x: FlashInfer attention), other
quantizations (``expert_dtype: fp8``, NVFP4 experts, compressed-tensors), pipeline
and expert parallelism, a checkpoint's headers (the figure is the config's).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from dryboot.errors import InputError
from dryboot.vllm.model_executor.layers.quantization.mxfp4 import mxfp4_experts_bytes
from dryboot.vllm.model_executor.model_loader import weights as W
from dryboot.vllm.model_executor.models.compose import Family, WalkArgs, config_only
from dryboot.vllm.models.deepseek_v4 import WRAPPER_RELEASES

#: the releases whose DeepSeek-V4 build after loading is recorded (``quant-recorded-dsv4-*``)
CHECKED_RELEASES = ("0.27.1", "0.28.0", "0.29.0", "0.30.0", "0.31.0", "0.32.0", "0.33.0")
#: releases whose rotary tables are float32 whatever the rope (0.27.1-0.29.0's plain ones are in the
#: model dtype; from 0.30.0 ``common/rope.py`` builds the rope per layer kind)
FLOAT32_ROPE = frozenset({"0.30.0", "0.31.0", "0.32.0", "0.33.0"})
#: releases with the model-wide eager scratch pool (0.27.1 and 0.28.0's ``eager_scratch.py``; gone in 0.29.0)
EAGER_SCRATCH = frozenset({"0.27.1", "0.28.0"})
#: the scratch pool's alignment of each packed view (``DeepseekV4EagerScratchPool._ALIGNMENT``)
SCRATCH_ALIGN = 256
#: fp8 block of the published checkpoints (``weight_block_size``)
BLOCK = (128, 128)
#: FlashMLA's query head padding (``nvidia/flashmla.py`` ``get_padded_num_q_heads``)
FLASHMLA_HEADS = (64, 128)

ARCH = "DeepseekV4ForCausalLM"
#: releases with the vision variant (``common/vl_model.py``, ``bias_vl``): its routing tensors and
#: tower built alike on each (recorded on 0.33.0)
VISION_RELEASES = tuple(sorted(WRAPPER_RELEASES))


def _refuse(field: str, value: str | None, why: str) -> InputError:
    return InputError(field, value, f"{ARCH}: {why}")


def check_quantization(config: Mapping[str, Any], hf_quant: Mapping[str, Any] | None) -> None:
    """The published layout only: ``quant_method: fp8`` in 128x128 blocks with ``ue8m0`` scales
    and ``expert_dtype`` ``fp4`` (vLLM's default when absent).

    :raises InputError: anything else (named)."""
    qc = config.get("quantization_config", hf_quant)
    if qc is None:
        return  # unquantized: every linear layer and the experts in the model dtype
    if not isinstance(qc, Mapping):
        raise _refuse("quantization_config", None, "not an object")
    method = str(qc.get("quant_method")).lower()
    if method != "fp8" or qc.get("quant_algo") or qc.get("moe_quant_algo"):
        raise _refuse(
            "quantization_config",
            "quant_method",
            f"{method} ({qc.get('quant_algo') or qc.get('moe_quant_algo') or 'no algorithm'}) is not modelled: "
            "only the published fp8 blocks with MXFP4 experts are",
        )
    if qc.get("weight_block_size") != list(BLOCK):
        raise _refuse("quantization_config", "weight_block_size", "only the published 128x128 fp8 blocks are modelled")
    expert = config.get("expert_dtype", "fp4")
    if expert != "fp4":
        raise _refuse(
            "config.json",
            "expert_dtype",
            f"{expert!r} experts (Fp8MoEMethod after loading, float32 linear scales) are not modelled: fp4 is",
        )


def check_rank(par: W.Parallel) -> None:
    """:raises InputError: a release, GPU or parallelism whose build is not checked (named)."""
    if par.vllm_version not in CHECKED_RELEASES:
        raise _refuse(
            "--vllm-version",
            par.vllm_version,
            f"weights are checked on vLLM {', '.join(CHECKED_RELEASES)} only",
        )
    if par.capability is None:
        raise _refuse("--gpu", None, "its layout after loading is checked per GPU (SM 8.x): name the GPU (--gpu)")
    major = par.capability[0]
    if major != 8:
        why = {
            9: "SM 9.0's fp8 block layers take DeepGEMM's scale layout (transform_sf_into_required_layout), which "
            "the CPU oracle cannot build: not modelled",
            10: "SM 10.x serves the MXFP4 experts through FlashInfer TRT-LLM or DeepGEMM, whose layouts are not "
            "modelled",
            12: "SM 12.x builds FlashInfer's SM120 attention layers (their fp8 scale buffers) and its own expert "
            "kernels: the layout after loading is not modelled (the KV cache is)",
        }.get(major, f"SM {major}.x is not modelled (SM 8.x is)")
        raise _refuse("--gpu", None, why)
    if par.pp > 1:
        raise _refuse("--pipeline-parallel-size", None, "pipeline stages are not modelled")
    if par.expert_parallel or par.dp > 1:
        raise _refuse(
            "--enable-expert-parallel" if par.expert_parallel else "--data-parallel-size",
            None,
            "expert and data parallelism (sequence-parallel shared experts, expert maps) are not modelled",
        )


def padded_q_heads(heads: int) -> int:
    """FlashMLA's padded query heads for ``heads`` on the rank.

    :raises InputError: above 128 (vLLM refuses: its FP8 decode kernel takes 64 or 128)."""
    for padded in FLASHMLA_HEADS:
        if heads <= padded:
            return padded
    raise _refuse("--tensor-parallel-size", None, f"{heads} heads per rank: FlashMLA takes 128 at most (vLLM refuses)")


def compressor_bytes(ratio: int, head_dim: int, h: int, ab: int) -> list[tuple[str, int]]:
    """``DeepseekCompressor`` of ``ratio`` over ``head_dim``: ``ape``, ``fused_wkv_wgate``, ``norm``."""
    coff = 2 if ratio == 4 else 1
    return [
        ("compressor", 4 * ratio * coff * head_dim),
        ("compressor", 2 * coff * head_dim * h * ab),
        ("norm", head_dim * ab),
    ]


def shared_intermediate(inter: int, tp: int) -> int:
    """The shared experts' intermediate per rank: whole 128-blocks, rounded up per rank
    (``DeepseekV4MLP``)."""
    return -(-(inter // BLOCK[0]) // tp) * BLOCK[0]


def compress_ratios(config: Mapping[str, Any], n_layers: int) -> list[int]:
    """Each layer's compress ratio (``max(1, compress_ratios[i])``: 1, 4 or 128).

    :raises InputError: a list shorter than the layers or another ratio (vLLM's compressor asserts)."""
    raw = config.get("compress_ratios")
    if not isinstance(raw, list) or len(raw) < n_layers or not all(type(r) is int for r in raw[:n_layers]):
        raise _refuse("config.json", "compress_ratios", f"needs an integer per layer ({n_layers})")
    ratios = [max(1, r) for r in raw[:n_layers]]
    if not set(ratios) <= {1, 4, 128}:
        raise _refuse("config.json", "compress_ratios", "vLLM's compressor builds ratios 4 and 128 only")
    return ratios


def rope_table(config: Mapping[str, Any], compressed: bool, version: str, ab: int) -> tuple[int, int]:
    """(positions, bytes per element) of one layer kind's rotary table (``common/rope.py``).

    0.30.0-0.33.0: ``DeepseekScalingRotaryEmbedding`` for both kinds, float32: the uncompressed layers'
    at factor 1 (``max_position_embeddings``), the compressed layers' YaRN over
    ``original_max_position_embeddings x factor`` (``max_position_embeddings`` without YaRN).
    0.27.1-0.29.0: YaRN (float32, ``original_max_position_embeddings x factor``) on both kinds, or
    without it the plain table in the model dtype.

    :raises InputError: a rope kind not modelled."""
    max_pos = W._int(config, "max_position_embeddings")
    rs = config.get("rope_scaling") or config.get("rope_parameters") or {}
    kind = rs.get("rope_type", rs.get("type", "default")) if isinstance(rs, Mapping) else "default"
    if isinstance(rs, Mapping) and isinstance(rs.get("main"), Mapping):
        raise _refuse("config.json", "rope_parameters", "per-kind rope parameters are not modelled")
    if kind != "default" and (
        kind != "yarn" or rs.get("attention_factor") == 1.0 or rs.get("apply_yarn_scaling") is False
    ):
        raise _refuse("config.json", "rope_scaling", f"rope {kind!r} is not modelled (YaRN is)")
    yarn = kind == "yarn" and (compressed or version not in FLOAT32_ROPE)
    if yarn:
        return W._int(rs, "original_max_position_embeddings") * W._int(rs, "factor"), 4
    return max_pos, 4 if version in FLOAT32_ROPE else ab


def _packed(sizes: tuple[int, ...]) -> int:
    """Bytes of views of ``sizes`` bytes packed at :data:`SCRATCH_ALIGN` (``_packed_size``)."""
    offset = 0
    for n in sizes:
        offset = -(-offset // SCRATCH_ALIGN) * SCRATCH_ALIGN + n
    return -(-offset // SCRATCH_ALIGN) * SCRATCH_ALIGN


def eager_scratch_bytes(
    tokens: int, padded_heads: int, head_dim: int, ix_heads: int, ix_hd: int, topk: int
) -> list[int]:
    """vLLM 0.27.1 and 0.28.0's ``DeepseekV4EagerScratchPool`` (one per model, ``tokens`` =
    ``max_num_batched_tokens``): the bf16 query ``[tokens, padded_heads, head_dim]`` and one byte
    storage, the largest of three packed sets: the MXFP4 indexer query (values ``[tokens, ix_heads,
    ix_hd / 2]``, scales ``[tokens, ix_heads, ix_hd / 32]`` uint8, weights ``[tokens, ix_heads]``
    float32), the global top-k (``[tokens, topk]`` and ``[tokens]`` int32), the compressor's float32
    ``[tokens, head_dim]``."""
    aux = max(
        _packed((tokens * ix_heads * ix_hd // 2, tokens * ix_heads * (ix_hd // 32), 4 * tokens * ix_heads)),
        _packed((4 * tokens * topk, 4 * tokens)),
        _packed((4 * tokens * head_dim,)),
    )
    return [2 * tokens * padded_heads * head_dim, aux]


def walk(config: Mapping[str, Any], par: W.Parallel, args: WalkArgs) -> W.RankWeights:
    """``DeepseekV4ForCausalLM``: its text model (:func:`text_walk`), or where the config has a
    tower (``vision_n_layers`` above 0) on 0.30.0+ the wrapper vLLM serves it as
    (``DeepseekV4ModelArchConfigConvertor``: :func:`vl_walk`).

    :raises InputError: what those refuse."""
    if config.get("vision_n_layers") and par.vllm_version in VISION_RELEASES:
        return vl_walk(config, par, args)
    return text_walk(config, par, args)


def text_walk(config: Mapping[str, Any], par: W.Parallel, args: WalkArgs) -> W.RankWeights:
    """One rank of the text model (module docstring).

    :raises InputError: what :func:`check_quantization` / :func:`check_rank` refuse, checkpoint
        headers, sizes TP does not divide, no ``max_num_batched_tokens``."""
    config_only(config, args)
    check_rank(par)
    check_quantization(config, args.hf_quant)
    vision = bool(config.get("vision_n_layers"))
    if vision and par.vllm_version not in VISION_RELEASES:
        raise _refuse(
            "config.json",
            "vision_n_layers",
            f"the vision variant's text model is checked on vLLM {', '.join(VISION_RELEASES)} only",
        )
    if args.max_num_batched_tokens is None:
        raise _refuse(
            "--max-num-batched-tokens",
            None,
            "it allocates its top-k indices buffer (max_num_batched_tokens x index_topk int32) with the weights: "
            "give max_num_batched_tokens",
        )
    tp = par.tp
    ab = W.model_dtype_bytes(config, args.dtype)
    i = W._int
    h, n_layers, heads, hd = (
        i(config, k) for k in ("hidden_size", "num_hidden_layers", "num_attention_heads", "head_dim")
    )
    q_lora, o_lora, groups, rope_dim = (
        i(config, k) for k in ("q_lora_rank", "o_lora_rank", "o_groups", "qk_rope_head_dim")
    )
    e, inter, top_k, vocab = (
        i(config, k) for k in ("n_routed_experts", "moe_intermediate_size", "num_experts_per_tok", "vocab_size")
    )
    ix_heads, ix_hd = i(config, "index_n_heads"), i(config, "index_head_dim")
    m = i(config, "hc_mult")
    mix = (2 + m) * m
    ratios = compress_ratios(config, n_layers)
    heads_r = W._divide(heads, tp, "num_attention_heads")
    groups_r = W._divide(groups * o_lora, tp, "o_groups x o_lora_rank")
    i_r = W._divide(inter, tp, "moe_intermediate_size")
    vocab_r = W.padded_vocab_per_rank(vocab, tp)
    w = W._Walk(None, par.vllm_version)

    # deepseek_v4_fp8 keeps the block scales in e8m0 for fp4-expert checkpoints (is_scale_e8m0)
    fp8 = config.get("quantization_config", args.hf_quant) is not None
    quant = W.Quant("fp8", BLOCK, block_scale_bytes=1) if fp8 else W.Quant()

    def linear(n: int, k: int, *, split: str, parts: tuple[int, ...] = ()) -> None:
        for kind, nbytes in W.linear_bytes(quant, k, parts or (n,), ab, tp=tp, split=split):
            w.own(kind, nbytes)

    w.own("embedding", vocab_r * h * ab)
    w.own("lm_head", vocab_r * h * ab)
    w.own("norm", h * ab)
    for n in (m * m * h, m, 1):  # hc_head_fn, hc_head_base, hc_head_scale
        w.own("hyper-connections", 4 * n)
    w.own("topk indices", 4 * args.max_num_batched_tokens * i(config, "index_topk"), buffer=True)
    if par.vllm_version in EAGER_SCRATCH and n_layers:
        scratch = eager_scratch_bytes(
            args.max_num_batched_tokens, padded_q_heads(heads_r), hd, ix_heads, ix_hd, i(config, "index_topk")
        )
        for nbytes in scratch:
            w.own("eager scratch", nbytes, buffer=True)
    hash_layers = i(config, "num_hash_layers", 0)
    noaux = config.get("topk_method") == "noaux_tc"
    s_inter = config.get("n_shared_experts")
    for li, ratio in enumerate(ratios):
        for n in (mix * m * h, mix * m * h, mix, mix, 3, 3):  # hc_{attn,ffn}_{fn,base,scale}
            w.own("hyper-connections", 4 * n)
        if li == 0:
            w.own("hyper-connections", 4 * mix * h)  # hc_attn_fn_broadcast
        for n in (h, h, q_lora, hd):  # attn_norm, ffn_norm, q_norm, kv_norm
            w.own("norm", n * ab)
        w.own("attention", 4 * padded_q_heads(heads_r))
        linear(q_lora + hd, h, split="replicated")  # fused_wqa_wkv
        linear(heads_r * hd, q_lora, split="column")  # wq_b
        linear(groups_r, heads * hd // groups, split="column")  # wo_a
        linear(h, groups_r, split="row")  # wo_b
        if ratio > 1:
            for kind, nbytes in compressor_bytes(ratio, hd, h, ab):
                w.own(kind, nbytes)
        if ratio == 4:
            linear(ix_heads * ix_hd, q_lora, split="replicated")  # indexer.wq_b
            w.own("indexer", ix_heads * h * ab)  # weights_proj
            for kind, nbytes in compressor_bytes(4, ix_hd, h, ab):
                w.own(kind, nbytes)
        w.own("gate", e * h * ab)
        if li < hash_layers:
            w.own("gate", 4 * vocab * top_k)  # tid2eid, the experts' hash_indices_table
        if noaux and (li >= hash_layers or vision):
            # e_score_correction_bias, shared with the experts (a vision checkpoint's hash layers too)
            w.own("gate", 4 * e)
        if vision:
            w.own("gate", 4 * e)  # bias_vl, the image tokens' routing bias (every MoE layer)
        if s_inter is not None:
            s_total = inter * i(config, "n_shared_experts")
            si_r = shared_intermediate(s_total, tp) if fp8 else W._divide(s_total, tp, "the shared experts' width")
            linear(2 * si_r, h, split="column", parts=(si_r, si_r))
            linear(h, si_r, split="row")
        experts = (
            mxfp4_experts_bytes("MARLIN", e, h, i_r, ab, biases=False) if fp8 else W.experts_bytes(quant, e, h, i_r, ab)
        )
        for kind, nbytes in experts:
            w.own(kind, nbytes)
    # get_rope caches one table per parameter set: the compressed layers' differs by its theta
    tables = {
        (
            *rope_table(config, r > 1, par.vllm_version, ab),
            repr(config.get("compress_rope_theta" if r > 1 else "rope_theta")),
        )
        for r in ratios
    }
    for positions, elem, _theta in sorted(tables):
        w.own("rotary", elem * positions * rope_dim, buffer=True)
    return w.result()


def vision_counts(config: Mapping[str, Any], tp: int) -> list[int]:
    """The wrapper's ViT and aligner on one rank, in elements of the model dtype
    (``common/vision.py``; the class casts both to the model dtype, norms included): the
    replicated ``patch_embed.proj`` ``[D, 3 P^2]`` + bias; per block ``norm1`` / ``norm2`` ``[D]``,
    ``wqkv`` ``[3 D / t, D]`` + bias, ``wo`` ``[D, D / t]`` + bias ``[D]``, ``w1``
    ``[2 I / t, D]`` and ``w2`` ``[D, I / t]`` (no biases); the final ``norm`` ``[D]``; the aligner's
    ``w1`` ``[H / t, D r^2]`` + bias ``[H / t]`` and ``w2`` ``[H, H / t]`` + bias ``[H]``. ``t`` is
    TP, or 1 where TP does not divide ``vision_n_heads`` (``is_vit_use_data_parallel``: every layer
    ``disable_tp``; ``--mm-encoder-tp-mode data`` falls back to ``weights`` for this class, which
    has no ``supports_encoder_tp_data``). ``D`` ``vision_dim``, ``I`` ``vision_inter_dim``, ``P``
    ``vision_patch_size``, ``r`` ``vision_downsample_ratio``, ``H`` ``hidden_size``.

    :raises InputError: a width missing, or one TP does not divide (named)."""
    i = W._int
    d, heads, inter = i(config, "vision_dim"), i(config, "vision_n_heads"), i(config, "vision_inter_dim")
    p, r, h = i(config, "vision_patch_size"), i(config, "vision_downsample_ratio"), i(config, "hidden_size")
    t = 1 if heads % tp else tp
    d_r = W._divide(d, t, "vision_dim")
    i_r = W._divide(inter, t, "vision_inter_dim")
    h_r = W._divide(h, t, "hidden_size (the aligner's width)")
    block = [d, d, 3 * d_r * d, 3 * d_r, d * d_r, d, 2 * i_r * d, d * i_r]
    aligner = [h_r * d * r * r, h_r, h * h_r, h]
    return [d * 3 * p * p, d, *block * i(config, "vision_n_layers"), d, *aligner]


def vl_walk(config: Mapping[str, Any], par: W.Parallel, args: WalkArgs) -> W.RankWeights:
    """``DeepseekV4ForConditionalGeneration`` (``common/vl_model.py``, vLLM 0.30.0+) on one rank:
    the text model (:func:`walk`, with the vision variant's routing tensors) and, where
    ``vision_n_layers`` is positive and images are allowed (``_mark_tower_model(..., {"image"})``:
    dropped by ``--language-model-only`` or an image limit of 0), :func:`vision_counts` and the
    four float32 image vectors ``image_start`` / ``image_end`` / ``image_newline`` / ``image_pad``
    ``[H]``.

    :raises InputError: what :func:`walk` refuses; a release before 0.30.0 (no such class); a
        tower width missing or TP does not divide."""
    if par.vllm_version not in VISION_RELEASES:
        raise _refuse("--vllm-version", par.vllm_version, "its wrapper (vLLM 0.30.0+) is not in this release")
    weights = text_walk(config, par, args)
    if args.no_tower or not config.get("vision_n_layers"):
        return weights
    ab = W.model_dtype_bytes(config, args.dtype)
    for n in vision_counts(config, par.tp):
        weights.add("vision", n * ab)
    for _ in range(4):
        weights.add("vision", 4 * W._int(config, "hidden_size"))
    return weights


#: both take images where the config has a tower (the text architecture is then the wrapper)
FAMILIES: dict[str, Family] = {
    ARCH: Family(walk, ("image",)),
    "DeepseekV4ForConditionalGeneration": Family(vl_walk, ("image",)),
}

#: not sized (issue 33): DeepSeek-V4.1's KV caches are planned (``models/deepseek_v4.py``), its weights are not
UNSIZED: dict[str, str] = {
    "DeepseekV41ForCausalLM": (
        "vllm/models/deepseek_v41's layers (compressors on the KV source layers only, indexers on the index "
        "sources, Engram n-gram tables) and its always-built vision tower are not sized; its KV caches are planned"
    ),
}

"""MiMo-V2-Flash (``mimo_v2.py``, ``MiMoV2FlashForCausalLM``): per layer two RMSNorms, attention
whose heads, key/value heads, head size and value head size are the ``swa_`` ones on the
sliding-window layers (``hybrid_layer_pattern`` 1) and the config's elsewhere: ``qkv_proj``
``[(heads x head_dim + kv_heads x (head_dim + v_head_dim)) / TP, H]`` (a bias under
``attention_bias``; key/value heads below TP replicated), ``o_proj`` ``[H, heads x v_head_dim /
TP]``, on the sliding-window layers under ``add_swa_attention_sink_bias`` a sink ``[heads /
TP]``; then a gated MLP, or on the layers ``moe_layer_freq`` marks a MoE block: the router
``[E, H]`` and ``e_score_correction_bias`` ``[E]`` in ``moe_router_dtype`` (float32 by default)
and ``n_routed_experts`` experts of ``moe_intermediate_size``. One rotary table per distinct rope
(head size, ``partial_rotary_factor``, ``rope_theta`` / ``swa_rope_theta``) of the stage. The
embedding on the first stage, the final norm and the untied head on the last. vLLM refuses TP
above the experts; a tied head is refused by name.

Plain fp8 (``quant_method: fp8``, the published ``[128, 128]`` blocks, vLLM's ``Fp8Config``) on a
named GPU is the layout after ``process_weights_after_loading`` (``weights._fp8_post_load``):
``qkv_proj``, ``o_proj``, the dense MLPs and the experts quantized (``fused_moe.scaled_experts_bytes``),
the router, its bias, the embedding and the head not; the attention layers' scale parameters
deleted (``Fp8KVCacheMethod``). A key or value part per rank off the 128 blocks (TP 4 and above
for the published config) passes: vLLM skips its block-shape check for a ``QKVParallelLinear`` whose
parts are not all multiples of the block (``_maybe_allow_fp8_block_shape_mismatch``), the block
scales then ``[ceil(n / 128), ceil(k / 128)]`` over the fused rows. A fused ``qkv_proj`` layout
(``attention_projection_layout: fused_qkv``) and other quantization methods are refused by name.

FlashInfer's KV counter (vLLM 0.33.0,
``weights.flashinfer_counter_layers``): only a layer whose value head size equals its head size
goes through vLLM's backend selection (sinks on the sliding-window ones); the others pin
FlashAttention / Triton's different-KV backends (``MiMoV2Attention``) and build none."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from dryboot.errors import InputError
from dryboot.vllm.model_executor.layers.quantization.fused_moe import scaled_experts_bytes
from dryboot.vllm.model_executor.model_loader import weights as W
from dryboot.vllm.model_executor.models.compose import Family, WalkArgs, config_only, require_gpu, unquantized

DEFAULTS: dict[str, Any] = {
    "rope_theta": 1000000,
    "max_position_embeddings": 32768,
    "partial_rotary_factor": 1.0,
    "attention_bias": False,
    "tie_word_embeddings": False,
}
_DTYPES = {"float32": 4, "bfloat16": 2, "float16": 2}


def _flag(config: Mapping[str, Any], key: str, li: int) -> bool:
    v = config.get(key)
    if isinstance(v, int):
        return False if key == "moe_layer_freq" else bool(v)
    if not isinstance(v, list) or li >= len(v):
        raise InputError("config.json", key, "a list with one entry per layer")
    return bool(v[li])


def walk(config: Mapping[str, Any], par: W.Parallel, args: WalkArgs) -> W.RankWeights:
    """One rank of one stage (module docstring).

    :raises InputError: a quantization method, checkpoint headers, a tied head, sizes TP does
        not divide, TP above the experts."""
    quant = W.quant_from_config(config, args.hf_quant)
    if quant.method is None:
        config, ab = unquantized(config, args, DEFAULTS, untied="MiMo-V2")
    else:
        config, ab = _quantized(config, args)
        quant = _fp8_on_gpu(quant, par)
    tp = par.tp
    h = W._int(config, "hidden_size")
    e, moe_i = W._int(config, "n_routed_experts"), W._int(config, "moe_intermediate_size")
    W.refuse_tp_above_experts(tp, e)
    router = _DTYPES.get(str(config.get("moe_router_dtype", "float32")))
    if router is None:
        raise InputError("config.json", "moe_router_dtype", "float32, bfloat16 or float16")
    vocab_r = W.padded_vocab_per_rank(W._int(config, "vocab_size"), tp)
    w = W._Walk(None, par.vllm_version)
    w.ends(par, vocab_r, h, ab)
    ropes: set[tuple[int, float, float]] = set()
    #: the layers that select their backend (heads per rank, head size, sinks), for the counter
    selected: list[tuple[int, int, bool]] = []
    for li in W.pp_layers(W._int(config, "num_hidden_layers"), par):
        swa = _flag(config, "hybrid_layer_pattern", li)
        p = "swa_" if swa else ""
        nq, nkv, hd = (W._int(config, p + k) for k in ("num_attention_heads", "num_key_value_heads", "head_dim"))
        vhd = config.get(p + "v_head_dim") or hd
        nq_r = W._divide(nq, tp, p + "num_attention_heads")
        if nkv >= tp:
            nkv_r = W._divide(nkv, tp, p + "num_key_value_heads")
        else:
            W._divide(tp, nkv, f"the tensor parallel size over {p}num_key_value_heads")
            nkv_r = 1
        qkv = nq_r * hd + nkv_r * (hd + vhd)
        if quant.method is not None:
            _quantized_layer(
                w, quant, config, par, li, (nq_r * hd, nkv_r * hd, nkv_r * vhd), nq_r * vhd, swa, (router, ab)
            )
        else:
            sizes = [h, h, qkv * h, h * nq_r * vhd]
            if config.get("attention_bias"):
                sizes.append(qkv)
            if swa and config.get("add_swa_attention_sink_bias"):
                sizes.append(nq_r)
            if _flag(config, "moe_layer_freq", li):
                w.own("router", router * e * h)
                w.own("router", router * e)
                e_r, m_r = W.experts_per_rank(e, moe_i, tp, par, "moe_intermediate_size")
                sizes += [e_r * 2 * m_r * h, e_r * h * m_r]
                if par.expert_parallel:
                    w.own("expert map", 4 * e, buffer=True)
            else:
                sizes += W.dense_mlp_sizes(h, W._int(config, "intermediate_size"), tp)
            w.attention_layer(sizes, ab)
        if vhd == hd:
            selected.append((nq_r, hd, swa and bool(config.get("add_swa_attention_sink_bias"))))
        theta = float(config.get("swa_rope_theta", config["rope_theta"]) if swa else config["rope_theta"])
        partial = float(config["partial_rotary_factor"])
        if (hd, partial, theta) not in ropes:
            ropes.add((hd, partial, theta))
            rope = {"max_position_embeddings": config["max_position_embeddings"], "partial_rotary_factor": partial}
            w.own("rotary", W._rotary_bytes(rope, hd, ab), buffer=True)
    rank = w.result()
    W.flashinfer_counter_layers(rank, par, args.max_num_batched_tokens, selected)
    return rank


def _quantized(config: Mapping[str, Any], args: WalkArgs) -> tuple[dict[str, Any], int]:
    """The config over :data:`DEFAULTS` and the model dtype's bytes, for a quantized checkpoint.

    :raises InputError: checkpoint headers (not mapped), a tied head, the fused ``qkv_proj``
        layout (its KV chunks are not modelled)."""
    config_only(config, args)
    merged = {**DEFAULTS, **config}
    if merged.get("tie_word_embeddings"):
        raise InputError("config.json", "tie_word_embeddings", "a tied MiMo-V2 head is not modelled")
    if merged.get("attention_projection_layout") == "fused_qkv":
        raise InputError(
            "config.json",
            "attention_projection_layout",
            "MiMo-V2's fused_qkv projection under fp8 blocks (vLLM's MergedColumnParallelLinear of KV chunks, "
            "mimo_v2.py) is not modelled",
        )
    return merged, W.model_dtype_bytes(merged, args.dtype)


def _fp8_on_gpu(quant: W.Quant, par: W.Parallel) -> W.Quant:
    """Plain fp8 ``[bn, bk]`` blocks after loading on the GPU named (``weights._on_gpu``).

    :raises InputError: another method, one scale per tensor, no GPU, a release or GPU not
        recorded (named)."""
    if quant.method != "fp8" or quant.block is None:
        raise InputError(
            "quantization_config",
            "quant_method",
            "quantized MiMoV2FlashForCausalLM layouts are modelled for plain fp8 [bn, bk] blocks only",
        )
    require_gpu(par, "fp8")
    if par.pp > 1 or par.expert_parallel:
        raise InputError(
            "quantization_config",
            "quant_method",
            "fp8 MiMo-V2-Flash under pipeline or expert parallelism is not modelled",
        )
    return W._on_gpu(quant, par, "mimo_v2_flash")


def _quantized_layer(
    w: W._Walk,
    quant: W.Quant,
    config: Mapping[str, Any],
    par: W.Parallel,
    li: int,
    qkv: tuple[int, int, int],
    o_in: int,
    swa: bool,
    dtypes: tuple[int, int],
) -> None:
    """Layer ``li`` under fp8 after loading: the norms, ``qkv_proj`` (``qkv``: the query, key and
    value parts per rank), ``o_proj`` (``o_in`` inputs per rank), the sink, then the MoE block
    (the router in ``moe_router_dtype``, its correction bias in float32, ``GateLinear``'s
    ``out_dtype``) or the dense MLP, and the attention layer's scalars (its scale parameters
    deleted). ``dtypes``: the router's and the model's bytes per element."""
    tp, (router, ab) = par.tp, dtypes
    h = W._int(config, "hidden_size")
    att = f"model.layers.{li}.self_attn"
    entries = [
        ("norm", h * ab),
        ("norm", h * ab),
        *W._linear(quant, f"{att}.qkv_proj", h, qkv, ab, tp=tp, bias=bool(config.get("attention_bias"))),
        *W._linear(quant, f"{att}.o_proj", o_in, (h,), ab, tp=tp, split="row"),
    ]
    if swa and config.get("add_swa_attention_sink_bias"):
        entries.append(("sink", o_in // int(config.get("swa_v_head_dim") or W._int(config, "swa_head_dim")) * ab))
    mlp = f"model.layers.{li}.mlp"
    if _flag(config, "moe_layer_freq", li):
        e = W._int(config, "n_routed_experts")
        e_r, m_r = W.experts_per_rank(e, W._int(config, "moe_intermediate_size"), tp, par, "moe_intermediate_size")
        entries += [("router", router * e * h), ("router", 4 * e)]
        assert quant.scaled is not None
        ex = f"{mlp}.experts"
        scheme = quant.scaled.layer_scheme(ex, tuple(f"{ex}.0.{p}" for p in ("gate_proj", "up_proj", "down_proj")))
        if scheme is None:
            entries += W.experts_bytes(W.Quant(), e_r, h, m_r, ab)
        else:
            entries += scaled_experts_bytes(quant.scaled, scheme, e_r, h, m_r, ab)
    else:
        i_r = W._divide(W._int(config, "intermediate_size"), tp, "intermediate_size")
        entries += [
            *W._linear(quant, f"{mlp}.gate_up_proj", h, (i_r, i_r), ab, tp=tp),
            *W._linear(quant, f"{mlp}.down_proj", i_r, (h,), ab, tp=tp, split="row"),
        ]
    for kind, nbytes in entries:
        w.own("attention" if kind == "weight" else kind, nbytes)
    w.own("attention scales", 16, buffer=True)
    w.ref.allocated_bytes += (w.attention_blocks - W._post_load_host_blocks(quant, w.range_blocks)) * W.ALLOC_ROUND


FAMILIES: dict[str, Family] = {"MiMoV2FlashForCausalLM": Family(walk)}

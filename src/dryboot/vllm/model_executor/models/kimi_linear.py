"""Kimi-Linear (``models/kimi_k3/nvidia/model.py``, ``KimiLinearForCausalLM``, vLLM's CUDA
build): per layer two RMSNorms and either a Kimi Delta Attention mixer (the layers of
``linear_attn_config.kda_layers``, 1-based; ``layers/mamba/gdn/kimi_gdn_linear_attn.py``) or
multi-head latent attention without rope (the others; ``mla_use_nope``). A KDA mixer with ``n``
heads of ``d`` (``linear_attn_config``) and kernel ``K`` (``short_conv_kernel_size``): the
fused ``in_proj_qkvgfab`` ``[(3 n d + n) / TP + d, H]`` (q, k, v and ``b`` split, ``f_a``
replicated), ``f_b_proj`` ``[n d / TP, d]``, the float32 ``conv1d`` ``[3 n d / TP, 1, K]``,
``dt_bias`` ``[n d / TP]`` and ``A_log`` ``[n / TP]``, ``g_a_proj`` ``[d, H]`` (replicated),
``g_b_proj`` ``[n d / TP, d]``, ``o_norm`` ``[d]``, ``o_proj`` ``[H, n d / TP]``; no attention
scale buffers. The MLA layer: ``q_proj`` ``[heads / TP x (nope + rope), H]``,
``kv_a_proj_with_mqa`` ``[kv_lora + rope, H]``, ``kv_a_layernorm``, ``kv_b_proj`` ``[heads / TP x
(nope + v), kv_lora]``, ``o_proj``, the scale buffers and a float32 ``_one_scale`` ``[1]``. The
MLP: gated, or from ``first_k_dense_replace`` on every ``moe_layer_freq``-th layer a MoE block:
the router ``[E, H]`` in the model dtype, the float32 ``e_score_correction_bias`` ``[E]``, a
gated shared expert of ``moe_intermediate_size x num_shared_experts``, ``num_experts`` experts
whose width under TP is padded to ``min_moe_intermediate_per_partition`` (256) per rank when
``moe_intermediate_size / TP`` is below it (not under expert parallelism). The embedding on the
first stage, the final norm and the head on the last (vLLM's class never ties it).

Kimi-K3's options (vLLM 0.27.1-0.33.0, recorded on each; the same class serves ``KimiK3ForConditionalGeneration``'s
language model), each where its config key is set:

- full-rank KDA gate (``linear_attn_config.use_full_rank_gate``, ``kimi_k3/nvidia/kda.py``
  ``KimiK3DeltaAttention``): ``in_proj_qkvgfab`` ``[4 n d / TP + d + n / TP + pad, H]`` (q, k, v
  and the gate split, ``f_a`` replicated, ``b`` split, padded to 16 rows per rank), ``f_b_proj``
  ``[n d / TP, d]``, the float32 ``dt_bias``, ``conv1d`` and ``A_log`` as above, ``o_norm``
  ``[d]``, ``o_proj`` (no ``g_a_proj`` / ``g_b_proj``). Where the native fused decode serves it
  (``resolve_kda_decode_backend``: ``n / TP`` in 12, 24, 48, 96, ``d`` 128, kernel 4, bfloat16
  activations on SM 9.0, 10.x or 12.x), float32 copies for it: ``decode_conv1d_weight``
  ``[3, K, n d / TP]`` and ``decode_norm_weight`` ``[d]``;
- q-LoRA (``q_lora_rank``, ``kimi_k3/nvidia/mla.py``): ``fused_qkv_a_proj`` ``[q_lora + kv_lora
  + rope, H]`` replicated, or with the output gate (``mla_use_output_gate``)
  ``fused_qkv_a_g_proj`` ``[q_lora + kv_lora + rope + heads / TP x v, H]``
  (``KimiK3MergedQKVGateLinear``: the latents replicated, the gate split); ``q_a_layernorm``
  ``[q_lora]``, ``q_b_proj`` ``[heads / TP x (nope + rope), q_lora]``; without q-LoRA the gate is
  its own ``g_proj`` ``[heads / TP x v, H]``;
- attention residuals (``attn_res_block_size``): per layer two more RMSNorms and two ``[1, H]``
  projections (``self_attention_res_*``, ``mlp_res_*``), one of each beside the final norm;
- latent MoE (``routed_expert_hidden_size`` L): the experts work at width L, with
  ``routed_expert_down_proj`` ``[L, H]``, ``routed_expert_norm`` ``[L]``
  (``latent_moe_use_norm``) and ``routed_expert_up_proj`` ``[H, L]``, all replicated.

Kimi-K3's published MXFP4 checkpoint (compressed-tensors ``mxfp4-pack-quantized``, which vLLM's
``KimiK3ForConditionalGenerationConfig`` rewrites to ``quant_method`` ``mxfp4``,
:func:`~dryboot.vllm.model_executor.model_loader.weights.mxfp4_rewritten`): every layer as above,
unquantized, but the routed experts, held as ``Mxfp4MoEMethod`` leaves them after the post-load step
of the MoE backend vLLM picks on the named GPU
(:func:`~dryboot.vllm.model_executor.layers.quantization.mxfp4.kimi_k3_mxfp4_experts_bytes`), and the
MLA layers without 0.27.1's ``q/k/v_range`` scalars, which that step leaves on the host.

Sequence parallelism (expert parallelism with TP and DP above 1: the dense and shared MLPs
replicated) and other releases are refused by name for Kimi-K3's layers."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from dryboot.errors import InputError
from dryboot.vllm.model_executor.layers.quantization.mxfp4 import (
    check_kimi_k3_modelled,
    kimi_k3_mxfp4_backend,
    kimi_k3_mxfp4_experts_bytes,
)
from dryboot.vllm.model_executor.model_loader import weights as W
from dryboot.vllm.model_executor.models.compose import Family, WalkArgs, unquantized

#: ``KimiLinearConfig``'s defaults (``transformers_utils/configs/kimi_linear.py``) the walk reads
DEFAULTS: dict[str, Any] = {
    "num_shared_experts": 0,
    "first_k_dense_replace": 0,
    "moe_layer_freq": 1,
    "min_moe_intermediate_per_partition": 256,
}

#: Kimi-K3 option keys (any set: the layers of ``kimi_k3/nvidia/``, checked on :data:`K3_RELEASES`)
K3_OPTIONS = ("q_lora_rank", "mla_use_output_gate", "attn_res_block_size", "routed_expert_hidden_size")
#: the releases whose ``models/kimi_k3`` builds these layers as this module sizes them (recorded)
K3_RELEASES = ("0.27.1", "0.28.0", "0.29.0", "0.30.0", "0.31.0", "0.32.0", "0.33.0")
#: ``is_fused_kda_decode_supported``: the local head counts the native fused KDA decode takes
NATIVE_DECODE_HEADS = (12, 24, 48, 96)
#: what the native-decode copies assume (the walk does not see these flags)
NATIVE_DECODE_NOTE = (
    "counts the KDA layers' float32 native-decode copies (decode_conv1d_weight, decode_norm_weight), as vLLM "
    "holds them with a bfloat16 conv state and a float32 recurrent state (--mamba-cache-dtype / "
    "--mamba-ssm-cache-dtype auto) and no speculative decoding; otherwise vLLM takes the Triton decode and "
    "holds none"
)
#: ``KimiK3DeltaAttention``: each rank's fused input projection is padded to this many rows
IN_PROJ_ALIGNMENT = 16


def _native_decode(lin: Mapping[str, Any], n_r: int, par: W.Parallel) -> bool:
    """Whether vLLM's ``resolve_kda_decode_backend`` picks the native fused decode (``auto``),
    which keeps float32 copies of the conv and norm weights. The conv state follows the model
    dtype and the recurrent state is float32 (the cache dtypes' ``auto``); no speculation.

    :raises InputError: the shapes qualify but the GPU is unknown (the choice depends on it)."""
    d, k = W._int(lin, "head_dim"), W._int(lin, "short_conv_kernel_size")
    if n_r not in NATIVE_DECODE_HEADS or d != 128 or k != 4:
        return False
    cap = par.capability
    if cap is None:
        raise InputError(
            "--gpu",
            None,
            "Kimi-K3's KDA layers keep float32 copies of their conv and norm weights where the native fused "
            "decode serves them (SM 9.0, 10.x, 12.x): the GPU is needed",
        )
    return cap == (9, 0) or cap[0] in (10, 12)


def _kda_full_rank(w: W._Walk, lin: Mapping[str, Any], h: int, par: W.Parallel, ab: int, bf16: bool) -> None:
    n, d, k = (W._int(lin, key) for key in ("num_heads", "head_dim", "short_conv_kernel_size"))
    n_r = W._divide(n, par.tp, "linear_attn_config.num_heads")
    nd_r = n_r * d
    rows = 4 * nd_r + d + n_r
    rows += -rows % IN_PROJ_ALIGNMENT
    for size in (rows * h, nd_r * d, d, h * nd_r):  # in_proj_qkvgfab, f_b_proj, o_norm, o_proj
        w.own("linear attention", size * ab)
    for size in (3 * nd_r * k, nd_r, n_r):  # conv1d, dt_bias, A_log: float32
        w.own("linear attention", size * 4)
    if bf16 and _native_decode(lin, n_r, par):
        w.own("linear attention", 3 * k * nd_r * 4, buffer=True)  # decode_conv1d_weight
        w.own("linear attention", d * 4, buffer=True)  # decode_norm_weight
        if NATIVE_DECODE_NOTE not in w.ref.notes:
            w.ref.notes.append(NATIVE_DECODE_NOTE)


def _kda(w: W._Walk, lin: Mapping[str, Any], h: int, tp: int, ab: int) -> None:
    n, d, k = (W._int(lin, key) for key in ("num_heads", "head_dim", "short_conv_kernel_size"))
    n_r = W._divide(n, tp, "linear_attn_config.num_heads")
    nd_r = n_r * d
    for size in ((3 * nd_r + n_r + d) * h, nd_r * d, nd_r * d, d * h, d, h * nd_r):
        w.own("linear attention", size * ab)
    for size in (3 * nd_r * k, nd_r, n_r):  # conv1d, dt_bias, A_log: float32
        w.own("linear attention", size * 4)


def _mla(w: W._Walk, config: Mapping[str, Any], h: int, tp: int, ab: int, post_load: bool = False) -> None:
    """One MLA layer (module docstring); ``post_load``: as held after ``process_weights_after_loading``
    (the figure of a layout checked after loading: Kimi-K3's MXFP4 one), where the layer's
    ``set_default_quant_scales`` leaves the release's ``q/k/v_range`` scalars on the host (0.27.1's
    three blocks; recorded)."""
    heads_r = W._divide(W._int(config, "num_attention_heads"), tp, "num_attention_heads")
    nope, rope, v = (W._int(config, k) for k in ("qk_nope_head_dim", "qk_rope_head_dim", "v_head_dim"))
    kv_lora = W._int(config, "kv_lora_rank")
    q_lora = config.get("q_lora_rank")
    gate = heads_r * v if config.get("mla_use_output_gate") else 0
    if q_lora is None:
        front = [heads_r * (nope + rope) * h, (kv_lora + rope) * h] + ([gate * h] if gate else [])
    else:
        q_lora = W._int(config, "q_lora_rank")
        # fused_qkv_a(_g)_proj, q_a_layernorm, q_b_proj
        front = [(q_lora + kv_lora + rope + gate) * h, q_lora, heads_r * (nope + rope) * q_lora]
    for size in (*front, kv_lora, heads_r * (nope + v) * kv_lora, h * heads_r * v):
        w.own("attention", size * ab)
    w.own("attention scales", 16, buffer=True)
    w.ref.allocated_bytes += (w.attention_blocks - (w.range_blocks if post_load else 0)) * W.ALLOC_ROUND
    w.own("attention scales", 4, buffer=True)  # _one_scale


def _dense(w: W._Walk, kind: str, inter: int, h: int, tp: int, ab: int) -> None:
    i_r = W._divide(inter, tp, "the MLP's width")
    w.own(kind, 2 * i_r * h * ab)
    w.own(kind, h * i_r * ab)


def _attn_res(w: W._Walk, h: int, ab: int) -> None:
    """Two RMSNorms ``[H]`` and two ``ReplicatedLinear`` ``[1, H]`` (a layer's, or the model's one of each)."""
    for _ in range(2):
        w.own("norm", h * ab)
        w.own("attention residual", h * ab)


def _k3_checks(config: Mapping[str, Any], lin: Mapping[str, Any], par: W.Parallel) -> bool:
    """Whether Kimi-K3's layers are asked for, refusing what is not modelled of them.

    :raises InputError: a release not in :data:`K3_RELEASES`, sequence parallelism."""
    if not (any(config.get(key) not in (None, False) for key in K3_OPTIONS) or lin.get("use_full_rank_gate")):
        return False
    if par.vllm_version not in K3_RELEASES:
        raise InputError(
            "--vllm",
            None,
            f"Kimi-K3's layers (q-LoRA, latent MoE, full-rank gate) are checked on vLLM "
            f"{' / '.join(K3_RELEASES)} only, not {par.vllm_version}",
        )
    if par.pp == 1 and par.expert_parallel and par.tp > 1 and par.dp > 1:
        raise InputError(
            "--enable-expert-parallel",
            None,
            "Kimi-K3 under sequence parallelism (expert parallelism with TP and DP above 1: its dense and shared "
            "MLPs replicated) is not modelled",
        )
    return True


def _mxfp4_backend(config: Mapping[str, Any], par: W.Parallel, args: WalkArgs) -> str:
    """The MoE backend of Kimi-K3's MXFP4 experts on this rank's GPU
    (:func:`~dryboot.vllm.model_executor.layers.quantization.mxfp4.kimi_k3_mxfp4_backend`).

    :raises InputError: no GPU named, a dtype other than bfloat16 (vLLM refuses), a GPU below SM
        8.0 (vLLM refuses), a release or backend not checked (named), pipeline parallelism (not
        checked)."""
    if par.capability is None:
        raise InputError(
            "quantization_config",
            "format",
            "mxfp4-pack-quantized: Kimi-K3's MXFP4 experts are converted for the MoE backend vLLM picks per GPU: "
            "name the GPU (--gpu)",
        )
    dtype = W.model_dtype_name(config, args.dtype)
    if dtype != "bfloat16":
        raise InputError(
            "--dtype", None, f"torch.{dtype} is not supported for quantization method mxfp4 (supported: torch.bfloat16)"
        )
    backend = kimi_k3_mxfp4_backend(par.capability[0] * 10 + par.capability[1], par.vllm_version)
    check_kimi_k3_modelled(backend, par.vllm_version)
    if par.pp > 1:
        raise InputError(
            "--pipeline-parallel-size", None, "Kimi-K3's MXFP4 checkpoint under pipeline parallelism is not checked"
        )
    return backend


def walk(config: Mapping[str, Any], par: W.Parallel, args: WalkArgs) -> W.RankWeights:
    """One rank of one stage (module docstring).

    :raises InputError: a quantization method, checkpoint headers, MLA with rope, sizes TP does
        not divide, what :func:`_k3_checks` and :func:`_native_decode` refuse."""
    backend = None
    if W.mxfp4_rewritten(config, config.get("quantization_config")):
        # Mxfp4Config: the routed experts MXFP4, every linear layer, the router and the attention
        # unquantized (the checkpoint's ``ignore`` list names the rest)
        backend = _mxfp4_backend(config, par, args)
        config = {k: v for k, v in config.items() if k != "quantization_config"}
    config, ab = unquantized(config, args, DEFAULTS)
    lin = config.get("linear_attn_config") or {}
    if not isinstance(lin, Mapping):
        raise InputError("config.json", "linear_attn_config", "an object")
    k3 = _k3_checks(config, lin, par)
    bf16 = W.model_dtype_name(config, args.dtype) == "bfloat16" if k3 else False
    tp = par.tp
    h = W._int(config, "hidden_size")
    vocab_r = W.padded_vocab_per_rank(W._int(config, "vocab_size"), tp)
    kda = {int(x) - 1 for x in lin.get("kda_layers") or []}
    if len(kda) < W._int(config, "num_hidden_layers") and not config.get("mla_use_nope"):
        raise InputError("config.json", "mla_use_nope", "vLLM builds Kimi's MLA without rope only (it asserts this)")
    attn_res = config.get("attn_res_block_size") is not None
    latent = config.get("routed_expert_hidden_size")
    e = config.get("num_experts")
    w = W._Walk(None, par.vllm_version)
    if par.pp_rank == 0:
        w.own("embedding", vocab_r * h * ab)
    if par.pp_rank == par.pp - 1:
        w.own("norm", h * ab)
        if attn_res:
            w.own("norm", h * ab)  # output_attn_res_norm
            w.own("attention residual", h * ab)  # output_attn_res_proj
        w.own("lm_head", vocab_r * h * ab)  # its own parameter even under tie_word_embeddings
    for li in W.pp_layers(W._int(config, "num_hidden_layers"), par):
        w.own("norm", h * ab)
        w.own("norm", h * ab)
        if attn_res:
            _attn_res(w, h, ab)
        if li in kda and lin.get("use_full_rank_gate"):
            _kda_full_rank(w, lin, h, par, ab, bf16)
        elif li in kda:
            _kda(w, lin, h, tp, ab)
        else:
            _mla(w, config, h, tp, ab, post_load=backend is not None)
        moe = (
            e is not None
            and li >= W._int(config, "first_k_dense_replace")
            and li % W._int(config, "moe_layer_freq") == 0
        )
        if not moe:
            _dense(w, "mlp", W._int(config, "intermediate_size"), h, tp, ab)
            continue
        n_e = W._int(config, "num_experts")
        moe_i = W._int(config, "moe_intermediate_size")
        w.own("router", n_e * h * ab)
        w.own("router", 4 * n_e)
        shared = moe_i * W._int(config, "num_shared_experts")
        if shared:
            _dense(w, "mlp", shared, h, tp, ab)
        width = h
        if latent is not None:
            width = W._int(config, "routed_expert_hidden_size")
            w.own("latent projection", width * h * ab)  # routed_expert_down_proj
            if config.get("latent_moe_use_norm"):
                w.own("norm", width * ab)  # routed_expert_norm
            w.own("latent projection", h * width * ab)  # routed_expert_up_proj
        inter = moe_i
        if not par.expert_parallel:  # split over TP: each rank's width at least the floor
            floor = W._int(config, "min_moe_intermediate_per_partition")
            inter = floor * tp if tp > 1 and moe_i // tp < floor else moe_i
        if backend is None:
            w.experts(n_e, width, inter, par, ab, "moe_intermediate_size")
            continue
        e_r, i_r = W.experts_per_rank(n_e, inter, tp, par, "moe_intermediate_size")
        for kind, nbytes in kimi_k3_mxfp4_experts_bytes(backend, e_r, width, i_r, sm_count=par.sm_count):
            w.own(kind, nbytes)
        if par.expert_parallel:
            w.own("expert map", 4 * n_e, buffer=True)
    return w.result()


FAMILIES: dict[str, Family] = {"KimiLinearForCausalLM": Family(walk)}

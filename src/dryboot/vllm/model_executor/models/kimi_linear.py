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
Kimi-K3's options (q-LoRA, output gate, full-rank KDA gate, attention residuals, latent MoE)
are refused by name."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from dryboot.errors import InputError
from dryboot.vllm.model_executor.model_loader import weights as W
from dryboot.vllm.model_executor.models.compose import Family, WalkArgs, unquantized

#: ``KimiLinearConfig``'s defaults (``transformers_utils/configs/kimi_linear.py``) the walk reads
DEFAULTS: dict[str, Any] = {
    "num_shared_experts": 0,
    "first_k_dense_replace": 0,
    "moe_layer_freq": 1,
    "min_moe_intermediate_per_partition": 256,
}

#: Kimi-K3 options whose layers are not modelled: (config key, what it adds)
K3_OPTIONS = (
    ("q_lora_rank", "the MLA's q-LoRA front-end"),
    ("mla_use_output_gate", "the MLA's output gate"),
    ("attn_res_block_size", "attention residual blocks"),
    ("routed_expert_hidden_size", "latent MoE projections"),
)


def _kda(w: W._Walk, lin: Mapping[str, Any], h: int, tp: int, ab: int) -> None:
    n, d, k = (W._int(lin, key) for key in ("num_heads", "head_dim", "short_conv_kernel_size"))
    n_r = W._divide(n, tp, "linear_attn_config.num_heads")
    nd_r = n_r * d
    for size in ((3 * nd_r + n_r + d) * h, nd_r * d, nd_r * d, d * h, d, h * nd_r):
        w.own("linear attention", size * ab)
    for size in (3 * nd_r * k, nd_r, n_r):  # conv1d, dt_bias, A_log: float32
        w.own("linear attention", size * 4)


def _mla(w: W._Walk, config: Mapping[str, Any], h: int, tp: int, ab: int) -> None:
    heads_r = W._divide(W._int(config, "num_attention_heads"), tp, "num_attention_heads")
    nope, rope, v = (W._int(config, k) for k in ("qk_nope_head_dim", "qk_rope_head_dim", "v_head_dim"))
    kv_lora = W._int(config, "kv_lora_rank")
    sizes = (
        heads_r * (nope + rope) * h,
        (kv_lora + rope) * h,
        kv_lora,
        heads_r * (nope + v) * kv_lora,
        h * heads_r * v,
    )
    for size in sizes:
        w.own("attention", size * ab)
    w.own("attention scales", 16, buffer=True)
    w.ref.allocated_bytes += w.attention_blocks * W.ALLOC_ROUND
    w.own("attention scales", 4, buffer=True)  # _one_scale


def walk(config: Mapping[str, Any], par: W.Parallel, args: WalkArgs) -> W.RankWeights:
    """One rank of one stage (module docstring).

    :raises InputError: a quantization method, checkpoint headers, a Kimi-K3 option, MLA with
        rope, sizes TP does not divide."""
    config, ab = unquantized(config, args, DEFAULTS)
    lin = config.get("linear_attn_config") or {}
    if not isinstance(lin, Mapping):
        raise InputError("config.json", "linear_attn_config", "an object")
    for key, what in K3_OPTIONS:
        if config.get(key) not in (None, False):
            raise InputError("config.json", key, f"Kimi-K3's {what} is not modelled")
    if lin.get("use_full_rank_gate"):
        raise InputError("config.json", "linear_attn_config", "Kimi-K3's full-rank KDA gate is not modelled")
    tp = par.tp
    h = W._int(config, "hidden_size")
    vocab_r = W.padded_vocab_per_rank(W._int(config, "vocab_size"), tp)
    kda = {int(x) - 1 for x in lin.get("kda_layers") or []}
    if len(kda) < W._int(config, "num_hidden_layers") and not config.get("mla_use_nope"):
        raise InputError("config.json", "mla_use_nope", "vLLM builds Kimi's MLA without rope only (it asserts this)")
    e = config.get("num_experts")
    w = W._Walk(None, par.vllm_version)
    if par.pp_rank == 0:
        w.own("embedding", vocab_r * h * ab)
    if par.pp_rank == par.pp - 1:
        w.own("norm", h * ab)
        w.own("lm_head", vocab_r * h * ab)  # its own parameter even under tie_word_embeddings
    for li in W.pp_layers(W._int(config, "num_hidden_layers"), par):
        w.own("norm", h * ab)
        w.own("norm", h * ab)
        if li in kda:
            _kda(w, lin, h, tp, ab)
        else:
            _mla(w, config, h, tp, ab)
        moe = (
            e is not None
            and li >= W._int(config, "first_k_dense_replace")
            and li % W._int(config, "moe_layer_freq") == 0
        )
        if not moe:
            i_r = W._divide(W._int(config, "intermediate_size"), tp, "intermediate_size")
            w.own("mlp", 2 * i_r * h * ab)
            w.own("mlp", h * i_r * ab)
            continue
        n_e = W._int(config, "num_experts")
        moe_i = W._int(config, "moe_intermediate_size")
        w.own("router", n_e * h * ab)
        w.own("router", 4 * n_e)
        shared = moe_i * W._int(config, "num_shared_experts")
        if shared:
            s_r = W._divide(shared, tp, "the shared experts' width")
            w.own("mlp", 2 * s_r * h * ab)
            w.own("mlp", h * s_r * ab)
        if par.expert_parallel:
            e_r, m_r = W._local_experts(n_e, tp * par.dp), moe_i
        else:
            floor = W._int(config, "min_moe_intermediate_per_partition")
            padded = floor * tp if tp > 1 and moe_i // tp < floor else moe_i
            e_r, m_r = n_e, W._divide(padded, tp, "moe_intermediate_size")
        for kind, nbytes in W.experts_bytes(W.Quant(), e_r, h, m_r, ab):
            w.own(kind, nbytes)
        if par.expert_parallel:
            w.own("expert map", 4 * n_e, buffer=True)
    return w.result()


FAMILIES: dict[str, Family] = {"KimiLinearForCausalLM": Family(walk)}

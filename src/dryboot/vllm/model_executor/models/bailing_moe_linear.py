"""Bailing-V2.5 (``BailingMoeV2_5ForCausalLM``: vLLM's ``bailing_moe_linear.py``
``BailingMoeV25ForCausalLM``, the same layers on 0.28.0-0.30.0 and 0.33.0, the releases whose
transformers reads its ``bailing_hybrid`` config). The config is read as transformers'
``BailingHybridConfig`` reads it: its defaults fill absent keys, its aliases
(``num_local_experts``, ``n_shared_experts``, ``num_mtp_layers``) name the keys vLLM reads, and its
``__post_init__`` sets ``head_dim`` to ``qk_rope_head_dim``. ``d`` below is that head size, ``n``
the attention heads, ``H`` the hidden size.

Per decoder layer two RMSNorms ``[H]`` and, by ``is_linear_layer`` (layer ``i`` is linear when
``layer_group_size`` > 0 and ``(i + 1) % layer_group_size != 0``):

- a lightning-attention layer (``layers/mamba/linear/bailing_linear_attn.py``
  ``BailingMoELinearAttention``): ``query_key_value`` ``[3 n d / TP, H]`` (a bias ``[3 n d / TP]``
  where ``use_bias`` or ``use_qkv_bias``), ``query_layernorm`` / ``key_layernorm`` ``[d]`` where
  ``use_qk_norm``, ``g_proj`` ``[n d / TP, H]``, ``dense`` ``[H, n d / TP]`` (a bias ``[H]`` where
  ``use_bias``), ``g_norm`` ``[n d / TP]``; beside them, neither parameters nor buffers but held on
  the device, the float32 ALiBi-style decay ``slope_rate`` ``[n, 1, 1]`` and its rank's slice
  ``tp_slope`` ``[n / TP, 1, 1]`` (a view of the first: one block);
- a multi-head latent attention layer (``BailingMoeV25MLAAttention``): without ``q_lora_rank``
  ``q_proj`` ``[n / TP x (nope + rope), H]`` and the replicated ``kv_a_proj_with_mqa`` ``[kv_lora
  + rope, H]``, with it the replicated ``fused_qkv_a_proj`` ``[q_lora + kv_lora + rope, H]``,
  ``q_a_layernorm`` ``[q_lora]`` and ``q_b_proj`` ``[n / TP x (nope + rope), q_lora]``; then
  ``kv_a_layernorm`` ``[kv_lora]``, ``kv_b_proj`` ``[n / TP x (nope + v), kv_lora]``, ``o_proj``
  ``[H, n / TP x v]`` and the attention layer's scale buffers.

The MLP: ``BailingMLP`` (``gate_up_proj`` ``[2 I / TP, H]``, ``down_proj`` ``[H, I / TP]``, biases
``[2 I / TP]`` and ``[H]`` where ``use_bias``) below ``first_k_dense_replace`` (or with one
expert), else ``BailingMoeV25``: the router ``gate`` ``[E, H]`` in float32 (``router_dtype`` unset
or ``fp32``, else bfloat16), ``expert_bias`` ``[E]`` float32 where
``moe_router_enable_expert_bias``, a shared ``BailingMLP`` of ``(moe_shared_expert_intermediate_size
or moe_intermediate_size) x num_shared_experts`` where there are shared experts, and the fused
experts. One rotary table per kind of layer on the stage (``get_rope``'s cache): the linear
layers' ``[max_position_embeddings, d x partial_rotary_factor]`` (NeoX) and the MLA layers'
``[max_position_embeddings, qk_rope_head_dim]``, in the model dtype. The embedding on the first
stage, the final norm and the LM head (never tied) on the last.

Refused by name: a quantized checkpoint, checkpoint headers, rope types other than ``default``,
the router settings vLLM asserts against (``score_function`` ``sigmoid`` without the expert bias,
``softmax`` with it), ``use_bias`` beside shared experts (vLLM's ``ValueError``: their
``down_proj`` does not reduce its results), a ``group_norm_size`` TP does not divide or is below (vLLM asserts), and
releases other than :data:`RELEASES`.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from dryboot.errors import InputError
from dryboot.vllm.model_executor.model_loader import weights as W
from dryboot.vllm.model_executor.models.compose import Family, WalkArgs, unquantized
from dryboot.vllm.models.bailing_moe_linear import BAILING_HYBRID_DEFAULTS, is_linear_layer

#: the releases whose ``bailing_moe_linear.py`` builds these layers (recorded on each); the others'
#: transformers has no ``BailingHybridConfig`` (vLLM refuses the config)
RELEASES = ("0.28.0", "0.29.0", "0.30.0", "0.33.0")

#: transformers' ``BailingHybridConfig`` defaults of the keys the walk reads (the names vLLM reads)
DEFAULTS: dict[str, Any] = {
    **BAILING_HYBRID_DEFAULTS,
    "vocab_size": 157184,
    "intermediate_size": 6144,
    "moe_intermediate_size": 768,
    "num_shared_experts": 1,
    "q_lora_rank": None,
    "first_k_dense_replace": 2,
    "num_experts": 512,
}

#: ``BailingHybridConfig.attribute_map``: a config key -> the attribute vLLM reads
ALIASES = {
    "num_local_experts": "num_experts",
    "n_shared_experts": "num_shared_experts",
    "num_mtp_layers": "num_nextn_predict_layers",
}


def read_config(config: Mapping[str, Any]) -> dict[str, Any]:
    """``config`` as ``BailingHybridConfig`` leaves it: aliases renamed, :data:`DEFAULTS` for
    what is absent, ``head_dim`` set to ``qk_rope_head_dim`` (``__post_init__``)."""
    out = {ALIASES.get(k, k): v for k, v in config.items() if not (k in ALIASES and ALIASES[k] in config)}
    merged = {**DEFAULTS, **out}
    merged["head_dim"] = merged["qk_rope_head_dim"]
    return merged


def _rope(config: Mapping[str, Any]) -> float:
    """The linear layers' ``partial_rotary_factor`` (``_build_rope_parameters``: the rope
    parameters', else the flat key, else 1).

    :raises InputError: a rope type other than ``default`` (its table is not modelled)."""
    rope = config.get("rope_parameters") or {}
    scaling = config.get("rope_scaling") or {}
    if not isinstance(rope, Mapping) or not isinstance(scaling, Mapping):
        raise InputError("config.json", "rope_parameters", "an object")
    rope = {**rope, **scaling}
    kind = rope.get("rope_type", rope.get("type", "default"))
    if kind != "default":
        raise InputError(
            "config.json", "rope_scaling", f"Bailing-V2.5's rotary tables of rope type {kind!r} are not modelled"
        )
    partial = rope.get("partial_rotary_factor", config.get("partial_rotary_factor", 1.0))
    if not isinstance(partial, (int, float)) or not 0 < partial <= 1:
        raise InputError("config.json", "partial_rotary_factor", f"must be in (0, 1] ({partial!r})")
    return float(partial)


def _checks(config: Mapping[str, Any], par: W.Parallel, linear: bool) -> None:
    """What vLLM refuses while building the layers, refused here.

    :raises InputError: a release not in :data:`RELEASES`, ``use_bias`` absent (``use_qkv_bias``
        too beside linear layers), a router setting vLLM asserts against, ``use_bias`` with shared
        experts, ``group_norm_size`` against TP."""
    if par.vllm_version not in RELEASES:
        raise InputError(
            "--vllm-version",
            par.vllm_version,
            f"Bailing-V2.5's weights are checked on vLLM {' / '.join(RELEASES)} only",
        )
    for key in ("use_bias", "use_qkv_bias") if linear else ("use_bias",):
        if config.get(key) is None:
            raise InputError("config.json", key, "required: vLLM's Bailing layers read it (AttributeError)")
    score = config.get("score_function") or "softmax"
    bias = bool(config.get("moe_router_enable_expert_bias"))
    if W._int(config, "num_experts") > 1 and (score == "sigmoid") != bias:
        raise InputError(
            "config.json",
            "score_function",
            "vLLM's BailingMoeV25 asserts (softmax, no expert bias) or (sigmoid, an expert bias)",
        )
    moe_layers = W._int(config, "num_experts") > 1 and W._int(config, "first_k_dense_replace") < W._int(
        config, "num_hidden_layers"
    )
    if moe_layers and config.get("use_bias") and W._int(config, "num_shared_experts") > 0:
        raise InputError(
            "config.json",
            "use_bias",
            "with shared experts vLLM refuses it (their down_proj does not reduce its results: ValueError "
            "'When not reduce the results, adding bias to the results can lead to incorrect results')",
        )
    group = W._int(config, "group_norm_size", 1)
    if linear and (par.tp > group or group % par.tp):
        raise InputError(
            "--tensor-parallel-size",
            None,
            f"group_norm_size {group} must be a multiple of TP and at least TP "
            "(vLLM's BailingMoELinearAttention asserts)",
        )


def _linear(w: W._Walk, c: Mapping[str, Any], h: int, tp: int, ab: int) -> None:
    """One ``BailingMoELinearAttention`` (module docstring)."""
    n = W._int(c, "num_attention_heads")
    d = W._int(c, "head_dim")
    nd_r = W._divide(n, tp, "num_attention_heads") * d
    w.own("linear attention", 3 * nd_r * h * ab)
    if c.get("use_bias") or c.get("use_qkv_bias"):
        w.own("linear attention", 3 * nd_r * ab)
    if c.get("use_qk_norm"):
        w.own("norm", d * ab)
        w.own("norm", d * ab)
    w.own("linear attention", nd_r * h * ab)  # g_proj
    w.own("linear attention", h * nd_r * ab)  # dense
    if c.get("use_bias"):
        w.own("linear attention", h * ab)
    w.own("norm", nd_r * ab)  # g_norm
    # slope_rate and tp_slope: float32 tensors held on the device, neither parameters nor buffers;
    # the rank's slice of a contiguous tensor is contiguous, so tp_slope views slope_rate's block
    w.ref.allocated_bytes += W.ALLOC_ROUND


def _mla(w: W._Walk, c: Mapping[str, Any], h: int, tp: int, ab: int) -> None:
    """One ``BailingMoeV25MLAAttention`` (module docstring)."""
    heads_r = W._divide(W._int(c, "num_attention_heads"), tp, "num_attention_heads")
    nope, rope, v = (W._int(c, k) for k in ("qk_nope_head_dim", "qk_rope_head_dim", "v_head_dim"))
    kv_lora = W._int(c, "kv_lora_rank")
    if c.get("q_lora_rank") is None:
        sizes: tuple[int, ...] = (
            heads_r * (nope + rope) * h,
            (kv_lora + rope) * h,
            kv_lora,
            heads_r * (nope + v) * kv_lora,
            h * heads_r * v,
        )
    else:
        sizes = W.q_lora_mla_sizes(h, heads_r, nope, rope, v, W._int(c, "q_lora_rank"), kv_lora)
    w.attention_layer(sizes, ab)


def _bailing_mlp(w: W._Walk, c: Mapping[str, Any], inter: int, h: int, tp: int, ab: int, what: str) -> None:
    """One ``BailingMLP`` of width ``inter`` (``what`` names it)."""
    i_r = W._divide(inter, tp, what)
    w.own("mlp", 2 * i_r * h * ab)
    w.own("mlp", h * i_r * ab)
    if c.get("use_bias"):
        w.own("mlp", 2 * i_r * ab)
        w.own("mlp", h * ab)


def _moe(w: W._Walk, c: Mapping[str, Any], h: int, par: W.Parallel, ab: int) -> None:
    """One ``BailingMoeV25`` (module docstring)."""
    e = W._int(c, "num_experts")
    router = c.get("router_dtype")
    w.own("router", e * h * (4 if router in (None, "fp32") else 2))
    if c.get("moe_router_enable_expert_bias"):
        w.own("router", 4 * e)
    shared = W._int(c, "num_shared_experts")
    if shared > 0:
        key = (
            "moe_shared_expert_intermediate_size"
            if "moe_shared_expert_intermediate_size" in c
            else "moe_intermediate_size"
        )
        _bailing_mlp(w, c, W._int(c, key) * shared, h, par.tp, ab, key)
    w.experts(e, h, W._int(c, "moe_intermediate_size"), par, ab, "moe_intermediate_size")


def walk(config: Mapping[str, Any], par: W.Parallel, args: WalkArgs) -> W.RankWeights:
    """One rank of one stage (module docstring).

    :raises InputError: what :func:`_checks`, :func:`_rope` and :func:`compose.unquantized` refuse,
        sizes TP does not divide."""
    c, ab = unquantized(read_config(config), args)
    n_layers = W._int(c, "num_hidden_layers")
    group = W._int(c, "layer_group_size")
    layers = W.pp_layers(n_layers, par)
    _checks(c, par, any(is_linear_layer(li, group) for li in range(n_layers)))
    partial = _rope(c)
    tp = par.tp
    h = W._int(c, "hidden_size")
    vocab_r = W.padded_vocab_per_rank(W._int(c, "vocab_size"), tp)
    w = W._Walk(None, par.vllm_version)
    w.ends(par, vocab_r, h, ab)
    e = W._int(c, "num_experts")
    first_dense = W._int(c, "first_k_dense_replace")
    kinds = set()
    for li in layers:
        linear = is_linear_layer(li, group)
        moe = e > 1 and li >= first_dense
        kinds.add(linear)

        def build(linear: bool = linear, moe: bool = moe) -> bool:
            w.own("norm", h * ab)
            w.own("norm", h * ab)
            if linear:
                _linear(w, c, h, tp, ab)
            else:
                _mla(w, c, h, tp, ab)
            if moe:
                _moe(w, c, h, par, ab)
            else:
                _bailing_mlp(w, c, W._int(c, "intermediate_size"), h, tp, ab, "intermediate_size")
            return not linear

        w.layer((linear, moe), build)
    positions = W._int(c, "max_position_embeddings")
    if True in kinds:  # the linear layers' NeoX table
        w.own("rotary", positions * int(W._int(c, "head_dim") * partial) * ab, buffer=True)
    if False in kinds:  # the MLA layers' table over the whole rotary head
        w.own("rotary", positions * W._int(c, "qk_rope_head_dim") * ab, buffer=True)
    rank = w.result()
    # MLA and linear-attention layers only: no FlashInferImpl, no FlashInfer KV counter
    W.flashinfer_counter_layers(rank, par, args.max_num_batched_tokens, [])
    return rank


def mtp_weights(
    target_config: Mapping[str, Any], par: W.Parallel, *, dtype: str = "auto", vllm_version: str
) -> W.RankWeights:
    """The target's MTP layers as a drafter (``--speculative-config`` method ``mtp``:
    ``bailing_moe_mtp.py`` ``BailingMoeV25MTPModel``, built from the target's config), on the
    rank: per layer of ``num_nextn_predict_layers`` five RMSNorms ``[H]`` (``enorm``, ``hnorm``,
    ``input_layernorm``, ``post_attention_layernorm``, ``final_layernorm``), ``eh_proj`` ``[H, 2 H]``
    (an ``nn.Linear``: replicated, in the model dtype), an MLA layer and a ``BailingMoeV25`` block
    (whatever ``first_k_dense_replace`` says), as the target's. The embedding and the
    ``shared_head`` LM head are the target's (vLLM shares them with an MTP drafter); the MLA
    rotary table too where the target has an MLA layer (``get_rope``'s cache), else its own.

    :raises InputError: pipeline parallelism (refused by the caller), what the target's walk refuses."""
    c, ab = unquantized(read_config(target_config), WalkArgs(None, dtype, None, False, None))
    n_layers = W._int(c, "num_hidden_layers")
    group = W._int(c, "layer_group_size")
    _checks(
        c, W.Parallel(tp=par.tp, vllm_version=vllm_version), any(is_linear_layer(li, group) for li in range(n_layers))
    )
    h = W._int(c, "hidden_size")
    w = W._Walk(None, vllm_version)
    for _ in range(W._int(c, "num_nextn_predict_layers")):
        for _norm in range(5):
            w.own("norm", h * ab)
        w.own("eh_proj", h * 2 * h * ab)
        _mla(w, c, h, par.tp, ab)
        _moe(w, c, h, par, ab)
    if W._int(c, "num_nextn_predict_layers") and all(is_linear_layer(li, group) for li in range(n_layers)):
        w.own("rotary", W._int(c, "max_position_embeddings") * W._int(c, "qk_rope_head_dim") * ab, buffer=True)
    return w.result()


FAMILIES: dict[str, Family] = {"BailingMoeV2_5ForCausalLM": Family(walk)}

"""Step5's weights (``Step5ForCausalLM``, vLLM 0.33.0's ``vllm/models/step5/nvidia/model.py``), as
``Step5ForCausalLM.__init__`` builds them on one rank from vLLM's own ``Step5Config``, in the model
dtype unless said:

* the embedding on the first stage, the final norm (``norm_dtype``) and the untied head on the last;
* per decoder layer: two RMSNorms ``[H]`` (``norm_dtype``); ``Step5Attention`` with ``q_norm`` /
  ``k_norm`` ``[head_dim]`` (``norm_dtype``), ``o_proj`` ``[H, heads / TP x head_dim]`` and, by the
  layer's kind (a sliding layer: ``sliding_window`` set and its type ``sliding_attention``, its
  query heads ``swa_num_attention_heads`` when given):

  - a DSA layer (``sparse_config`` enabled, the layer not sliding): ``Step5FusedQKVIndexerLinear``
    ``[(heads / TP + 2 x KV heads per rank) x head_dim + indexer rows, H]``, the indexer rows
    ``(indexer heads / index_tp_size x groups on the rank + 2) x 256 + heads / TP`` (the
    provider groups ``index_tp_size`` split over TP, or one replicated; one 256-wide indexer KV
    head and its ``z`` on every rank; the head-wise gate), ``sparse_indexer_w``
    ``[indexer heads x groups on the rank / index_tp_size, H]``, the float32 ``ssmax_s``
    ``[heads]`` (whole on every rank), the indexer's RMSNorm ``[256]`` and LayerNorm ``[256]`` +
    bias; and one indexer rotary table per stage ``[max_position_embeddings, 32]``;
  - else, under ``use_head_wise_attn_gate`` with every rank its own KV heads, ``qkvg_proj``
    (``MergedColumnParallelLinear``: ``[(heads + 2 x KV heads) x head_dim + heads] / TP, H]``);
    else ``qkv_proj`` (``QKVParallelLinear``) and, under the gate, ``g_proj`` ``[heads / TP, H]``;

  then a gated MLP of ``intermediate_size`` / TP, or on the layers of ``moe_layers_enum`` /
  ``moe_layer_list`` (every layer from the second by default, whatever ``use_moe`` says)
  ``Step5MoE``: the float32 router ``[E, H]`` and ``router_bias`` ``[E]``, a gated shared expert
  of ``share_expert_dim`` (``moe_intermediate_size x moe_top_k`` when null) / TP and ``E``
  experts of ``moe_intermediate_size`` / TP (``FusedMoE``'s ``w13`` / ``w2``);
  and ``Attention``'s scale buffers;
* one rotary table per stage ``[max_position_embeddings, head_dim]`` (``head_dim``, else
  ``hidden_size`` over the layer's heads: where that differs between sliding and full layers the
  walk refuses, not recorded).

Refused by name: a quantized checkpoint (the DSA layers' fused GEMM cannot be quantized;
other layouts are not recorded), checkpoint headers, expert parallelism (not recorded), a tied
head, and the per-layer rope keys (``rope_scaling``, a ``rope_theta`` list,
``partial_rotary_factors``, ``attention_other_setting``: tables not recorded). Recorded on 0.33.0's
meta device (``tests/fidelity/data/weights/recorded-0.33.0-step5.json``).

Its wrapper (``Step5ForConditionalGeneration``, ``step5/nvidia/vl.py``: Step3p7's frontend over
this text model of ``text_config``, vLLM's ``Step5VLConfig``): the perception-encoder tower and
``vit_large_projector`` of :mod:`.step_vl` (image only: ``--language-model-only`` or image limited
to 0 drops them), whole on every rank under ``--mm-encoder-tp-mode data`` (the class supports it),
on the first pipeline stage alone (0.33.0). Recorded on 0.33.0's meta device
(``recorded-0.33.0-step5-vl.json``).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from dryboot.errors import InputError
from dryboot.vllm.config.hf import ConfigFields
from dryboot.vllm.model_executor.model_loader import weights as W
from dryboot.vllm.model_executor.models.compose import Family, WalkArgs, text_config, unquantized, vision_language
from dryboot.vllm.model_executor.models.step_vl import perception_encoder
from dryboot.vllm.models import step5 as rules

#: ``Step5Config``'s defaults (``transformers_utils/configs/step5.py``) the walk reads
DEFAULTS: dict[str, Any] = {
    "hidden_size": 5120,
    "intermediate_size": 13312,
    "num_attention_heads": 40,
    "num_attention_groups": 8,
    "num_hidden_layers": 48,
    "max_seq_len": 4096,
    "vocab_size": 65536,
    "tie_word_embeddings": False,
    "moe_intermediate_size": 10240,
    "moe_num_experts": 16,
    "moe_top_k": 4,
    "norm_dtype": "bf16",
    "use_head_wise_attn_gate": False,
}
#: ``layernorm.py``'s ``norm_dtype`` names, in bytes per element
NORM_BYTES = {"bf16": 2, "bfloat16": 2, "fp32": 4, "float32": 4, "float": 4}
#: the sparse indexer's head width (``Step5SparseConfig.proxy_dim``, the only one vLLM takes)
PROXY_DIM = 256
#: the indexer's rotary dimensions (``sparse_indexer_rope_dim``'s default; dryboot plans no other)
INDEXER_ROPE_DIM = 32
#: per-layer rope keys whose tables are not recorded
_ROPE_KEYS = ("rope_scaling", "partial_rotary_factors", "attention_other_setting", "yarn_only_types")


def _refuse_unrecorded(config: Mapping[str, Any], par: W.Parallel) -> None:
    """:raises InputError: expert parallelism, a per-layer rope key (module docstring)."""
    if par.expert_parallel:
        raise InputError(
            "--enable-expert-parallel", None, "Step5ForCausalLM under expert parallelism is not modelled (not recorded)"
        )
    for key in _ROPE_KEYS:
        if config.get(key):
            raise InputError("config.json", key, "Step5's rotary tables under it are not modelled (not recorded)")
    if isinstance(config.get("rope_theta"), list):
        raise InputError("config.json", "rope_theta", "a rope_theta per layer is not modelled for Step5's weights")


def _dsa_sizes(h: int, hd: int, nq: int, nkv: int, sparse: Mapping[str, int], tp: int) -> tuple[list[int], int]:
    """A DSA layer's attention tensors on the rank in elements (model dtype: fused projection,
    ``sparse_indexer_w``, the indexer's norm and LayerNorm weight and bias) and ``ssmax_s``'s
    float32 elements."""
    itp, nih = sparse["index_tp_size"], sparse["sparse_indexer_num_heads"]
    groups = rules.groups_per_rank(itp, tp, "index_tp_size")
    qkv = (W._divide(nq, tp, "num_attention_heads") + 2 * W.kv_heads_per_rank(nkv, tp, "num_attention_groups")) * hd
    indexer = (nih // itp * groups + 2) * PROXY_DIM + nq // tp
    return [(qkv + indexer) * h, nih * groups // itp * h, PROXY_DIM, PROXY_DIM, PROXY_DIM], nq


def _attention_sizes(h: int, hd: int, nq: int, nkv: int, gate: bool, tp: int) -> list[int]:
    """A non-DSA layer's projections on the rank in elements (module docstring)."""
    nq_r = W._divide(nq, tp, "num_attention_heads")
    nkv_r = W.kv_heads_per_rank(nkv, tp, "num_attention_groups")
    if gate and nkv >= tp:
        return [((nq + 2 * nkv) * hd + nq) // tp * h]
    return [(nq_r + 2 * nkv_r) * hd * h, *([nq_r * h] if gate else [])]


def _walk(config: Mapping[str, Any], par: W.Parallel, args: WalkArgs) -> W.RankWeights:
    """One rank of one stage of Step5 (module docstring).

    :raises InputError: as the module docstring lists; sizes TP does not divide; vLLM's refusals of
        the config as the planner reads them (``models/step5.py``)."""
    if W.quant_from_config(config, args.hf_quant).method is not None:
        raise InputError(
            "quantization_config",
            "quant_method",
            "quantized Step5ForCausalLM is not modelled (its DSA layers' fused QKV + indexer GEMM cannot be "
            "quantized: vLLM refuses it; the other layers' quantized layouts are not recorded)",
        )
    if par.capability is not None and par.capability[0] != 9 and par.kv_cache_dtype.startswith("fp8"):
        raise InputError(
            "--kv-cache-dtype",
            par.kv_cache_dtype,
            "Step5's layers pin FlashAttention, which takes an fp8 KV cache on SM 9.x only here (vLLM refuses "
            "it on SM 8.x: recorded on RTX 4090; other GPUs not recorded)",
        )
    c, ab = unquantized(config, args, DEFAULTS, untied="Step5")
    _refuse_unrecorded(c, par)
    raw = ConfigFields("config.json", dict(config), "")
    f = raw.with_defaults(rules.defaults(raw))
    # the planner's reading and vLLM's refusals of its geometry on TP ranks (heads, KV and provider groups)
    rules.verify(rules.read(f, "Step5ForCausalLM"), par.tp)
    tp, h = par.tp, W._int(c, "hidden_size")
    n = W._int(c, "num_hidden_layers")
    nb = NORM_BYTES.get(str(c["norm_dtype"]).lower())
    if nb is None:
        raise InputError("config.json", "norm_dtype", f"{c['norm_dtype']!r}: vLLM's Step5 knows no such norm dtype")
    sparse = rules._sparse(f)
    types = rules._layer_types(f, n)
    given = bool(c.get("layer_types_with_mtp") or c.get("layer_types"))
    moe = rules._moe_layers(f, n)
    rules._check_moe(f, moe, n)
    window = c.get("sliding_window") is not None
    nq_all, nkv = W._int(c, "num_attention_heads"), W._int(c, "num_attention_groups")
    head_dim = c.get("head_dim")
    gate = bool(c.get("use_head_wise_attn_gate"))
    e, moe_i = W._int(c, "moe_num_experts"), W._int(c, "moe_intermediate_size")
    share = c.get("share_expert_dim") or moe_i * W._int(c, "moe_top_k")
    positions = c.get("max_position_embeddings") or W._int(c, "max_seq_len")
    w = W._Walk(None, par.vllm_version)
    if par.pp_rank == 0:
        w.own("embedding", W.padded_vocab_per_rank(W._int(c, "vocab_size"), tp) * h * ab)
    if par.pp_rank == par.pp - 1:
        w.own("lm_head", W.padded_vocab_per_rank(W._int(c, "vocab_size"), tp) * h * ab)
        w.own("norm", h * nb)
    layers = W.pp_layers(n, par)
    dsa_on_stage = False
    tables: set[int] = set()  # get_rope's cache: one table per head size (the rope is the same otherwise)
    for li in layers:
        sliding = window and types[li] == rules.SLIDING
        nq = c.get("swa_num_attention_heads") or nq_all if sliding else nq_all
        dsa = sparse is not None and not sliding and (not given or types[li] == rules.FULL)
        hd = head_dim or h // nq  # the layer's heads (a sliding layer's swa_num_attention_heads)
        tables.add(hd)
        for width in (h, h, hd, hd):  # the layer's two norms, q_norm, k_norm
            w.own("norm", width * nb)
        w.own("attention", h * W._divide(nq, tp, "num_attention_heads") * hd * ab)
        if dsa and sparse is not None:
            sizes, ssmax = _dsa_sizes(h, hd, nq, nkv, sparse, tp)
            w.own("ssmax", 4 * ssmax)
            dsa_on_stage = True
        else:
            sizes = _attention_sizes(h, hd, nq, nkv, gate, tp)
        if li in moe:
            W.refuse_tp_above_experts(tp, e)
            w.own("router", 4 * e * h)  # float32 gate and router_bias
            w.own("router", 4 * e)
            sizes += W.dense_mlp_sizes(h, share, tp, "share_expert_dim")
            i_r = W._divide(moe_i, tp, "moe_intermediate_size")
            sizes += [e * 2 * i_r * h, e * h * i_r]
        else:
            sizes += W.dense_mlp_sizes(h, W._int(c, "intermediate_size"), tp)
        w.attention_layer(sizes, ab)
    if len(tables) > 1:
        raise InputError(
            "config.json",
            "head_dim",
            "absent, with swa_num_attention_heads other than num_attention_heads: a head size per layer kind "
            "(hidden_size // heads) is not modelled for Step5's weights (not recorded)",
        )
    for hd in tables:
        w.own("rotary", positions * hd * ab, buffer=True)
    if dsa_on_stage:
        w.own("rotary", positions * INDEXER_ROPE_DIM * ab, buffer=True)
    rank = w.result()
    # every layer pins its own backend (Step5SplitKVFlashAttentionBackend, Step5DSAAttentionBackend):
    # no FlashInferImpl, no FlashInfer KV counter
    W.flashinfer_counter_layers(rank, par, args.max_num_batched_tokens, [])
    return rank


def _frontend(config: Mapping[str, Any], text: Mapping[str, Any], tp: int, ab: int) -> W.RankWeights:
    """The wrapper's perception encoder and projector (:func:`.step_vl.perception_encoder`)."""
    vision = config.get("vision_config") or {}
    hidden = W._int({**DEFAULTS, **text}, "hidden_size")
    return perception_encoder(vision, hidden, bool(config.get("projector_bias", False)), tp, ab)


FAMILIES: dict[str, Family] = {
    "Step5ForCausalLM": Family(_walk),
    "Step5ForConditionalGeneration": vision_language(
        Family(_walk), _frontend, modalities=("image",), text_of=text_config, tower_of=lambda config: config
    ),
}

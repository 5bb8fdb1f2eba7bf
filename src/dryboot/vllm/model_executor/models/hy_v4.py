"""HY V4's weights (``HYV4ForCausalLM``, vLLM 0.29.0-0.33.0:
``vllm/models/hy_v4/nvidia/model.py``, config class ``HYV4Config``,
``transformers_utils/configs/hy_v4.py``): its layers sparse (DSA) where ``layer_types`` names a
sparse type, dense MLA where it says ``full_attention`` or is left out (``HYV4MLAAttention``'s
``requested_sparse``); on 0.29.0 / 0.30.0 every layer dense MLA whatever ``layer_types`` says
(their transformers renames the sparse layer type: switch ``hy_v4_dense_layers``, the KV cache's
reading in ``models/hy_v4.py``), so no indexer and every sink bfloat16. 0.31.0 builds 0.32.0's
weights (its indexer ``k_norm`` is vLLM's ``LayerNorm`` with no dtype argument, float32 on that
release as the ``dtype=torch.float32`` of 0.32+ makes it), but its transformers (5.17) refuses a
``layer_types`` naming ``indexed_attention`` when the config is read (``models/hy_v4.py``
``refuses_indexed``; 0.29.0 / 0.30.0 take it as a dense layer, 0.32+ as a sparse one).

Per layer: ``input_layernorm`` and ``post_attention_layernorm`` ``[H]``; the gated MLA
(``attention.py`` ``HYV4MLAAttention``): ``fused_qkv_a_proj`` ``[q_lora + kv_lora + rope, H]``
(replicated), ``q_a_layernorm``, ``q_b_proj`` ``[heads / TP x (nope + rope), q_lora]``,
``kv_a_layernorm``, ``kv_b_proj`` ``[heads / TP x (nope + v), kv_lora]``, ``o_proj``, the output
gate ``linear_gate`` ``[heads / TP x (v, or 1 headwise), H]`` (``gated_mla``), the learnable sink
``[heads / TP]`` (on a sparse layer float32 where the sink-capable sparse MLA backend serves it:
SM 9.x / 10.x with the KV dtypes it takes, the GPU needed; on a dense layer bfloat16 on any GPU:
no CUDA dense MLA backend takes sinks and ``HYV4FlashMLASparseBackend`` is sparse only, so
``_resolve_sink_backend`` finds none), the MLA layer's scale buffers, and on the sparse layers
whose ``indexer_types`` entry is ``full`` the DSA indexer (replicated ``wq_b`` ``[index_heads x
index_head_dim, q_lora]``, ``wk_weights_proj`` ``[index_head_dim + index_heads, H]``, a float32
LayerNorm ``k_norm`` with bias); a dense MLP on the ``dense`` entries of ``mlp_layer_types`` (by
default the first layer), else the MoE block (``moe.py``: a float32 router ``[E, H]`` and
``expert_bias`` ``[E]``, the shared experts of ``moe_intermediate_size x n_shared_experts``, the
routed experts); with ``enable_ihc`` two hyper-connection pre-layers (``hc.py``
``HYV4HCPreLayer``, float32: ``hc_fn`` ``[2 m, m H]``, ``hc_scale`` ``[2]``, ``hc_base`` ``[2 m]``
for ``hc_mult`` m). One rotary table ``[max_position_embeddings, rope]`` in the model dtype
(the indexer's is the same cached one), and the model's ``[max_num_batched_tokens, index_topk]``
int32 top-k indices buffer (a tensor attribute: allocated, neither parameter nor buffer). The
embedding on the first stage, the final norm, the hyper-connection head (``hc_head_fn`` ``[m,
m H]``, ``hc_head_base`` ``[m]``, ``hc_head_scale`` ``[1]``, float32) and the LM head on the
last.

Refused by name: layer types other than ``full_attention`` and the sparse ones, rope types other
than ``default``, a tied head, quantized checkpoints and checkpoint headers, the sink on a GPU or
KV dtype not recorded, ``indexed_attention`` on 0.31.0 (as vLLM refuses it), releases before
0.29.0 (not in their registry). The optional ``hpc`` package (its rope-norm module keeps a float32 table; absent from
the vLLM wheel) is assumed absent, as in the oracle."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from dryboot.errors import InputError
from dryboot.vllm.model_executor.model_loader import weights as W
from dryboot.vllm.model_executor.models.compose import Family, WalkArgs, unquantized
from dryboot.vllm.models.hy_v4 import DEFAULTS as GEOMETRY_DEFAULTS
from dryboot.vllm.models.hy_v4 import (
    DENSE_TYPE,
    INDEXED_TYPE,
    SINK_BACKEND_KV_DTYPES,
    SINK_BACKEND_MAJORS,
    SPARSE_TYPES,
    default_indexer_types,
    indexed_refusal,
    refuses_indexed,
)
from dryboot.vllm.versions import rules_for

#: ``HYV4Config``'s defaults of the keys the walk reads: the geometry's and the MLP's, iHC's and the head's
DEFAULTS: dict[str, Any] = {
    **GEOMETRY_DEFAULTS,
    "vocab_size": 120832,
    "intermediate_size": 6912,
    "moe_intermediate_size": 768,
    "n_routed_experts": 256,
    "n_shared_experts": 1,
    "enable_ihc": True,
    "hc_mult": 4,
    "gated_mla": True,
    "gating_type": "elementwise",
    "tie_word_embeddings": False,
}
#: the releases whose ``models/hy_v4`` this module sizes (recorded; 0.29.0 / 0.30.0 build every layer
#: dense MLA: switch ``hy_v4_dense_layers``; 0.31.0 refuses ``indexed_attention``: ``refuses_indexed``)
RELEASES = ("0.29.0", "0.30.0", "0.31.0", "0.32.0", "0.33.0")


def _layer_kinds(
    c: Mapping[str, Any], n: int, dense_only: bool = False
) -> tuple[tuple[bool, ...], tuple[str, ...], tuple[str, ...]]:
    """(sparse per layer, ``indexer_types``, ``mlp_layer_types``) as ``HYV4Config`` fills them in:
    a layer is sparse where ``layer_types`` names a sparse type (``HYV4MLAAttention``'s
    ``requested_sparse``), dense MLA where it says ``full_attention`` or is left out; under
    ``dense_only`` (switch ``hy_v4_dense_layers``) every layer is dense and ``indexer_types`` is
    not read (no sparse layer calls ``compute_skip_topk_layers``).

    :raises InputError: lists of another length or other entries (``indexer_types``: vLLM's
        ``compute_skip_topk_layers`` ValueErrors)."""
    layer_types = c.get("layer_types")
    if layer_types is None:
        sparse: tuple[bool, ...] = (False,) * n
    elif isinstance(layer_types, list) and len(layer_types) == n and set(layer_types) <= SPARSE_TYPES | {DENSE_TYPE}:
        sparse = tuple(t in SPARSE_TYPES for t in layer_types)
    else:
        raise InputError(
            "config.json",
            "layer_types",
            f"one of {DENSE_TYPE} or a sparse type per layer ({n}): HY V4's other layer types are not modelled",
        )
    idx = c.get("indexer_types")
    idx = default_indexer_types(n) if idx is None or dense_only else idx
    sparse = (False,) * n if dense_only else sparse
    mlp = c.get("mlp_layer_types")
    mlp = ["dense"] * min(1, n) + ["sparse"] * max(n - 1, 0) if mlp is None else mlp
    if isinstance(idx, (list, tuple)) and len(idx) != n:
        raise InputError(
            "config.json",
            "indexer_types",
            f"ValueError: indexer_types must contain one entry per hidden layer: expected {n}, got {len(idx)}.",
        )
    for key, value, kinds in (
        ("indexer_types", idx, {"full", "shared"}),
        ("mlp_layer_types", mlp, {"dense", "sparse"}),
    ):
        if not isinstance(value, (list, tuple)) or len(value) != n or not set(value) <= kinds:
            raise InputError("config.json", key, f"one of {sorted(kinds)} per layer ({n})")
    return sparse, tuple(idx), tuple(mlp)


def _sink_bytes(c: Mapping[str, Any], par: W.Parallel) -> int:
    """Bytes per element of the learnable sink: float32 where the sink-capable sparse MLA backend
    serves it.

    :raises InputError: the GPU unknown, or one where the sink's backend is not recorded."""
    cap = par.capability
    if cap is None:
        raise InputError(
            "--gpu", None, "HY V4's learnable sink is float32 or bfloat16 by the GPU's MLA backend: name the GPU"
        )
    if cap[0] not in SINK_BACKEND_MAJORS or par.kv_cache_dtype not in SINK_BACKEND_KV_DTYPES:
        raise InputError(
            "--gpu",
            None,
            f"HY V4's learnable sink on SM {cap[0]}.{cap[1]} with --kv-cache-dtype {par.kv_cache_dtype} "
            "is not recorded",
        )
    return 4


def _attention(w: W._Walk, c: Mapping[str, Any], par: W.Parallel, sparse: bool, indexer: bool, ab: int) -> None:
    h = W._int(c, "hidden_size")
    heads_r = W._divide(W._int(c, "num_attention_heads"), par.tp, "num_attention_heads")
    nope, rope, v = (W._int(c, k) for k in ("qk_nope_head_dim", "qk_rope_head_dim", "v_head_dim"))
    q_lora, kv_lora = W._int(c, "q_lora_rank"), W._int(c, "kv_lora_rank")
    sizes = list(W.q_lora_mla_sizes(h, heads_r, nope, rope, v, q_lora, kv_lora))
    if c.get("gated_mla"):
        kind = c.get("gating_type")
        if kind not in ("elementwise", "headwise"):
            raise InputError("config.json", "gating_type", f"ValueError: Unknown gating type: {kind}")
        sizes.append(heads_r * (v if kind == "elementwise" else 1) * h)
    for size in sizes:
        w.own("attention", size * ab)
    if c.get("learnable_sink"):
        # a dense layer finds no sink-capable backend (none of CUDA's dense MLA backends takes
        # sinks; HY V4's FLASHMLA_SPARSE is sparse only): its sink stays bfloat16
        w.own("attention", heads_r * (_sink_bytes(c, par) if sparse else 2))
    w.attention_layer((), ab)  # the MLA layer's scale buffers
    if indexer:
        ih, ihd = W._int(c, "index_n_heads"), W._int(c, "index_head_dim")
        w.own("indexer", ih * ihd * q_lora * ab)
        w.own("indexer", (ihd + ih) * h * ab)
        w.own("indexer", 2 * ihd * 4)  # k_norm: float32 weight and bias


def _mlp(w: W._Walk, c: Mapping[str, Any], par: W.Parallel, dense: bool, ab: int) -> None:
    h = W._int(c, "hidden_size")
    if dense:
        i_r = W._divide(W._int(c, "intermediate_size"), par.tp, "intermediate_size")
        w.own("mlp", 3 * i_r * h * ab)
        return
    e, i = W._int(c, "n_routed_experts"), W._int(c, "moe_intermediate_size")
    if par.tp > e:
        raise InputError(
            "--tensor-parallel-size",
            None,
            f"ValueError: Tensor parallel size {par.tp} is greater than the number of experts {e}.",
        )
    w.own("router", e * h * 4)
    w.own("router", e * 4)  # expert_bias
    shared = i * W._int(c, "n_shared_experts")
    if shared:
        s_r = W._divide(shared, par.tp, "the shared experts' width")
        w.own("mlp", 3 * s_r * h * ab)
    w.experts(e, h, i, par, ab, "moe_intermediate_size")


def walk(config: Mapping[str, Any], par: W.Parallel, args: WalkArgs) -> W.RankWeights:
    """One rank of one stage (module docstring).

    :raises InputError: what the module docstring names, sizes TP does not divide, TP above the
        experts (vLLM's ValueError), no ``max_num_batched_tokens``."""
    rules = rules_for(par.vllm_version)
    if rules.version not in RELEASES:
        raise InputError(
            "--vllm",
            None,
            f"HY V4's weights are recorded on vLLM {RELEASES[0]}-{RELEASES[-1]} only (vLLM {par.vllm_version}: "
            "not recorded)",
        )
    c, ab = unquantized(config, args, DEFAULTS, untied="HY V4")
    layer_types = c.get("layer_types")
    if isinstance(layer_types, list) and INDEXED_TYPE in layer_types and refuses_indexed(rules):
        raise InputError("config.json", "layer_types", indexed_refusal(rules.version))
    rope = c.get("rope_parameters") or {}
    if not isinstance(rope, Mapping) or rope.get("rope_type", "default") != "default":
        raise InputError("config.json", "rope_parameters", "HY V4 with a rope type other than default is not modelled")
    if args.max_num_batched_tokens is None:
        raise InputError("--max-num-batched-tokens", None, "HY V4's top-k indices buffer has one row per batched token")
    n = W._int(c, "num_hidden_layers")
    sparse, idx, mlp = _layer_kinds(c, n, rules.hy_v4_dense_layers)
    h = W._int(c, "hidden_size")
    m = W._int(c, "hc_mult") if c.get("enable_ihc") else 0
    vocab_r = W.padded_vocab_per_rank(W._int(c, "vocab_size"), par.tp)
    w = W._Walk(None, par.vllm_version)
    w.own("rotary", W._int(c, "max_position_embeddings") * W._int(c, "qk_rope_head_dim") * ab, buffer=True)
    # the model's top-k indices: a tensor attribute, allocated with the weights
    topk = args.max_num_batched_tokens * W._int(c, "index_topk") * 4
    w.ref.allocated_bytes += -(-topk // W.ALLOC_ROUND) * W.ALLOC_ROUND
    if par.pp_rank == 0:
        w.own("embedding", vocab_r * h * ab)
    if par.pp_rank == par.pp - 1:
        w.own("norm", h * ab)
        if m:
            for size in (m * m * h, m, 1):  # hc_head_fn, hc_head_base, hc_head_scale
                w.own("hyper-connections", size * 4)
        w.own("lm_head", vocab_r * h * ab)
    for li in W.pp_layers(n, par):
        w.own("norm", h * ab)
        w.own("norm", h * ab)
        _attention(w, c, par, sparse[li], sparse[li] and idx[li] == "full", ab)
        _mlp(w, c, par, mlp[li] == "dense", ab)
        for _ in range(2 if m else 0):  # hc_attn_layer, hc_mlp_layer: hc_fn, hc_scale, hc_base
            for size in (2 * m * m * h, 2, 2 * m):
                w.own("hyper-connections", size * 4)
    return w.result()


FAMILIES: dict[str, Family] = {"HYV4ForCausalLM": Family(walk)}

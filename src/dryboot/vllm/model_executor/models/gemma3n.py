"""Gemma 3n text model (``gemma3n.py``, ``Gemma3nForCausalLM``): the embedding ``[vocab padded /
TP, H]`` (the head tied to it), the per-layer embedding ``embed_tokens_per_layer`` ``[per-layer
vocab padded / TP, L x P]`` and its ``per_layer_model_projection`` ``[L x P / TP, H]``, a norm
``[P]``, ``altup_num_inputs - 1`` AltUp projections and as many unembedding projections
(``[H / TP, H]`` each), the final norm, and four scalars the model keeps as tensors
(``embed_scale``, ``embed_scale_per_layer``, ``per_layer_input_scale``,
``per_layer_projection_scale``: one 512-byte block each).
Per layer (``P = hidden_size_per_layer_input``, ``n = altup_num_inputs``): AltUp's float32
``correct_output_scale`` ``[H]``, ``correction_coefs`` ``[n, n]``, ``prediction_coefs`` ``[n^2,
n]``, ``modality_router`` ``[n, H]``, ``router_norm`` ``[H]``; attention (``qkv_proj``, ``o_proj``,
per-head q/k norms; key/value heads below TP replicated; the KV-shared layers keep their
projections); a gated MLP of the layer's ``intermediate_size`` (a list per layer or one value);
LAuReL ``linear_left`` ``[rank / TP, H]``, ``linear_right`` ``[H, rank / TP]`` and its norm; the
replicated ``per_layer_input_gate`` ``[P, H]`` and ``per_layer_projection`` ``[H, P]``; five
norms ``[H]``; as tensor attributes AltUp's scalar ``router_input_scale``, the weightless
``v_norm``'s ones ``[head_dim]`` and, where ``activation_sparsity_pattern`` is above 0, the
activation's float32 ``std_multiplier``. One rotary table per layer type present
(``layer_types``: every fifth layer full attention by default), ``[max_position_embeddings,
head_dim]``. No pipeline parallelism (vLLM refuses it).

By release (each recorded on the meta device, ``tests/fidelity/data/weights/``): 0.29.0+ registers
the five scalars (the four above and ``router_input_scale``) as non-persistent buffers
(:data:`SCALAR_BUFFERS`); 0.30.0+ builds a KV-shared layer (the last ``num_kv_shared_layers``) with
``q_proj`` alone, no ``k_norm`` / ``v_norm``, and ``GeluAndMulSparse`` keeps its cutoff as a Python
float, not a tensor (:data:`Q_ONLY_SHARED`)."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from dryboot.errors import InputError
from dryboot.vllm.model_executor.model_loader import weights as W
from dryboot.vllm.model_executor.models.compose import Family, WalkArgs, unquantized, without_pp

#: ``Gemma3nTextConfig``'s defaults (transformers 5.x) the walk reads
DEFAULTS: dict[str, Any] = {
    "vocab_size": 262_400,
    "hidden_size": 2048,
    "intermediate_size": 16_384,
    "num_hidden_layers": 35,
    "num_attention_heads": 8,
    "num_key_value_heads": 2,
    "head_dim": 256,
    "max_position_embeddings": 32_768,
    "vocab_size_per_layer_input": 262_144,
    "hidden_size_per_layer_input": 256,
    "altup_num_inputs": 4,
    "laurel_rank": 64,
    "tie_word_embeddings": True,
    "num_kv_shared_layers": 15,
}

#: releases whose ``gemma3n.py`` registers ``embed_scale``, ``embed_scale_per_layer``,
#: ``per_layer_input_scale``, ``per_layer_projection_scale`` and AltUp's ``router_input_scale`` as
#: non-persistent buffers (0.27.1 / 0.28.0: tensor attributes, in the allocated bytes only)
SCALAR_BUFFERS = frozenset({"0.29.0", "0.30.0", "0.31.0", "0.32.0", "0.33.0"})
#: releases whose KV-shared layers build ``q_proj`` (``ColumnParallelLinear``) and no ``k_norm`` /
#: ``v_norm`` (K/V come from the target layer's cache), and whose ``GeluAndMulSparse`` reads its
#: cutoff with ``Tensor.item()`` (no float32 tensor attribute)
Q_ONLY_SHARED = frozenset({"0.30.0", "0.31.0", "0.32.0", "0.33.0"})


def _rope(config: Mapping[str, Any], kind: str) -> Mapping[str, Any]:
    rope = config.get("rope_parameters") or {}
    if not isinstance(rope, Mapping):
        return {}
    own = rope.get(kind)
    return own if isinstance(own, Mapping) else rope


def walk(config: Mapping[str, Any], par: W.Parallel, args: WalkArgs) -> W.RankWeights:
    """One rank (module docstring).

    :raises InputError: a quantization method, checkpoint headers, an untied head, sizes TP does
        not divide."""
    config, ab = unquantized(config, args, DEFAULTS)
    if not config.get("tie_word_embeddings"):
        raise InputError("config.json", "tie_word_embeddings", "an untied Gemma 3n head is not modelled")
    tp = par.tp
    h, n_layers = W._int(config, "hidden_size"), W._int(config, "num_hidden_layers")
    nq, nkv, hd = (W._int(config, k) for k in ("num_attention_heads", "num_key_value_heads", "head_dim"))
    p, n, rank = (W._int(config, k) for k in ("hidden_size_per_layer_input", "altup_num_inputs", "laurel_rank"))
    nq_r = W._divide(nq, tp, "num_attention_heads")
    nkv_r = W.kv_heads_per_rank(nkv, tp)
    inter = config.get("intermediate_size")
    widths = inter if isinstance(inter, list) else [inter] * n_layers
    if len(widths) < n_layers:
        raise InputError("config.json", "intermediate_size", "a list shorter than num_hidden_layers")
    types = config.get("layer_types") or [
        "full_attention" if (i + 1) % 5 == 0 else "sliding_attention" for i in range(n_layers)
    ]
    w = W._Walk(None, par.vllm_version)
    sizes = [
        W.padded_vocab_per_rank(W._int(config, "vocab_size"), tp) * h,
        W.padded_vocab_per_rank(W._int(config, "vocab_size_per_layer_input"), tp, "the padded per-layer vocabulary")
        * n_layers
        * p,
        W._divide(n_layers * p, tp, "num_hidden_layers x hidden_size_per_layer_input") * h,
        p,
        h,
        *[W._divide(h, tp, "hidden_size") * h] * (2 * (n - 1)),
    ]
    for size in sizes:
        w.own("embedding", size * ab)
    scalar_buffers = par.vllm_version in SCALAR_BUFFERS
    q_only = par.vllm_version in Q_ONLY_SHARED
    first_shared = n_layers - W._int(config, "num_kv_shared_layers")
    for _ in range(4):  # the four scalar tensors
        _scalar(w, ab, scalar_buffers)
    sparsity = config.get("activation_sparsity_pattern") or 0.0
    sparse = sparsity if isinstance(sparsity, list) else [sparsity] * n_layers
    for li in range(n_layers):
        i_r = W._divide(W._int({"i": widths[li]}, "i"), tp, "intermediate_size")
        w.own("altup", 4 * h)
        layer = [n * n, n * n * n, n * h, h]  # AltUp
        shared = q_only and li >= first_shared
        if shared:  # q_proj, o_proj, q_norm
            layer += [nq_r * hd * h, h * nq_r * hd, hd]
        else:  # qkv_proj, o_proj, q_norm, k_norm
            layer += [(nq_r + 2 * nkv_r) * hd * h, h * nq_r * hd, hd, hd]
        layer += [2 * i_r * h, h * i_r]  # MLP
        r_r = W._divide(rank, tp, "laurel_rank")
        layer += [r_r * h, h * r_r, h, p * h, h * p, h, h, h, h, h]
        for size in layer:
            w.own("weight", size * ab)
        w.own("attention scales", 16, buffer=True)
        w.ref.allocated_bytes += w.attention_blocks * W.ALLOC_ROUND
        _scalar(w, ab, scalar_buffers)  # AltUp's router_input_scale
        # tensors kept as attributes: the weightless v_norm's ones [head_dim] (none on a q-only
        # shared layer), and on a layer with activation sparsity the float32 std_multiplier (a
        # float from 0.30.0)
        cutoff = not q_only and li < len(sparse) and float(sparse[li]) > 0
        extra = [*([] if shared else [hd * ab]), *([4] if cutoff else [])]
        w.ref.allocated_bytes += sum(-(-b // W.ALLOC_ROUND) * W.ALLOC_ROUND for b in extra)
    for kind in sorted(set(types[:n_layers])):
        rope = {"max_position_embeddings": config["max_position_embeddings"], "rope_parameters": _rope(config, kind)}
        w.own("rotary", W._rotary_bytes(rope, hd, ab), buffer=True)
    return w.result()


def _scalar(w: W._Walk, ab: int, buffer: bool) -> None:
    """One scalar tensor in the model dtype: a non-persistent buffer (``buffer``), else a tensor
    attribute (one allocator block, outside the buffer bytes)."""
    if buffer:
        w.own("scalars", ab, buffer=True)
    else:
        w.ref.allocated_bytes += W.ALLOC_ROUND


FAMILIES: dict[str, Family] = {"Gemma3nForCausalLM": without_pp(Family(walk))}

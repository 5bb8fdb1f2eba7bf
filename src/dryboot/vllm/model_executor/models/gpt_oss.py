"""gpt-oss (``gpt_oss.py``, ``GptOssForCausalLM``), its unquantized layout; the embedding, the
final norm and the LM head (untied) on every pipeline stage, then per layer:

* two RMSNorms ``[H]``;
* attention: ``sinks`` ``[heads / TP]`` (model dtype), ``qkv_proj`` (QKVParallelLinear) and
  ``o_proj`` (RowParallelLinear, bias whole), both with biases; the four float32 scale buffers;
* the MoE block: ``router`` (ReplicatedLinear ``[E, H]`` + bias ``[E]``, never quantized) and the
  experts (``FusedMoE`` with ``has_bias``): ``w13`` ``[E_local, 2 I_local, H]`` + ``w13_bias``
  ``[E_local, 2 I_local]``, ``w2`` ``[E_local, H, I_local]`` + ``w2_bias`` ``[E_local, H]``
  (``I / TP``, or under ``--enable-expert-parallel`` ``ceil(E / (TP x DP))`` whole experts and
  the int32 expert map ``[E]``);
* one YaRN rotary table per stage, in float32 (``get_rope(dtype=torch.float32)``),
  ``original_max_position_embeddings x factor`` positions of ``head_dim``.

The experts' weights are the quantization method's (``weights.experts_bytes``): the MXFP4 layout
of the published checkpoints belongs to that dispatch (refused there today), as do the
quantized experts' biases (:func:`expert_biases`).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from dryboot.errors import InputError
from dryboot.vllm.model_executor.model_loader import weights as W
from dryboot.vllm.model_executor.models.compose import Family, WalkArgs, config_only


def expert_biases(quant: W.Quant, e: int, h: int, i: int, ab: int) -> list[tuple[str, int]]:
    """The experts' biases a ``FusedMoE`` with ``has_bias`` allocates on a rank: ``w13_bias``
    ``[e, 2 i]`` and ``w2_bias`` ``[e, h]`` in the model dtype (unquantized).

    :raises InputError: a quantization method (its biases' layout is the method's, not
        modelled here)."""
    if quant.method is not None:
        raise InputError("quantization_config", "quant_method", f"gpt-oss experts under {quant.method}: not modelled")
    return [("experts", e * 2 * i * ab), ("experts", e * h * ab)]


def walk(config: Mapping[str, Any], par: W.Parallel, args: WalkArgs) -> W.RankWeights:
    """One rank of one stage (module docstring).

    :raises InputError: heads, KV heads or the intermediate size TP does not divide, a
        quantization method, checkpoint headers (not mapped)."""
    config_only(config, args)
    quant = W.quant_from_config(config, args.hf_quant)
    ab = W.model_dtype_bytes(config, args.dtype)
    tp = par.tp
    h, e, inter = (
        W._int(config, "hidden_size"),
        W._int(config, "num_local_experts"),
        W._int(config, "intermediate_size"),
    )
    nq, nkv, hd = (
        W._int(config, "num_attention_heads"),
        W._int(config, "num_key_value_heads"),
        W._int(config, "head_dim"),
    )
    nq_r = W._divide(nq, tp, "num_attention_heads")
    nkv_r = W._divide(nkv, tp, "num_key_value_heads") if nkv >= tp else 1
    vocab_r = W._divide(
        -(-W._int(config, "vocab_size") // W.VOCAB_PADDING) * W.VOCAB_PADDING, tp, "the padded vocabulary"
    )
    w = W._Walk(None)
    for _ in range(2):  # embedding and the untied LM head, on every stage
        w.own("embedding", vocab_r * h * ab)
    w.own("norm", h * ab)
    if par.expert_parallel:
        e_r, i_r = W._local_experts(e, tp * par.dp), inter
    else:
        e_r, i_r = e, W._divide(inter, tp, "intermediate_size")
    layers = W.pp_layers(W._int(config, "num_hidden_layers"), par)
    qkv = (nq_r + 2 * nkv_r) * hd
    for _ in layers:
        for n in (h, h, nq_r, qkv * h, qkv, h * nq_r * hd, h, e * h, e):  # norms, sinks, qkv, o_proj, router
            w.own("attention", n * ab)
        for kind, nbytes in [*W.experts_bytes(quant, e_r, h, i_r, ab), *expert_biases(quant, e_r, h, i_r, ab)]:
            w.own(kind, nbytes)
        if par.expert_parallel:
            w.own("expert map", 4 * e, buffer=True)
        w.own("attention scales", 16, buffer=True)
        w.ref.allocated_bytes += W.ATTENTION_EXTRA_BLOCKS * W.ALLOC_ROUND
    if layers:
        w.own("rotary", W._rotary_bytes(config, hd, 4), buffer=True)  # float32
    return w.result()


FAMILIES: dict[str, Family] = {"GptOssForCausalLM": Family(walk)}

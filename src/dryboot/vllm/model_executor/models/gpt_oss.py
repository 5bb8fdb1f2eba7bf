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
from dryboot.vllm.model_executor.models.compose import Family, WalkArgs, moe_decoder_dims


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
    d = moe_decoder_dims(config, par, args)
    quant, ab, h, e, hd = d.quant, d.ab, d.h, d.e, d.hd
    w = W._Walk(None)
    for _ in range(2):  # embedding and the untied LM head, on every stage
        w.own("embedding", d.vocab_r * h * ab)
    w.own("norm", h * ab)
    nq_r, e_r, i_r, layers = d.nq_r, d.e_r, d.i_r, d.layers
    qkv = (nq_r + 2 * d.nkv_r) * hd
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

"""MiniMax-M2 (``minimax_m2.py``, ``MiniMaxM2ForCausalLM``): the embedding on the first pipeline
stage, the final norm and the untied LM head on the last, then per layer:

* two RMSNorms ``[H]``;
* attention: ``qkv_proj`` / ``o_proj`` (quantized as the checkpoint says), the q/k norms over
  the whole projection (``MiniMaxText01RMSNormTP``: ``q_norm`` ``[heads x head_dim / TP]``,
  ``k_norm`` ``[kv_heads x head_dim / TP]``, one KV head's when KV heads are replicated);
* the MoE block: ``gate`` (float32 ``[E, H]``, never quantized), the float32
  ``e_score_correction_bias`` ``[E]`` under ``use_routing_bias``, the experts
  (``weights.experts_bytes``; GPTQ / AWQ: repacked for the GPU named, ``wna16_experts_bytes``,
  with no KV-cache scale parameters and the default scales moved to the host after loading);
* one rotary table ``[max_position_embeddings, rotary_dim]`` per stage.

vLLM refuses TP above the number of experts. At TP > 1, where the GPUs have P2P access, the q/k
norms' fused all-reduce builds one Lamport workspace per rank (``lamport_workspace.py``, 0.27.1-0.33.0):
three 2 MiB slots by ``cudaMalloc`` (outside torch's allocator: non-torch memory, not ``Model loading
took``) and three small device tensors in torch's allocator (one 512-byte block each:
:data:`LAMPORT_TORCH_BYTES`). Without P2P vLLM warns and builds none; the figure is that layout
(the oracle's, recorded at TP 2 and 4), and a note names the difference. The MTP modules
(``use_mtp``) are not part of the served model. A shared expert (``shared_intermediate_size``) is
refused by name.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from dryboot.errors import InputError
from dryboot.vllm.model_executor.layers.quantization.auto_gptq import wna16_experts_bytes
from dryboot.vllm.model_executor.layers.quantization.fused_moe import scaled_experts_bytes
from dryboot.vllm.model_executor.model_loader import weights as W
from dryboot.vllm.model_executor.models.compose import Family, WalkArgs, moe_decoder_dims

#: the Lamport workspace's tensors in torch's allocator at TP > 1 with P2P (``flag_buf``
#: int32[3], ``layout_buf`` int64[2], the pointer table int64[3 x TP + 2]): one 512-byte block each
#: up to TP 20
LAMPORT_TORCH_BYTES = 3 * W.ALLOC_ROUND
#: its ``cudaMalloc``: three slots of ``compute_comm_size_for_minimax(2048, TP)`` bytes (TP x 16 KiB
#: rounded up to 2 MiB: 2 MiB up to TP 128)
LAMPORT_CUDA_BYTES = 3 * 2 * 2**20


def walk(config: Mapping[str, Any], par: W.Parallel, args: WalkArgs) -> W.RankWeights:
    """One rank of one stage (module docstring).

    :raises InputError: TP above the experts or not dividing heads / sizes, a shared expert,
        checkpoint headers (not mapped)."""
    e = W._int(config, "num_local_experts")
    W.refuse_tp_above_experts(par.tp, e)
    if config.get("shared_intermediate_size"):
        raise InputError("config.json", "shared_intermediate_size", "MiniMax-M2's shared expert is not modelled")
    d = moe_decoder_dims(config, par, args)
    quant, ab, h, hd, tp = d.quant, d.ab, d.h, d.hd, par.tp
    if quant.wna16 is not None:  # GPTQ / AWQ: the layout after loading for the GPU named
        quant = W._on_gpu(quant, par, "minimax_m2")
    nq_r, nkv_r, e_r, i_r, layers = d.nq_r, d.nkv_r, d.e_r, d.i_r, d.layers
    nkv = W._int(config, "num_key_value_heads")
    w = W._Walk(None, par.vllm_version)
    if par.pp_rank == 0:
        w.own("embedding", d.vocab_r * h * ab)
    if par.pp_rank == par.pp - 1:
        w.own("lm_head", d.vocab_r * h * ab)
        w.own("norm", h * ab)
    for li in layers:
        att = f"model.layers.{li}.self_attn"
        split = "column" if nkv >= tp else ""
        entries = [
            *W._linear(quant, f"{att}.qkv_proj", h, (nq_r * hd, nkv_r * hd, nkv_r * hd), ab, tp=tp, split=split),
            *W._linear(quant, f"{att}.o_proj", nq_r * hd, (h,), ab, tp=tp, split="row"),
            ("norm", h * ab),
            ("norm", h * ab),
            ("norm", nq_r * hd * ab),
            ("norm", nkv_r * hd * ab),
            ("router", 4 * e * h),
            *([("router", 4 * e)] if config.get("use_routing_bias") else []),
            *_experts(quant, f"model.layers.{li}.block_sparse_moe.experts", e_r, h, i_r, ab),
        ]
        if quant.method is not None and quant.wna16 is None and quant.scaled is None:
            # Attention's q/k/v/prob scale parameters (BaseKVCacheMethod), as built: weight-only
            # integer layouts build none; fp8 after loading (quant.scaled) has them deleted
            entries += [("scale", ab)] * 4
        for kind, nbytes in entries:
            w.own("attention" if kind == "weight" else kind, nbytes)
        if par.expert_parallel:
            w.own("expert map", 4 * e, buffer=True)
        w.own("attention scales", 16, buffer=True)
        w.ref.allocated_bytes += (w.attention_blocks - W._post_load_host_blocks(quant, w.range_blocks)) * W.ALLOC_ROUND
    if layers:
        rope = {**config, "partial_rotary_factor": W._int(config, "rotary_dim", hd) / hd}
        w.own("rotary", W._rotary_bytes(rope, hd, ab), buffer=True)
    out = w.result()
    if tp > 1 and config.get("use_qk_norm", True):
        out.notes.append(
            "the figure is without P2P between the GPUs (vLLM then warns and falls back); with P2P the q/k norms' "
            f"Lamport workspace adds "
            f"{LAMPORT_TORCH_BYTES:,} B here and {LAMPORT_CUDA_BYTES // 2**20} MiB by cudaMalloc outside torch's "
            "allocator (non-torch memory)"
        )
    return out


def _experts(quant: W.Quant, ex: str, e_r: int, h: int, i_r: int, ab: int) -> list[tuple[str, int]]:
    """The experts of one layer: GPTQ / AWQ / AutoRound experts as vLLM repacks them for the GPU
    (``auto_gptq.wna16_experts_bytes``); plain fp8 on a named GPU as ``Fp8MoEMethod`` leaves them
    after loading (``scaled_experts_bytes``: its experts ``w1`` / ``w3`` / ``w2``); else as created
    (``weights.experts_bytes``)."""
    if quant.wna16 is not None:
        return wna16_experts_bytes(quant.wna16, ex, e_r, h, i_r, ab)
    if quant.method == "fp8" and quant.scaled is not None:
        scheme = quant.scaled.layer_scheme(ex, tuple(f"{ex}.0.{p}" for p in ("w1", "w3", "w2")))
        if scheme is not None:
            return scaled_experts_bytes(quant.scaled, scheme, e_r, h, i_r, ab)
        quant = W.Quant()
    return W.experts_bytes(quant, e_r, h, i_r, ab)


FAMILIES: dict[str, Family] = {"MiniMaxM2ForCausalLM": Family(walk)}
